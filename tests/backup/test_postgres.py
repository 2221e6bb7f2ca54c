"""Postgres backup (`driftgate db backup` runs `pg_dump --format=custom`) and the documented
restore procedure (`pg_restore` into a new, empty database), on scratch databases of the
test's Postgres server; `db restore` refuses to improvise it."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, select, text
from sqlalchemy.engine import make_url

from cli.main import main
from controller.backup.postgres import libpq_target
from controller.orgs import service as org_service
from controller.store import migrate
from controller.store.db import Database
from controller.store.models import Org
from tests.conftest import ON_POSTGRES, SECRET, TEST_DB_URL

pytestmark = pytest.mark.skipif(
    not ON_POSTGRES or shutil.which("pg_dump") is None or shutil.which("pg_restore") is None,
    reason="needs DRIFTGATE_TEST_DATABASE_URL on Postgres and its client tools",
)


@pytest.fixture
def scratch() -> Iterator[list[str]]:
    """The scratch databases `new_database` made on the test server; dropped after the test."""
    admin = create_engine(TEST_DB_URL, isolation_level="AUTOCOMMIT")
    urls: list[str] = []
    yield urls
    with admin.connect() as connection:
        for url in urls:
            name = make_url(url).database
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def new_database(urls: list[str]) -> str:
    admin = create_engine(TEST_DB_URL, isolation_level="AUTOCOMMIT")
    name = f"driftgate_backup_{uuid.uuid4().hex[:8]}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    url = make_url(TEST_DB_URL).set(database=name).render_as_string(hide_password=False)
    urls.append(url)
    return url


def env_of(url: str, tmp_path: Path) -> dict[str, str]:
    return {
        "DRIFTGATE_DATABASE_URL": url,
        "DRIFTGATE_DATA_DIR": str(tmp_path / "data"),
        "DRIFTGATE_SECRET_KEY": SECRET,
        "DRIFTGATE_CONFIG": "",
    }


def test_backup_with_pg_dump_and_the_documented_restore(scratch: list[str], tmp_path: Path) -> None:
    source_url = new_database(scratch)
    source = Database(source_url)
    migrate.upgrade(source)
    with source.transaction() as session:
        org_service.create_org(session, "acme", "pro", actor="test")
    source.dispose()

    dump = tmp_path / "driftgate.dump"
    backed = CliRunner().invoke(main, ["db", "backup", str(dump)], env=env_of(source_url, tmp_path))
    assert backed.exit_code == 0, (backed.output, backed.stderr)
    assert backed.stdout.startswith(f"backed the postgresql store up to {dump} (")
    assert "the secret key" in backed.stderr
    listed = subprocess.run(
        ["pg_restore", "--list", str(dump)], capture_output=True, text=True, check=True
    )
    assert "TABLE DATA public alembic_version" in listed.stdout

    # docs/operations.md: restore into a new, empty database, then point driftgate at it.
    target_url = new_database(scratch)
    uri, password = libpq_target(target_url)
    subprocess.run(
        ["pg_restore", "--no-owner", "--exit-on-error", f"--dbname={uri}", str(dump)],
        env={**password, "PATH": "/usr/bin:/bin"},
        check=True,
    )
    target = Database(target_url)
    try:
        assert migrate.current_revision(target) == migrate.head_revision()
        with target.session() as session:
            assert list(session.scalars(select(Org.name))) == ["acme"]
    finally:
        target.dispose()
    current = CliRunner().invoke(main, ["db", "current"], env=env_of(target_url, tmp_path))
    assert (
        current.stdout.strip()
        == f"current {migrate.head_revision()}, head {migrate.head_revision()}"
    )


def test_restore_on_postgres_points_at_the_procedure(scratch: list[str], tmp_path: Path) -> None:
    url = new_database(scratch)
    dump = tmp_path / "any.dump"
    dump.write_bytes(b"PGDMP")
    refused = CliRunner().invoke(main, ["db", "restore", str(dump)], env=env_of(url, tmp_path))
    assert refused.exit_code == 2
    assert refused.stderr.startswith(
        "driftgate: error: a Postgres store is restored with pg_restore"
    )
    assert 'docs/operations.md, "Backup, restore and upgrades"' in refused.stderr


def test_without_pg_dump_the_backup_is_refused_with_the_way_to_do_it(
    scratch: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = new_database(scratch)
    monkeypatch.setenv("PATH", str(tmp_path))  # no pg_dump there
    refused = CliRunner().invoke(
        main, ["db", "backup", str(tmp_path / "x.dump")], env=env_of(url, tmp_path)
    )
    assert refused.exit_code == 2
    assert "pg_dump is not on PATH" in refused.stderr
    assert not (tmp_path / "x.dump").exists()
