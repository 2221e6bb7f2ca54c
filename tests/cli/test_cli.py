"""The CLI through click's runner: admin commands, exit codes, one-line errors."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient
from sqlalchemy import select

from cli.main import main
from controller import __version__
from controller.orgs.auth_service import create_trial
from controller.store.db import Database
from controller.store.models import ApiKey, AuditEntry, Org
from tests.conftest import SECRET


@pytest.fixture
def run(tmp_path: Path, database: Database):  # type: ignore[no-untyped-def]
    env = {
        "DRIFTGATE_DATABASE_URL": database.url,
        "DRIFTGATE_DATA_DIR": str(tmp_path / "data"),
        "DRIFTGATE_SECRET_KEY": SECRET,
    }

    def invoke(*args: str, extra_env: dict[str, str] | None = None) -> Result:
        return CliRunner().invoke(
            main, list(args), env={**env, **(extra_env or {})}, catch_exceptions=False
        )

    return invoke


def test_version(run) -> None:  # type: ignore[no-untyped-def]
    for args in (("version",), ("--version",)):
        result = run(*args)
        assert result.exit_code == 0 and result.output.strip() == f"driftgate {__version__}"


def test_sources_list_without_sources_says_so(run) -> None:  # type: ignore[no-untyped-def]
    result = run("sources", "list")
    assert result.exit_code == 0
    assert result.stdout.split() == [
        "NAME",
        "ORG",
        "STATE",
        "APPLIED",
        "BRANCH:PATH",
        "LAST",
        "RUN",
    ]
    assert "driftgate: no sources configured: add `sources:` to the config file" in result.stderr
    assert "not a server (no DRIFTGATE_URL;" in result.stderr


def test_org_and_key_lifecycle(run, database: Database, client: FlaskClient) -> None:  # type: ignore[no-untyped-def]
    created = run("orgs", "create", "acme", "--plan", "pro")
    assert created.exit_code == 0, created.output
    assert "created org acme" in created.output
    assert run("orgs", "enable-product", "acme", "replay_cloud").exit_code == 0
    listed = run("orgs", "list")
    assert listed.output.splitlines()[1].split()[:3] == ["acme", "pro", "replay_cloud"]
    # The hosted product's SKU name switches driftgate's product.
    hosted = run("orgs", "enable-product", "acme", "schemasync_repo")
    assert hosted.exit_code == 0 and "draftpr_repo, replay_cloud" in hosted.output, hosted.output

    issued = run("keys", "create", "--org", "acme", "--name", "ci")
    assert issued.exit_code == 0
    key = issued.stdout.strip()
    assert key.startswith("dg_") and "\n" not in key
    assert "shown once" in issued.stderr
    assert client.get("/api/watches", headers={"Authorization": f"Bearer {key}"}).status_code == 200

    keys = run("keys", "list", "--org", "acme")
    assert f"...{key[-4:]}" in keys.output and "active" in keys.output and key not in keys.output
    with database.session() as session:
        key_id = session.scalars(select(ApiKey.id)).one()
    revoked = run("keys", "revoke", key_id)
    assert revoked.exit_code == 0
    assert "revoked" in run("keys", "list", "--org", "acme").output
    assert client.get("/api/watches", headers={"Authorization": f"Bearer {key}"}).status_code == 401

    with database.session() as session:
        actions = list(session.scalars(select(AuditEntry.action).order_by(AuditEntry.id)))
    assert actions == [
        "org.create",
        "org.enable_product",
        "org.enable_product",
        "api_key.create",
        "api_key.revoke",
    ]


def test_plans_and_products(run, database: Database) -> None:  # type: ignore[no-untyped-def]
    run("orgs", "create", "small", "--plan", "free")
    refused = run("orgs", "enable-product", "small", "draftpr_repo")
    assert refused.exit_code == 2
    assert refused.stderr == (
        "driftgate: error: enabling draftpr_repo needs the pro plan or higher; org 'small' is on "
        "the free plan: an operator sets it with `driftgate orgs set-plan small pro`\n"
    )
    assert run("orgs", "set-plan", "small", "team").exit_code == 0
    assert run("orgs", "enable-product", "small", "draftpr_repo").exit_code == 0
    assert run("orgs", "set-plan", "small", "free").exit_code == 0
    with database.session() as session:
        org = session.scalars(select(Org).where(Org.name == "small")).one()
        assert org.plan == "free" and org.products == []


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("orgs", "create", "bad name!"), "invalid org name"),
        (("keys", "create", "--org", "nobody"), "no org named 'nobody'"),
        (("keys", "revoke", "no-such-id"), "no API key with id"),
        (("orgs", "set-plan", "nobody", "pro"), "no org named"),
    ],
)
def test_input_errors_exit_2_with_one_line(run, args: tuple[str, ...], needle: str) -> None:  # type: ignore[no-untyped-def]
    result = run(*args)
    assert result.exit_code == 2
    assert needle in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_an_org_gets_the_servers_default_plan_and_trial_orgs_are_not_hidden(  # type: ignore[no-untyped-def]
    run, database: Database
) -> None:
    # Without --plan: the server's default plan, enterprise unless the operator chose another.
    assert "on plan enterprise" in run("orgs", "create", "acme").output
    chosen = run("orgs", "create", "lab", extra_env={"DRIFTGATE_DEFAULT_PLAN": "team"})
    assert "on plan team" in chosen.output
    assert "on plan free" in run("orgs", "create", "tiny", "--plan", "free").output
    refused = run("orgs", "create", "x", extra_env={"DRIFTGATE_DEFAULT_PLAN": "platinum"})
    assert refused.exit_code == 2 and "DRIFTGATE_DEFAULT_PLAN" in refused.stderr
    with database.session() as session:
        plans = {name: plan for name, plan in session.execute(select(Org.name, Org.plan))}
    assert plans == {"acme": "enterprise", "lab": "team", "tiny": "free"}

    # Trial sessions' sandbox orgs (where trials are switched on) are counted, then listed.
    with database.transaction() as session:
        trials = [create_trial(session, datetime.now(UTC), 30)[0].org.name for _ in range(2)]
    listed = run("orgs", "list")
    assert [line.split()[0] for line in listed.stdout.splitlines()] == [
        "NAME",
        "acme",
        "lab",
        "tiny",
    ]
    assert listed.stderr == (
        "(2 trial orgs of trial sessions not listed: driftgate orgs list --trials)\n"
    )
    everything = run("orgs", "list", "--trials")
    header, *rows = [line.split() for line in everything.stdout.splitlines()]
    assert header == ["NAME", "PLAN", "PRODUCTS", "ID", "KIND"]
    assert [row[0] for row in rows] == ["acme", "lab", "tiny", *sorted(trials)]
    assert [row[-1] for row in rows] == ["org", "org", "org", "trial", "trial"]
    assert rows[3][1] == "free" and everything.stderr == ""


def test_duplicate_org_exits_2(run) -> None:  # type: ignore[no-untyped-def]
    run("orgs", "create", "twice")
    result = run("orgs", "create", "twice")
    assert result.exit_code == 2 and "already exists" in result.stderr


def test_usage_errors_exit_2(run) -> None:  # type: ignore[no-untyped-def]
    assert run("orgs", "create", "x", "--plan", "platinum").exit_code == 2
    assert run("no-such-command").exit_code == 2


def test_bad_settings_exit_2(run) -> None:  # type: ignore[no-untyped-def]
    result = run("orgs", "list", extra_env={"DRIFTGATE_WORKERS": "lots"})
    assert result.exit_code == 2
    assert "DRIFTGATE_WORKERS" in result.stderr


def test_unmigrated_database_is_explained(tmp_path: Path) -> None:
    env = {
        "DRIFTGATE_DATABASE_URL": f"sqlite:///{tmp_path / 'fresh.db'}",
        "DRIFTGATE_SECRET_KEY": SECRET,
    }
    result = CliRunner().invoke(main, ["orgs", "list"], env=env)
    assert result.exit_code == 2
    assert "run `driftgate db upgrade` first" in result.stderr
    upgraded = CliRunner().invoke(main, ["db", "upgrade"], env=env)
    assert upgraded.exit_code == 0 and "database at revision" in upgraded.output
    current = CliRunner().invoke(main, ["db", "current"], env=env)
    revision = current.output.split()[1].rstrip(",")
    assert current.output.strip() == f"current {revision}, head {revision}"
    assert CliRunner().invoke(main, ["orgs", "list"], env=env).exit_code == 0


def test_unreachable_database_is_one_line(tmp_path: Path) -> None:
    env = {
        "DRIFTGATE_DATABASE_URL": "postgresql+psycopg://nobody@127.0.0.1:1/none",
        "DRIFTGATE_SECRET_KEY": SECRET,
    }
    result = CliRunner().invoke(main, ["db", "upgrade"], env=env)
    assert result.exit_code == 2
    assert result.stderr.startswith("driftgate: error: database error:")
    assert len(result.stderr.strip().splitlines()) == 1


def test_secrets_rotate(run, client: FlaskClient) -> None:  # type: ignore[no-untyped-def]
    run("orgs", "create", "rot", "--plan", "pro")
    key = run("keys", "create", "--org", "rot").stdout.strip()
    client.post(
        "/api/watches",
        json={"name": "a", "url": "https://x.example/openapi.json", "headers": {"X-Key": "v"}},
        headers={"Authorization": f"Bearer {key}"},
    )
    result = run(
        "secrets",
        "rotate",
        extra_env={"DRIFTGATE_SECRET_KEY": f"a new primary key 123456,{SECRET}"},
    )
    assert result.exit_code == 0 and "re-encrypted 1 secrets" in result.output
