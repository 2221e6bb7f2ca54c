"""Shared fixtures: settings from a dict, a migrated database per test, the app, and orgs with keys.

The suite runs on SQLite by default. With `DRIFTGATE_TEST_DATABASE_URL` set to a Postgres
URL (CI sets `postgresql+psycopg://postgres@127.0.0.1:5432/test`) it creates a private
database next to it, migrates it once, and truncates every table between tests.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from controller.crypto import load_secret_box
from controller.gitsources.reconcile import Reconciler
from controller.orgs import auth_service
from controller.orgs import service as org_service
from controller.scheduler import Controller
from controller.settings import Settings, load_settings
from controller.store import migrate
from controller.store.db import Database
from controller.store.models import Base
from tests.dbproxy import DatabaseProxy, database_proxy
from tests.gitrepos import RepoBuilder, isolated_git_config
from tests.leaks import LeakCheck
from tests.servers import SpecServer, spec_server

if TYPE_CHECKING:
    from tests.factories import Make

TEST_DB_URL = os.environ.get("DRIFTGATE_TEST_DATABASE_URL", "")
ON_POSTGRES = TEST_DB_URL.startswith("postgresql")
SECRET = "test-secret-key-for-driftgate-tests"

# Which tests run in which of CI's two runs (.ci/run). A test depends on the database backend
# (marker `db`, added here) when its fixtures reach one of DATABASE_FIXTURES, or when its
# module reads which backend runs (it imports ON_POSTGRES or TEST_DB_URL); a module whose
# tests reach the backend some other way says so with `pytestmark = pytest.mark.db`, and one
# whose database is incidental (the same statements on either backend) may say
# `pytestmark = pytest.mark.nodb` to run once. Every other test (the diff engines, the
# corpora, lint, processes on their own SQLite file) does the same on either backend. CI runs
# the whole suite on SQLite first, in a fresh clone without ../shared, writing the ids of the
# tests that passed (`--record-passed=FILE`); the Postgres run beside ../shared then leaves
# out the tests without `db` that passed there (`--skip-passed=FILE`; give both with `=`, or
# pytest takes FILE for a path to test). What it runs: every `db` test, and every other test
# that did not pass without ../shared (it skipped, naming it, or is only collected beside
# it). So no test is left out of both runs, and none runs twice for nothing. Without these
# options every test runs.
DATABASE_FIXTURES = frozenset({"database", "_template_database"})
BACKEND_NAMES = ("ON_POSTGRES", "TEST_DB_URL")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("driftgate")
    group.addoption(
        "--record-passed",
        metavar="FILE",
        help="write the ids of the tests that passed to FILE, one a line",
    )
    group.addoption(
        "--skip-passed",
        metavar="FILE",
        help="leave out the tests that do not depend on the database backend (no `db` marker) "
        "and are listed in FILE (written by --record-passed in a run on another backend)",
    )


def pytest_configure(config: pytest.Config) -> None:
    # The run fails if a process the tests started is still running at its end (tests/leaks.py).
    config.pluginmanager.register(LeakCheck(config), "driftgate-leak-check")
    path = config.getoption("record_passed")
    # Under xdist the controller sees every worker's reports: it alone writes the file.
    if path and not hasattr(config, "workerinput"):
        config.pluginmanager.register(PassedRecorder(Path(path)), "driftgate-record-passed")


# Workers per core for `-n auto` (the Makefile's default; `make pytest PYTEST_WORKERS=N`
# chooses). Much of the suite's time is spent waiting: on a `driftgate up` starting, a
# loopback server answering, a controller's check. Two workers a core fill those waits with
# another test's work (docs/performance.md has the figures).
WORKERS_PER_CORE = 2


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    return WORKERS_PER_CORE * len(os.sched_getaffinity(0))


def depends_on_backend(item: pytest.Item) -> bool:
    """Whether `item` may behave differently on SQLite and on Postgres."""
    if item.get_closest_marker("db") is not None:
        return True
    if item.get_closest_marker("nodb") is not None:
        return False
    if DATABASE_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return True
    module = getattr(item, "module", None)
    return any(hasattr(module, name) for name in BACKEND_NAMES)


@pytest.hookimpl(tryfirst=True)  # before `-m` selects: `-m db` and `-m "not db"` work
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("db") is None and depends_on_backend(item):
            item.add_marker(pytest.mark.db)
    path = config.getoption("skip_passed")
    if not path:
        return
    passed = set(Path(path).read_text(encoding="utf-8").splitlines())
    done = [i for i in items if i.nodeid in passed and i.get_closest_marker("db") is None]
    if done:
        config.hook.pytest_deselected(items=done)
        left = set(done)
        items[:] = [i for i in items if i not in left]


class PassedRecorder:
    """Collects the ids of the tests that passed (every phase; no skip, no xfail) and writes
    them at the end of the session."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.passed: set[str] = set()
        self.spoiled: set[str] = set()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # A skip spoils too: ids are not always unique (Schemathesis gives one per operation).
        if report.failed or report.skipped or hasattr(report, "wasxfail"):
            self.spoiled.add(report.nodeid)
        elif report.when == "call" and report.passed:
            self.passed.add(report.nodeid)

    def pytest_sessionfinish(self) -> None:
        ids = sorted(self.passed - self.spoiled)
        self.path.write_text("".join(f"{nodeid}\n" for nodeid in ids), encoding="utf-8")


def make_settings(tmp_path: Path, **values: Any) -> Settings:
    env = {"DRIFTGATE_DATA_DIR": str(tmp_path / "data"), "DRIFTGATE_SECRET_KEY": SECRET}
    return load_settings(env=env, **values)


@pytest.fixture(scope="session", autouse=True)
def _cheap_password_hashes() -> Iterator[None]:
    """argon2id with its cheapest parameters in the test process: the defaults cost about a
    quarter of a second of CPU per hash or sign-in, and the console's tests sign in hundreds
    of times. The code under test is the same (a hash records its parameters; a server
    started as a process keeps the defaults and re-hashes at the next sign-in)."""
    from argon2 import PasswordHasher, profiles

    from controller.accounts import passwords

    cheap = PasswordHasher.from_parameters(profiles.CHEAPEST)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(passwords, "_hasher", lambda: cheap)
        yield


@pytest.fixture(scope="session")
def _template_database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A migrated database shared by the session: a SQLite file to copy, or a Postgres database."""
    if ON_POSTGRES:
        admin = create_engine(TEST_DB_URL, isolation_level="AUTOCOMMIT")
        name = f"driftgate_test_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        url = make_url(TEST_DB_URL).set(database=name).render_as_string(hide_password=False)
        database = Database(url)
        migrate.upgrade(database)
        database.dispose()
        yield url
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    else:
        path = tmp_path_factory.mktemp("template") / "template.db"
        database = Database(f"sqlite:///{path}")
        migrate.upgrade(database)
        database.dispose()
        yield str(path)


@pytest.fixture
def database(_template_database: str, tmp_path: Path) -> Iterator[Database]:
    """A migrated, empty database for one test."""
    if ON_POSTGRES:
        database = Database(_template_database)
    else:
        database = Database(f"sqlite:///{tmp_path / 'driftgate.db'}")
    empty_database(database, _template_database)
    yield database
    database.dispose()


def empty_database(database: Database, template: str) -> None:
    """Make `database` migrated and empty again: truncate every table (Postgres), or put a copy
    of the migrated template file in place of the SQLite file (no connection may be in use)."""
    if ON_POSTGRES:
        tables = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
        with database.engine.begin() as conn:
            conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
        return
    database.dispose()
    path = make_url(database.url).database
    assert path is not None
    for leftover in (f"{path}-wal", f"{path}-shm"):
        Path(leftover).unlink(missing_ok=True)
    shutil.copyfile(template, path)


# The hosted product's anonymous routes, off on a self-hosted server by default: a test of
# them says `@pytest.mark.hosted_routes`, and the `settings` (and `live_settings`) of its
# app switch them on.
HOSTED_ROUTES = {
    "trial_sessions_enabled": True,
    "funnel_events_enabled": True,
    "coverage_preview_enabled": True,
}


def hosted_routes(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The settings that switch the hosted routes on, when the test is marked for them."""
    return HOSTED_ROUTES if request.node.get_closest_marker("hosted_routes") else {}


@pytest.fixture
def settings(request: pytest.FixtureRequest, tmp_path: Path, database: Database) -> Settings:
    return make_settings(tmp_path, database_url=database.url, **hosted_routes(request))


@pytest.fixture
def app(settings: Settings, database: Database) -> Flask:
    from web.app import create_app

    return create_app(settings, database=database)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@dataclass
class OrgKey:
    org_id: str
    org_name: str
    key: str
    key_id: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


@pytest.fixture
def make_org(database: Database) -> Callable[..., OrgKey]:
    """Create an org (plan, products) with one API key, straight through the services."""

    def make(name: str | None = None, plan: str = "pro", products: tuple[str, ...] = ()) -> OrgKey:
        with database.transaction() as session:
            org = org_service.create_org(
                session, name or f"org-{uuid.uuid4().hex[:8]}", plan, actor="test"
            )
            for product in products:
                org_service.set_product(session, org, product, True, actor="test")
            issued = auth_service.create_api_key(session, org, "test", actor="test")
            return OrgKey(org.id, org.name, issued.secret, issued.key.id)

    return make


@pytest.fixture
def acme(make_org: Callable[..., OrgKey]) -> OrgKey:
    return make_org("acme", "pro")


# A real controller in-process beside the app, checking specs on a loopback server.


@pytest.fixture
def server() -> Iterator[SpecServer]:
    with spec_server() as running:
        yield running


@pytest.fixture
def proxy(database: Database) -> Iterator[DatabaseProxy]:
    """A TCP proxy in front of the test's Postgres database, to cut and restore it."""
    url = make_url(database.url)
    with database_proxy((url.host or "127.0.0.1", url.port or 5432)) as running:
        yield running


@pytest.fixture
def live_settings(request: pytest.FixtureRequest, tmp_path: Path, database: Database) -> Settings:
    return make_settings(
        tmp_path, database_url=database.url, allow_private_targets=True, **hosted_routes(request)
    )


@pytest.fixture
def live_app(live_settings: Settings, database: Database) -> Flask:
    from web.app import create_app

    return create_app(live_settings, database=database)


@pytest.fixture
def controller(live_settings: Settings, database: Database) -> Iterator[Controller]:
    running = Controller(
        live_settings, database, load_secret_box(live_settings), concurrency=2, tick_seconds=0.2
    )
    running.start()
    yield running
    running.stop(grace=5)


# Reconcile fixtures (tests/gitsources/test_reconcile.py, tests/web/test_templates.py).


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[RepoBuilder]:
    with isolated_git_config(tmp_path / "gitconfig"):
        yield RepoBuilder(tmp_path / "remote.git")


@pytest.fixture
def make_reconciler(tmp_path: Path, database: Database) -> Make:
    def make(
        *sources: dict[str, Any], env: dict[str, str] | None = None, **extra: Any
    ) -> tuple[Reconciler, Settings]:
        settings = make_settings(
            tmp_path, database_url=database.url, sources=list(sources), **extra
        )
        from tests.factories import ENV  # factories imports this module

        box = load_secret_box(settings, create=True)
        return Reconciler(settings, database, box, env=ENV if env is None else env), settings

    return make
