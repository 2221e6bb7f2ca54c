"""`driftgate sources list` and `sources status` (issue 34, point 12): asked of the server with
an org key when DRIFTGATE_URL is set, the way the other remote commands are; read from the
config file and the store here otherwise, and said so on stderr."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from cli.main import main
from controller.settings import Settings
from controller.store.db import Database
from tests.conftest import SECRET, OrgKey
from tests.factories import FILES, Make, run
from tests.gitrepos import RepoBuilder
from tests.servers import WsgiServer, serving


@pytest.fixture
def fleet(repo: RepoBuilder, make_reconciler: Make, acme: OrgKey) -> tuple[Settings, str]:
    """The source `fleet` of org acme, reconciled once."""
    sha = repo.commit(FILES)
    reconciler, settings = make_reconciler(
        {"name": "fleet", "org": "acme", "url": repo.url, "branch": "main"}
    )
    assert run(reconciler, settings).result == "applied"
    return settings, sha


@pytest.fixture
def api_server(
    fleet: tuple[Settings, str], database: Database, monkeypatch: pytest.MonkeyPatch
) -> Iterator[WsgiServer]:
    from web.app import create_app

    app = create_app(fleet[0], database=database)  # it sets up logging: then quiet it
    monkeypatch.setattr(logging.getLogger("driftgate"), "handlers", [logging.NullHandler()])
    with serving(app) as running:
        yield running


def cli(env: dict[str, str | None], *args: str) -> Result:
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def test_sources_are_asked_of_the_server(
    api_server: WsgiServer,
    fleet: tuple[Settings, str],
    acme: OrgKey,
    make_org: Callable[..., OrgKey],
) -> None:
    sha = fleet[1]
    env: dict[str, str | None] = {
        "DRIFTGATE_URL": api_server.url,
        "DRIFTGATE_API_KEY": acme.key,
        "DRIFTGATE_CONFIG": None,
        "DRIFTGATE_DATABASE_URL": "sqlite:////nonexistent/never-opened.db",
    }
    listed = cli(env, "sources", "list")
    assert listed.exit_code == 0, listed.stderr
    assert listed.stderr == ""
    header, row = listed.output.splitlines()
    assert header.split() == ["NAME", "STATE", "APPLIED", "BRANCH:PATH", "LAST", "RUN"]
    assert row.split()[:5] == ["fleet", "Succeeded", sha[:12], "main:.driftgate", "applied"]
    document = json.loads(cli(env, "sources", "list", "--format", "json").stdout)
    assert [s["lastAppliedRevision"] for s in document["sources"]] == [sha]
    status = json.loads(cli(env, "sources", "status", "fleet").output)
    assert status["name"] == "fleet" and status["lastAppliedRevision"] == sha

    other = make_org("other")
    theirs = cli({**env, "DRIFTGATE_API_KEY": other.key}, "sources", "list")
    assert theirs.output.splitlines() == ["NAME  STATE  APPLIED  BRANCH:PATH  LAST RUN"]
    refused = cli({**env, "DRIFTGATE_API_KEY": other.key}, "sources", "status", "fleet")
    assert refused.exit_code == 2 and "(HTTP 404, not_found)" in refused.stderr
    no_key = cli({**env, "DRIFTGATE_API_KEY": None}, "sources", "list")
    assert (no_key.exit_code, no_key.stderr) == (
        2,
        "driftgate: error: no API key: set DRIFTGATE_API_KEY (or pass --api-key)\n",
    )


def test_without_a_server_the_local_file_is_read_and_said(
    fleet: tuple[Settings, str], database: Database, tmp_path: Path
) -> None:
    settings, sha = fleet
    config = tmp_path / "driftgate.yaml"
    source = settings.sources[0]
    config.write_text(
        yaml.safe_dump(
            {
                "database_url": database.url,
                "sources": [{"name": "fleet", "org": "acme", "url": source.url}],
            }
        )
    )
    env: dict[str, str | None] = {
        "DRIFTGATE_URL": None,
        "DRIFTGATE_API_KEY": None,
        "DRIFTGATE_CONFIG": str(config),
        "DRIFTGATE_DATA_DIR": str(tmp_path / "data"),
        "DRIFTGATE_SECRET_KEY": SECRET,
    }
    listed = cli(env, "sources", "list")
    assert listed.exit_code == 0, listed.stderr
    header, row = listed.stdout.splitlines()
    assert header.split() == ["NAME", "ORG", "STATE", "APPLIED", "BRANCH:PATH", "LAST", "RUN"]
    assert row.split()[:6] == ["fleet", "acme", "Succeeded", sha[:12], "main:.driftgate", "applied"]
    assert listed.stderr == (
        f"driftgate: reading the config file {config} and the store here, not a server (no "
        "DRIFTGATE_URL; set DRIFTGATE_URL and DRIFTGATE_API_KEY to ask one)\n"
    )
    document = json.loads(cli(env, "sources", "list", "--format", "json").stdout)
    assert [s["lastAppliedRevision"] for s in document["sources"]] == [sha]

    forced = cli(
        {**env, "DRIFTGATE_URL": "http://127.0.0.1:9"}, "sources", "status", "fleet", "--local"
    )
    assert forced.exit_code == 0, forced.stderr
    assert json.loads(forced.stdout)["lastAppliedRevision"] == sha
    assert "not a server (--local;" in forced.stderr
