"""One controller per SQLite file: the lock next to the database, in-process.

The same lock between real processes (`kill -9` releases it) is in tests/cli/test_supervision.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from controller.crypto import load_secret_box
from controller.errors import Conflict
from controller.scheduler import Controller
from controller.settings import Settings
from controller.store.db import Database
from controller.store.lockfile import acquire_controller_lock, sqlite_file
from tests.conftest import ON_POSTGRES


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:////srv/driftgate/driftgate.db", Path("/srv/driftgate/driftgate.db")),
        ("sqlite+pysqlite:////srv/driftgate/driftgate.db", Path("/srv/driftgate/driftgate.db")),
        ("sqlite:///relative.db", Path("relative.db").resolve()),
        ("sqlite:///file:/srv/d.db?mode=ro&uri=true", Path("/srv/d.db")),
        ("sqlite://", None),
        ("sqlite:///:memory:", None),
        ("sqlite:///file:shared?mode=memory&cache=shared&uri=true", None),
        ("postgresql+psycopg://postgres@127.0.0.1:5432/driftgate", None),
    ],
)
def test_which_stores_take_the_lock(url: str, expected: Path | None) -> None:
    assert sqlite_file(url) == expected


def test_a_second_holder_is_refused_with_the_file_and_the_pid(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'driftgate.db'}"
    first = acquire_controller_lock(url)
    assert first is not None and first.path == tmp_path / "driftgate.db.controller.lock"
    assert first.path.read_text() == f"{os.getpid()}\n"
    with pytest.raises(Conflict) as refused:
        acquire_controller_lock(url)
    assert refused.value.code == "controller_running"
    assert f"(pid {os.getpid()})" in refused.value.message
    assert str(tmp_path / "driftgate.db") in refused.value.message
    first.release()
    again = acquire_controller_lock(url)
    assert again is not None
    again.release()


def test_postgres_and_memory_take_no_lock(tmp_path: Path) -> None:
    assert acquire_controller_lock("sqlite://") is None
    assert acquire_controller_lock("postgresql+psycopg://postgres@127.0.0.1:5432/x") is None
    assert list(tmp_path.iterdir()) == []


def test_controllers_on_one_store(database: Database, settings: Settings) -> None:
    """SQLite: the second controller's start is refused. Postgres: both run."""
    box = load_secret_box(settings, create=True)
    first = Controller(settings, database, box, concurrency=1, tick_seconds=60)
    second = Controller(settings, database, box, concurrency=1, tick_seconds=60)
    first.start()
    try:
        if ON_POSTGRES:
            second.start()
            stop(second)
        else:
            with pytest.raises(Conflict, match="another controller"):
                second.start()
            second.client.close()
    finally:
        stop(first)
    # A stopped controller gives the file back.
    third = Controller(settings, database, box, concurrency=1, tick_seconds=60)
    third.start()
    stop(third)


def stop(controller: Controller) -> None:
    # The first round starts with the controller: let it finish, so that no connection is
    # still in use when the fixture disposes of the database.
    controller.scheduler.shutdown(wait=True)
    controller.stop(grace=1)
