"""The `driftgate` command: the root group, its error handling, and the list of commands.

Each command or group lives in its own module under `cli/commands/` and is registered below.
Exit codes: 0 success, 1 a gate failed (`diff`, `compare`, `preflight`, `validate`,
`reconcile`, `audit verify`, `watches check`), 2 a usage, input or environment error. Errors
are one line on stderr, never a traceback.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import click
from click.exceptions import NoSuchCommand

from cli.common import Context, fail
from controller import __version__
from controller.errors import DriftgateError

# Each command, imported only when it runs (or for --help): `driftgate diff` should not pay
# for the store, the web app or the schedulers.
COMMANDS = {
    "version": "cli.commands.version:version",
    "db": "cli.commands.db:db",
    "serve": "cli.commands.serve:serve",
    "up": "cli.commands.serve:up",
    "controller": "cli.commands.serve:controller",
    "orgs": "cli.commands.orgs:orgs",
    "keys": "cli.commands.keys:keys",
    "secrets": "cli.commands.secrets:secrets",
    "diff": "cli.commands.diff:diff",
    "compare": "cli.commands.diff:compare",
    "audit": "cli.commands.audit:audit",
    "reconcile": "cli.commands.gitops:reconcile",
    "sources": "cli.commands.gitops:sources",
    "validate": "cli.commands.validate:validate",
    "preflight": "cli.commands.preflight:preflight",
    "watches": "cli.commands.watches:watches",
    "drift": "cli.commands.watches:drift",
    "demo": "cli.commands.demo:demo",
    "draftpr": "cli.commands.draftpr:draftpr",
    "check-payload": "cli.commands.ingress:check_payload",
    "profiles": "cli.commands.ingress:profiles",
    "scan": "cli.commands.discovery:scan",
    "coverage": "cli.commands.discovery:coverage",
    "suggest": "cli.commands.discovery:suggest",
    "replay": "cli.commands.replay:replay",
    "mcp": "cli.commands.mcp:mcp",
    "summary": "cli.commands.summary:summary",
    "users": "cli.commands.users:users",
    "agents": "cli.commands.agents:agents",
    "incidents": "cli.commands.incidents:incidents",
}


class DriftgateGroup(click.Group):
    """Loads commands when they run; turns driftgate errors into one line on stderr and exit
    code 2."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, name = target.split(":")
        command: click.Command = getattr(importlib.import_module(module), name)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except NoSuchCommand as exc:
            # Click suggests from `self.commands`, empty here: suggest from the lazy registry.
            raise NoSuchCommand(exc.command_name, possibilities=COMMANDS, ctx=ctx) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except DriftgateError as exc:
            fail(exc.message)
        except OSError as exc:
            fail(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc))
        except Exception as exc:
            if not _is_database_error(exc):
                raise
            origin = getattr(exc, "orig", None)
            reason = (str(origin or exc).strip().splitlines() or ["unknown"])[0]
            fail(f"database error: {reason}")


def _is_database_error(exc: Exception) -> bool:
    """A SQLAlchemy error, without importing SQLAlchemy for commands that never use it."""
    errors = sys.modules.get("sqlalchemy.exc")
    return errors is not None and isinstance(exc, errors.SQLAlchemyError)


@click.group(cls=DriftgateGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", message="driftgate %(version)s")
@click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="DRIFTGATE_CONFIG",
    help="driftgate.yaml with settings (environment variables override it).",
)
@click.pass_context
def main(ctx: click.Context, config: Path | None) -> None:
    """driftgate: contract drift monitor and run gate for REST/OpenAPI APIs and MCP servers."""
    ctx.obj = Context(config)
    ctx.call_on_close(ctx.obj.close)
