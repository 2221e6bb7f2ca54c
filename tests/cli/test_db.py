"""`driftgate db backup` and `db restore` as an operator runs them: a round trip on SQLite
through the CLI, refusals in one line with exit 2, and no restore under a running server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner, Result

from cli.main import main
from controller.store import migrate
from tests.conftest import SECRET
from tests.processes import (
    DRIFTGATE,
    driftgate_env,
    free_port,
    spawn,
    stop_process,
    wait_until,
    wait_until_healthy,
)

pytestmark = pytest.mark.nodb  # a SQLite file of its own, whatever the run's backend


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "DRIFTGATE_DATABASE_URL": f"sqlite:///{tmp_path / 'data' / 'driftgate.db'}",
        "DRIFTGATE_DATA_DIR": str(tmp_path / "data"),
        "DRIFTGATE_SECRET_KEY": SECRET,
        "DRIFTGATE_CONFIG": "",
    }


def run(env: dict[str, str], *args: str, code: int = 0) -> Result:
    result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
    assert result.exit_code == code, (args, result.output, result.stderr)
    return result


def org_names(env: dict[str, str]) -> list[str]:
    listed = run(env, "orgs", "list").stdout.splitlines()[1:]
    return [line.split()[0] for line in listed]


def test_backup_and_restore_round_trip(env: dict[str, str], tmp_path: Path) -> None:
    run(env, "db", "upgrade")
    run(env, "orgs", "create", "acme", "--plan", "pro")
    backup = tmp_path / "backups" / "driftgate-1.db"
    made = run(env, "db", "backup", str(backup))
    head = migrate.head_revision()
    assert made.stdout.startswith(f"backed the sqlite store up to {backup} at revision {head} (")
    assert made.stderr == (
        "driftgate: the secret key (DRIFTGATE_SECRET_KEY, or secret.key in the data directory) "
        "is not in the backup: keep a copy of it apart, or stored secrets cannot be read\n"
    )
    again = run(env, "db", "backup", str(backup), code=2)
    assert again.stderr == (
        f"driftgate: error: {backup} exists: name another file, or pass --force to replace it\n"
    )

    run(env, "orgs", "create", "later")
    assert org_names(env) == ["acme", "later"]
    restored = run(env, "db", "restore", str(backup)).stdout.splitlines()
    live = tmp_path / "data" / "driftgate.db"
    assert restored[0] == f"restored {backup} to {live} (revision {head})"
    assert restored[1].startswith(f"the database it replaced is kept as {live}.before-restore-")
    assert len(restored) == 2  # current: nothing to upgrade
    assert org_names(env) == ["acme"]


def test_restoring_an_older_backup_says_to_upgrade(env: dict[str, str], tmp_path: Path) -> None:
    old = {**env, "DRIFTGATE_DATABASE_URL": f"sqlite:///{tmp_path / 'old.db'}"}
    run(old, "db", "upgrade", "--revision", "0019")
    said = run(env, "db", "restore", str(tmp_path / "old.db")).stdout.splitlines()
    head = migrate.head_revision()
    assert said[-1] == f"it is older than this release ({head}): run `driftgate db upgrade`"
    refused = run(env, "orgs", "list", code=2)
    assert "run `driftgate db upgrade` first" in refused.stderr
    run(env, "db", "upgrade")
    assert org_names(env) == []


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "is not a driftgate database|is not a SQLite database|but not driftgate's"),
        (b"hello " * 1000, "is not a SQLite database"),
    ],
    ids=["empty", "text"],
)
def test_a_bad_file_is_refused_in_one_line(
    env: dict[str, str], tmp_path: Path, content: bytes, reason: str
) -> None:
    import re

    run(env, "db", "upgrade")
    bad = tmp_path / "bad.db"
    bad.write_bytes(content)
    refused = run(env, "db", "restore", str(bad), code=2)
    assert refused.stderr.startswith("driftgate: error: ") and re.search(reason, refused.stderr)
    assert len(refused.stderr.splitlines()) == 1
    missing = run(env, "db", "restore", str(tmp_path / "nothing.db"), code=2)
    assert "does not exist" in missing.stderr


@pytest.fixture
def running(request: pytest.FixtureRequest, env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    """`driftgate up` or `driftgate serve` on the test's SQLite file, ready."""
    run(env, "db", "upgrade")
    port = free_port()
    log_path = tmp_path / "server.log"
    environment = driftgate_env(env["DRIFTGATE_DATABASE_URL"], tmp_path, workers="1")
    with log_path.open("w") as log:
        process = spawn(
            [*DRIFTGATE, request.param, "--port", str(port)],
            env=environment,
            stdout=log,
            stderr=log,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(base, process, log_path)

        # Readiness pings the database: the worker now holds a pooled connection to it; and
        # under `up`, it says when the controller (which holds the lock) beats.
        def ready() -> bool:
            answer = httpx.get(f"{base}/health/ready", timeout=10)
            alive = answer.json()["controller"]["state"] == "alive"
            return answer.status_code == 200 and (alive or request.param != "up")

        wait_until(ready)
        yield request.param
    finally:
        stop_process(process)


@pytest.mark.slow
@pytest.mark.parametrize("running", ["up", "serve"], indirect=True)
def test_no_restore_under_a_running_server(
    running: str, env: dict[str, str], tmp_path: Path
) -> None:
    backup = tmp_path / "backup.db"
    run(env, "db", "backup", str(backup))  # online: the server keeps serving
    refused = run(env, "db", "restore", str(backup), code=2)
    if running == "up":  # its controller holds the one-controller lock
        assert "another controller (pid " in refused.stderr
    else:  # no lock, but its worker has the file open
        assert "another process has the database " in refused.stderr
    assert refused.stderr.endswith(": stop every driftgate process on it first, then restore\n")
    assert not any(p.name.startswith("driftgate.db.before") for p in (tmp_path / "data").iterdir())


def _ahead(env: dict[str, str]) -> None:
    """The store as a newer release leaves it: a revision this one does not know."""
    from sqlalchemy import create_engine, text

    engine = create_engine(env["DRIFTGATE_DATABASE_URL"])
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()


def test_admin_commands_on_a_newer_schema_name_the_newer_release(env: dict[str, str]) -> None:
    run(env, "db", "upgrade")
    _ahead(env)
    refused = run(env, "orgs", "list", code=2)
    head = migrate.head_revision()
    assert refused.stderr == (
        f"driftgate: error: the database schema is at revision 9999, newer than this "
        f"release's {head}: a newer driftgate migrated it; use that release's driftgate\n"
    )


@pytest.mark.slow
def test_a_controller_of_the_previous_release_keeps_running_on_a_newer_schema(
    env: dict[str, str], tmp_path: Path
) -> None:
    """During a rolling upgrade the migration runs first; a controller of the release before
    it that restarts then must start (it refused: "run `driftgate db upgrade`", which its
    release cannot do), and says so in its log."""
    from sqlalchemy import create_engine, func, select

    from controller.store.models import ControllerHeartbeat

    run(env, "db", "upgrade")
    _ahead(env)
    log_path = tmp_path / "controller.log"
    environment = driftgate_env(env["DRIFTGATE_DATABASE_URL"], tmp_path)
    with log_path.open("w") as log:
        process = spawn(
            [*DRIFTGATE, "controller", "--tick", "0.2"], env=environment, stdout=log, stderr=log
        )
    engine = create_engine(env["DRIFTGATE_DATABASE_URL"])
    try:

        def beating() -> bool:
            assert process.poll() is None, log_path.read_text()
            with engine.connect() as connection:
                return bool(
                    connection.scalar(select(func.count()).select_from(ControllerHeartbeat))
                )

        wait_until(beating)
    finally:
        stop_process(process)
        engine.dispose()
    assert '"event": "store.schema_ahead"' in log_path.read_text()


def test_current_check_waits_only_while_the_store_is_behind(env: dict[str, str]) -> None:
    """`db current --check`, what the Kubernetes pods wait on: 1 before the migration, 0 at
    this release's head and on a store a newer release migrated (a rolling upgrade)."""
    head = migrate.head_revision()
    assert run(env, "db", "current", "--check", code=1).stdout == f"current none, head {head}\n"
    run(env, "db", "upgrade")
    run(env, "db", "current", "--check")
    _ahead(env)
    assert run(env, "db", "current", "--check").stdout == f"current 9999, head {head}\n"
