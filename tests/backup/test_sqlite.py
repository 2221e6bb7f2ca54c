"""SQLite backup and restore (`controller/backup/`): a backup taken while another process
writes without pause is whole and consistent; a restore refuses what is not a driftgate
database at a known revision, and puts a good one in place, keeping the file it replaced."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from controller.backup import service
from controller.errors import ConfigError, Conflict
from controller.orgs import service as org_service
from controller.store import migrate
from controller.store.db import Database
from controller.store.lockfile import acquire_controller_lock
from controller.store.models import Org

pytestmark = pytest.mark.nodb  # SQLite files of their own, whatever the run's backend

# Another process writing to the database without pause: transactions of 10 rows each, with
# consecutive numbers, so a copy that caught part of a transaction, or missed one between
# two it holds, shows as a count that is not a multiple of 10 or a gap in the numbers.
WRITER = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
connection.execute("PRAGMA journal_mode=WAL")
connection.execute("CREATE TABLE IF NOT EXISTS churn (n INTEGER PRIMARY KEY, pad TEXT)")
n = 0
while True:
    connection.execute("BEGIN IMMEDIATE")
    for _ in range(10):
        connection.execute("INSERT INTO churn VALUES (?, ?)", (n, "x" * 200))
        n += 1
    connection.execute("COMMIT")
    if n == 1000:
        print("writing", flush=True)
"""


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path / 'data' / 'driftgate.db'}")
    (tmp_path / "data").mkdir()
    migrate.upgrade(database)
    with database.transaction() as session:
        org_service.create_org(session, "acme", "pro", actor="test")
    yield database
    database.dispose()


def orgs_in(path: Path) -> list[str]:
    database = Database(f"sqlite:///{path}")
    try:
        with database.session() as session:
            return list(session.scalars(select(Org.name).order_by(Org.name)))
    finally:
        database.dispose()


def test_a_backup_taken_while_another_process_writes_is_whole_and_consistent(
    live: Database, tmp_path: Path
) -> None:
    path = migrate_path(live)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
        counts = []
        for i in range(5):
            done = service.backup(live, tmp_path / f"backup-{i}.db")
            assert done.revision == migrate.head_revision() and done.backend == "sqlite"
            with closing(sqlite3.connect(done.path)) as copy:
                assert copy.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
                assert copy.execute("PRAGMA journal_mode").fetchone() == ("delete",)
                count, low, high = copy.execute(
                    "SELECT count(*), min(n), max(n) FROM churn"
                ).fetchone()
            assert count % 10 == 0 and (low, high) == (0, count - 1), (count, low, high)
            counts.append(count)
            assert orgs_in(done.path) == ["acme"]
        assert writer.poll() is None  # it wrote all along, never blocked out
    finally:
        writer.kill()
        writer.wait(timeout=30)
        if writer.stdout is not None:
            writer.stdout.close()
    assert counts == sorted(counts) and counts[-1] > counts[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        *(f"backup-{i}.db" for i in range(5)),
        "data",
    ]  # no partial file left behind


def migrate_path(database: Database) -> Path:
    path = database.engine.url.database
    assert path is not None
    return Path(path)


def test_a_backup_does_not_replace_a_file_unless_told(live: Database, tmp_path: Path) -> None:
    target = tmp_path / "backup.db"
    target.write_text("precious")
    with pytest.raises(ConfigError, match="exists: name another file, or pass --force"):
        service.backup(live, target)
    assert target.read_text() == "precious"
    service.backup(live, target, overwrite=True)
    assert orgs_in(target) == ["acme"]


def test_restore_puts_the_backup_in_place_and_keeps_the_replaced_file(
    live: Database, tmp_path: Path
) -> None:
    backup = service.backup(live, tmp_path / "backup.db").path
    with live.transaction() as session:
        org_service.create_org(session, "later", "free", actor="test")
    done = service.restore(live, backup)
    assert done.revision == done.head and not done.needs_upgrade
    assert done.path == migrate_path(live).resolve()
    assert orgs_in(done.path) == ["acme"]
    assert done.kept is not None and orgs_in(done.kept) == ["acme", "later"]
    # The server's engine opens the restored file as it opens any: WAL, current schema.
    with live.session() as session:
        assert session.scalar(text("PRAGMA journal_mode")) == "wal"
        assert session.scalar(select(func.count()).select_from(Org)) == 1
    assert migrate.current_revision(live) == migrate.head_revision()


def test_restore_of_an_older_backup_says_to_upgrade(tmp_path: Path) -> None:
    old = Database(f"sqlite:///{tmp_path / 'old.db'}")
    migrate.upgrade(old, "0020")
    old.dispose()
    target = Database(f"sqlite:///{tmp_path / 'data' / 'driftgate.db'}")
    done = service.restore(target, tmp_path / "old.db")
    assert (done.revision, done.needs_upgrade, done.kept) == ("0020", True, None)
    assert migrate.upgrade(target) == migrate.head_revision()
    target.dispose()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.write_text("not a database at all, " * 100), "is not a SQLite database"),
        (lambda p: _plain_sqlite(p), "but not driftgate's"),
        (lambda p: _at_revision(p, "9999"), "made by a newer release"),
        (lambda p: _damaged(p), "is damaged|is not a SQLite database|malformed"),
    ],
    ids=["not-sqlite", "not-driftgate", "newer", "damaged"],
)
def test_restore_refuses_a_file_that_is_not_a_good_backup(
    live: Database, tmp_path: Path, make: object, message: str
) -> None:
    bad = tmp_path / "bad.db"
    make(bad)  # type: ignore[operator]
    live.dispose()  # its last connection folds the WAL into the file
    before = migrate_path(live).read_bytes()
    with pytest.raises(ConfigError, match=message):
        service.restore(live, bad)
    assert migrate_path(live).read_bytes() == before
    assert [p.name for p in migrate_path(live).parent.iterdir() if "partial" in p.name] == []


def _plain_sqlite(path: Path) -> None:
    with closing(sqlite3.connect(path)) as connection:
        connection.execute("CREATE TABLE t (x)")


def _at_revision(path: Path, revision: str) -> None:
    database = Database(f"sqlite:///{path}")
    migrate.upgrade(database)
    with database.engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = :r"), {"r": revision})
    database.dispose()


def _damaged(path: Path) -> None:
    _at_revision(path, migrate.head_revision() or "")
    data = bytearray(path.read_bytes())
    # Overwrite the middle pages (table and index b-trees) with garbage, keep the header.
    for at in range(8192, min(len(data), 8192 * 20)):
        data[at] = 0x5A
    path.write_bytes(bytes(data))


def test_restore_refuses_while_another_process_has_the_database_open(
    live: Database, tmp_path: Path
) -> None:
    backup = service.backup(live, tmp_path / "backup.db").path
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            "c.execute('SELECT count(*) FROM orgs').fetchall(); print('open', flush=True); "
            "sys.stdin.readline()",
            str(migrate_path(live)),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout is not None and reader.stdout.readline() == "open\n"
        with pytest.raises(Conflict, match="another process has the database .* open"):
            service.restore(live, backup)
    finally:
        assert reader.stdin is not None
        reader.stdin.close()
        reader.wait(timeout=30)
        if reader.stdout is not None:
            reader.stdout.close()
    assert orgs_in(migrate_path(live)) == ["acme"]
    assert service.restore(live, backup).kept is not None  # once it is closed, it goes


def test_restore_refuses_while_a_controller_holds_the_lock(live: Database, tmp_path: Path) -> None:
    backup = service.backup(live, tmp_path / "backup.db").path
    live.dispose()
    lock = acquire_controller_lock(live.url)
    assert lock is not None
    try:
        with pytest.raises(Conflict, match=r"another controller \(pid \d+\) is running on the"):
            service.restore(live, backup)
    finally:
        lock.release()
