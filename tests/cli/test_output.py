"""What the CLI prints (issue 43, point 7): a reader that goes away early (`| head -1`) ends
the command quietly with exit 0; `drift show` lists breaking changes first; every table has
a header row; `--format json` works wherever the text form does."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result
from sqlalchemy import insert

from cli.main import COMMANDS, main
from controller.scheduler import Controller
from controller.store.db import Database
from controller.store.models import Org
from controller.store.types import utcnow
from tests.cli.conftest import cli
from tests.conftest import SECRET, OrgKey
from tests.processes import DRIFTGATE
from tests.servers import SpecServer, WsgiServer
from tests.specs import as_json, charges_spec


@pytest.fixture
def env(tmp_path: Path, database: Database) -> dict[str, str]:
    return {
        "DRIFTGATE_DATABASE_URL": database.url,
        "DRIFTGATE_DATA_DIR": str(tmp_path / "data"),
        "DRIFTGATE_SECRET_KEY": SECRET,
        "DRIFTGATE_CONFIG": "",
        "NO_COLOR": "1",
    }


def run(env: dict[str, str], *args: str) -> Result:
    result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
    assert result.exit_code == 0, (args, result.output, result.stderr)
    return result


def many_orgs(database: Database, count: int) -> None:
    now = utcnow()
    rows = [
        {"id": str(uuid.uuid4()), "name": f"org-{i:05d}", "plan": "free", "created_at": now}
        for i in range(count)
    ]
    with database.transaction() as session:
        session.execute(insert(Org), rows)


# A reader that goes away


def test_a_reader_that_closes_early_ends_the_command_quietly_with_0(
    env: dict[str, str], database: Database
) -> None:
    """`driftgate orgs list | head -n 1` with more rows than a pipe holds: the reader takes
    one line and closes; the command's next write finds no reader. Before: `driftgate:
    error: [Errno 32] Broken pipe` and exit 2."""
    many_orgs(database, 3000)  # about 200 KB of table: more than a pipe's 64 KiB
    process = subprocess.Popen(
        [*DRIFTGATE, "orgs", "list"],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()
    assert first.split() == [b"NAME", b"PLAN", b"PRODUCTS", b"ID"]
    assert process.wait(timeout=60) == 0
    assert process.stderr.read() == b""
    process.stderr.close()


@pytest.mark.parametrize(
    "args", [("--help",), ("--version",), ("orgs", "--help"), ("orgs", "list"), ("db", "current")]
)
def test_a_reader_gone_before_the_first_line_is_not_an_error(
    env: dict[str, str], args: tuple[str, ...]
) -> None:
    """The pipe's reader closed before the command wrote anything: its first write (help and
    version are printed by click itself, before any command runs) fails, and the command
    still exits 0 with nothing on stderr (click alone exits 1 on a broken pipe)."""
    migrated = CliRunner().invoke(main, ["db", "upgrade"], env=env)
    assert migrated.exit_code == 0, migrated.output
    reader, writer = os.pipe()
    os.close(reader)
    try:
        done = subprocess.run(
            [*DRIFTGATE, *args],
            env={**os.environ, **env},
            stdout=writer,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
    finally:
        os.close(writer)
    assert (done.returncode, done.stderr) == (0, b"")


# drift show


def test_drift_show_lists_breaking_changes_first(
    api_server: WsgiServer, server: SpecServer, controller: Controller, acme: OrgKey
) -> None:
    def run_remote(*args: str) -> Result:
        result = cli(api_server.url, acme.key, *args)
        assert result.exit_code == 0, (args, result.output, result.stderr)
        return result

    spec = server.set("/charges.json", as_json(charges_spec()))
    run_remote("watches", "create", "charges", spec, "--type", "openapi")
    run_remote("watches", "check", "charges", "--wait", "20")
    changed = charges_spec(refunds=False, status_enum=("paid", "failed", "pending"), required=())
    server.set("/charges.json", as_json(changed))
    run_remote("watches", "check", "charges", "--fail-on", "never", "--wait", "20")
    events = json.loads(run_remote("drift", "list", "--format", "json").output)["events"]
    event_id = events[0]["id"]
    served = json.loads(run_remote("drift", "show", event_id, "--format", "json").output)
    severities = [c["severity"] for c in served["changes"]]
    # The server's order puts a breaking change after a warning: the text form reorders it.
    assert "warning" in severities and severities[-1] == "breaking", severities
    shown = run_remote("drift", "show", event_id).output.splitlines()
    labels = [line.split()[0] for line in shown[1:] if not line.strip().startswith("hint:")]
    assert labels == sorted(labels, key=["BREAKING", "WARNING", "INFO"].index)
    assert labels.count("BREAKING") == severities.count("breaking") and labels[0] == "BREAKING"
    status = run_remote("watches", "show", "charges").output.splitlines()
    change_labels = [line.split()[0] for line in status if line.startswith("    ")]
    change_labels = [label for label in change_labels if label != "hint:"]
    assert change_labels == labels


# Headers and JSON on the commands that read the store here


def test_store_listings_have_a_header_and_the_same_rows_as_json(
    env: dict[str, str], database: Database
) -> None:
    run(env, "orgs", "create", "acme", "--plan", "pro")
    run(env, "orgs", "enable-product", "acme", "replay_cloud")
    run(env, "keys", "create", "--org", "acme", "--name", "ci")
    run(env, "users", "create", "--email", "ada@example.com", "--org", "acme", "--role", "admin")

    def both(*args: str) -> tuple[list[list[str]], object]:
        text = run(env, *args).stdout.splitlines()
        document = json.loads(run(env, *args, "--format", "json").stdout)
        return [line.split() for line in text], document

    orgs, document = both("orgs", "list")
    assert orgs[0] == ["NAME", "PLAN", "PRODUCTS", "ID"]
    assert orgs[1][:3] == ["acme", "pro", "replay_cloud"]
    assert document["orgs"][0]["name"] == "acme" and document["orgs"][0]["id"] == orgs[1][3]
    assert document["orgs"][0]["products"] == ["replay_cloud"]

    keys, document = both("keys", "list", "--org", "acme")
    assert keys[0] == ["ID", "HINT", "NAME", "CREATED", "LAST", "USED", "STATE"]
    (key,) = document["keys"]
    assert keys[1] == [key["id"], f"...{key['hint']}", "ci", key["createdAt"], "never", "active"]

    users, document = both("users", "list", "--org", "acme")
    assert users[0] == ["EMAIL", "ROLE", "STATE", "LAST", "SIGN-IN"]
    assert users[1] == ["ada@example.com", "admin", "invited", "never"]
    assert document == {
        "users": [
            {"email": "ada@example.com", "role": "admin", "state": "invited", "lastSignInAt": None}
        ]
    }

    products, document = both("orgs", "products", "acme")
    assert products[0] == ["PRODUCT", "STATE"] and ["replay_cloud", "on"] in products
    assert {"product": "replay_cloud", "enabled": True} in document["products"]

    installations, document = both("orgs", "installations")
    assert installations == [["ORG", "INSTALLATION", "ACCOUNT", "STATUS", "LINKED", "BY"]]
    assert document == {"installations": []}

    current, document = both("db", "current")
    assert document == {"current": current[0][1].rstrip(","), "head": current[0][3]}


def test_sources_list_here_works_as_json_where_the_text_works(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A configured source whose org does not exist yet: the text form listed it, and
    `--format json` failed with `no org named 'ghost'`."""
    config = tmp_path / "driftgate.yaml"
    config.write_text(
        "sources:\n  - name: fleet\n    org: ghost\n    url: /nowhere\n    branch: main\n"
    )
    here = {**env, "DRIFTGATE_CONFIG": str(config)}
    run(here, "db", "upgrade")
    text = run(here, "sources", "list").stdout.splitlines()
    assert text[0].split() == ["NAME", "ORG", "STATE", "APPLIED", "BRANCH:PATH", "LAST", "RUN"]
    assert text[1].split() == ["fleet", "ghost", "NotReconciled", "-", "main:.driftgate", "-"]
    listed = json.loads(run(here, "sources", "list", "--format", "json").stdout)
    ((source),) = listed["sources"]
    assert (source["name"], source["org"], source["lastAppliedRevision"]) == (
        "fleet",
        "ghost",
        None,
    )
    assert source["inventory"] == {"templates": 0, "watchSets": 0, "watches": 0, "agents": 0}

    none = {**env, "DRIFTGATE_CONFIG": ""}
    empty = run(none, "sources", "list", "--format", "json")
    assert json.loads(empty.stdout) == {"sources": []}
    assert "no sources configured" in empty.stderr


# Every listing has the option


def _leaves(
    command: click.Command, path: tuple[str, ...]
) -> list[tuple[tuple[str, ...], click.Command]]:
    if isinstance(command, click.Group):
        return [
            leaf
            for name, sub in sorted(command.commands.items())
            for leaf in _leaves(sub, (*path, name))
        ]
    return [(path, command)]


LISTINGS = {"list", "show", "status", "current", "products", "installations", "published"}


def test_every_listing_command_offers_json() -> None:
    """A command that lists or shows things (by its name) takes `--format` with `json`, so a
    script never has to parse a table."""
    ctx = click.Context(main)
    leaves = [
        leaf
        for name in sorted(COMMANDS)
        for leaf in _leaves(main.get_command(ctx, name) or main, (name,))
    ]
    listings = [(path, command) for path, command in leaves if path[-1] in LISTINGS]
    assert len(listings) >= 15, [p for p, _ in listings]
    missing = []
    for path, command in listings:
        formats = [p for p in command.params if p.name == "output_format"]
        choices = formats[0].type.choices if formats else ()  # type: ignore[attr-defined]
        if "json" not in choices:
            missing.append(" ".join(path))
    assert missing == []
