"""What a `driftgate` process imports (issue 34, point 4): help loads no command's heavy
libraries, and the store commands load the store but not the web app, Alembic or httpx.

Structural, not timed: each test runs real `driftgate` processes and reads the modules they
imported (`sys.modules`, or `python -X importtime`'s list); docs/performance.md has the
figures."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import click

from cli.main import COMMANDS, SUMMARIES, main
from controller.store import migrate
from controller.store.db import Database
from tests.processes import DRIFTGATE, driftgate_env

HEAVY = ("sqlalchemy", "alembic", "httpx", "flask")

# In one interpreter, in turn: `driftgate --help`, then each command's `--help` (a group's
# help lists its subcommands with their lines); after each, the heavy packages loaded so far.
# A package that appears is charged to the first help that loaded it.
HELP_PROBE = """
import json, sys
from cli.main import COMMANDS, main
heavy = {heavy!r}
seen = {{}}
for args in [["--help"]] + [[name, "--help"] for name in sorted(COMMANDS)]:
    try:
        main(args, prog_name="driftgate", standalone_mode=False)
    except SystemExit:
        pass
    loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set(heavy))
    seen[" ".join(args)] = loaded
print("\\n--probe--" + json.dumps(seen))
"""


def test_help_imports_no_store_no_http_no_web() -> None:
    probe = HELP_PROBE.format(heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    seen = json.loads(done.stdout.rpartition("--probe--")[2])
    assert len(seen) == len(COMMANDS) + 1
    assert {args: loaded for args, loaded in seen.items() if loaded} == {}
    assert "Commands:" in done.stdout and "watches" in done.stdout


def test_every_command_has_its_line_in_the_root_help() -> None:
    ctx = click.Context(main)
    assert set(SUMMARIES) == set(COMMANDS)
    for name in COMMANDS:
        command = main.get_command(ctx, name)
        assert command is not None, name
        assert SUMMARIES[name] == command.get_short_help_str(limit=1000), name


def test_the_root_help_lists_every_command_with_its_line() -> None:
    shown = subprocess.run(
        [*DRIFTGATE, "--help"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    listed = shown.partition("Commands:\n")[2].splitlines()
    assert [line.split()[0] for line in listed if line.strip()] == sorted(COMMANDS)
    assert "  version        Print the driftgate version.\n" in shown
    # A long line is cut at a word, as click cuts it (80 columns).
    cut = "Serve driftgate's MCP tools (preflight, watch and agent..."
    assert f"\n  mcp            {cut}\n" in shown


def imported(stderr: str) -> set[str]:
    """The top-level packages in `python -X importtime`'s report on stderr."""
    names = re.findall(r"^import time:\s+\d+ \|\s+\d+ \| *([\w.]+)$", stderr, re.MULTILINE)
    return {name.split(".")[0] for name in names}


def test_store_commands_import_the_store_only(tmp_path: Path, database: Database) -> None:
    env = driftgate_env(database.url, tmp_path)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "cli", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done

    created = run("orgs", "create", "lean")
    assert created.stdout.startswith("created org lean (")
    key = run("keys", "create", "--org", "lean")
    assert key.stdout.startswith("dg_")
    user = run("users", "create", "--org", "lean", "--email", "ops@example.com")
    assert "set-password link" in user.stdout
    for done in (created, key, user):
        loaded = imported(done.stderr)
        assert "sqlalchemy" in loaded  # the probe sees imports
        assert loaded & {"alembic", "httpx", "flask", "werkzeug", "argon2", "joserfc"} == set()


def test_the_head_revision_without_alembic_is_alembics(database: Database) -> None:
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    config = migrate.alembic_config(database)
    assert migrate.head_revision() == ScriptDirectory.from_config(config).get_current_head()
    with database.engine.connect() as connection:
        alembic_current = MigrationContext.configure(connection).get_current_revision()
    assert migrate.current_revision(database) == alembic_current == migrate.head_revision()


def test_an_empty_store_has_no_revision(tmp_path: Path) -> None:
    empty = Database(f"sqlite:///{tmp_path / 'empty.db'}")
    try:
        assert migrate.current_revision(empty) is None
    finally:
        empty.dispose()


def test_the_head_is_found_among_revision_files(tmp_path: Path) -> None:
    def revision(name: str, number: str, down: str | None, annotated: bool = False) -> None:
        kind = ": str" if annotated else ""
        down_kind = ": str | None" if annotated else ""
        shown_down = "None" if down is None else f'"{down}"'
        (tmp_path / name).write_text(
            f'"""{name}"""\n\nrevision{kind} = "{number}"\n'
            f"down_revision{down_kind} = {shown_down}\nbranch_labels = None\n"
        )

    revision("0001_a.py", "0001", None)
    revision("0003_c.py", "0003", "0002", annotated=True)
    revision("0002_b.py", "0002", "0001")
    (tmp_path / "__init__.py").write_text("")
    assert migrate.head_of(tmp_path) == "0003"
