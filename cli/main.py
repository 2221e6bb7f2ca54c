"""The `driftgate` command: the root group, its error handling, and the list of commands.

Each command or group lives in its own module under `cli/commands/` and is registered below.
Exit codes: 0 success, 1 a gate failed (`diff`, `compare`, `preflight`, `validate`,
`reconcile`, `audit verify`), 2 a usage, input or environment error. Errors are one line on
stderr, never a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from sqlalchemy.exc import SQLAlchemyError

from cli.commands import (
    audit,
    db,
    demo,
    diff,
    gitops,
    keys,
    orgs,
    preflight,
    secrets,
    serve,
    watches,
)
from cli.commands import validate as validate_command
from cli.commands import version as version_command
from cli.common import Context, fail
from controller import __version__
from controller.errors import DriftgateError


class DriftgateGroup(click.Group):
    """Turns driftgate errors into one line on stderr and exit code 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except DriftgateError as exc:
            fail(exc.message)
        except SQLAlchemyError as exc:
            origin = getattr(exc, "orig", None)
            reason = (str(origin or exc).strip().splitlines() or ["unknown"])[0]
            fail(f"database error: {reason}")
        except OSError as exc:
            fail(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc))


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


for command in (
    version_command.version,
    db.db,
    serve.serve,
    serve.up,
    serve.controller,
    orgs.orgs,
    keys.keys,
    secrets.secrets,
    diff.diff,
    diff.compare,
    audit.audit,
    gitops.reconcile,
    gitops.sources,
    validate_command.validate,
    preflight.preflight,
    watches.watches,
    watches.drift,
    demo.demo,
):
    main.add_command(command)
