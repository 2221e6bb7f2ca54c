"""The `driftgate` command: the root group, its error handling, and the list of commands.

Each command or group lives in its own module under `cli/commands/` and is registered below.
Exit codes: 0 success, 1 a gate failed (`diff`, `compare`, `preflight`, `validate`,
`reconcile`, `audit verify`, `watches check`), 2 a usage, input or environment error. Errors
are one line on stderr, never a traceback.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click
from click.exceptions import NoSuchCommand

from cli.common import Context, fail
from controller import __version__
from controller.errors import DriftgateError

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

# A store command imports click, SQLAlchemy, the models and the settings: several hundred
# thousand objects that live until the process ends. At the default threshold (700) the
# collector walks them hundreds of times during start-up and frees nothing; at 50,000 it runs
# a few times (long-running commands keep it: it bounds the cyclic garbage between two
# collections, as servers commonly set). At exit, what is still alive is frozen, so the final
# collections skip it. Together about a third of a store command's CPU (docs/performance.md).
gc.set_threshold(50_000, *gc.get_threshold()[1:])
atexit.register(gc.freeze)

# Each command, imported only when it runs or shows its own help: `driftgate diff` should not
# pay for the store, the web app or the schedulers, and `driftgate --help` imports none of them.
COMMANDS = {
    "version": "cli.commands.version:version",
    "completion": "cli.commands.completion:completion",
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
    "pr-comment": "cli.commands.prcomment:pr_comment",
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

# The line each command shows in `driftgate --help` and in shell completion, so that neither
# loads a command's module (a test keeps each line equal to the command's own short help).
# A command missing here still shows: its module is loaded for its line.
SUMMARIES = {
    "agents": "The org's agents and the run gate's lifecycle: status, kill, unblock, ack.",
    "audit": "Audit exports.",
    "check-payload": "Check PAYLOAD (a JSON file) against a consumer profile, offline, with the "
    "same code as POST /api/validate.",
    "compare": "Compare two JSON payloads by their inferred schemas (the offline `compare_json`).",
    "completion": "Print the shell completion script of driftgate for bash, zsh or fish.",
    "controller": "Run the controller: schedule and run checks, deliver events (no HTTP serving).",
    "coverage": "Fail (exit 1) when a contract the checkout depends on is not watched by the org "
    "(or, for a local stdio server, acknowledged in .driftgate/coverage.yaml); print the fix.",
    "db": "Manage the state store.",
    "demo": "Watch drift happen: a vendor simulator, a webhook receiver and driftgate on loopback.",
    "diff": "Diff two contracts (files or http(s) URLs): OpenAPI, MCP snapshots or JSON.",
    "draftpr": "Draft pull requests opened for drift events, through the server's API.",
    "drift": "The org's drift events, through the server's API.",
    "incidents": "The org's incidents (breaking drift until it is resolved): list, acknowledge, "
    "resolve.",
    "keys": "Administer API keys (shown once, stored hashed).",
    "mcp": "Serve driftgate's MCP tools (preflight, watch and agent status, drift events, "
    "explanations, acknowledgements, discovery, offline compare and payload checks), the "
    "watches as resources and the triage_drift prompt; `lock` and `verify` pin servers' tool "
    "sets in git.",
    "orgs": "Administer organizations (plans and overlay products).",
    "pr-comment": "Put REPORT in driftgate's comment on a GitHub pull request (edited, not "
    "repeated).",
    "preflight": "Ask the server whether a run may start (POST /api/preflight).",
    "profiles": "The org's consumer profiles (the registry of POST /api/validate's profileId).",
    "reconcile": "Reconcile git sources now: fetch, validate, plan (creates, updates, prunes), "
    "apply.",
    "replay": "Replay fixtures: test an agent against a contract before it ships.",
    "scan": "Find the contracts a checkout depends on (offline; .gitignore respected).",
    "secrets": "Manage the encryption of secrets at rest.",
    "serve": "Serve the HTTP API with gunicorn (gthread workers).",
    "sources": "Git sources and their reconcile status.",
    "suggest": "Suggest watches for the servers of an MCP client configuration (nothing is "
    "started).",
    "summary": "Print this week's summary e-mail of an org, or `--send` it to its recipients "
    "now (through the org's SMTP relay; deliveries count in the alert stats as channel "
    "email).",
    "up": "Run everything on one machine: migrate the store, start the controller, serve the API.",
    "users": "Console accounts of an org: people who sign in at /console.",
    "validate": "Check the .driftgate/ files offline: schema, references, secrets.",
    "version": "Print the driftgate version.",
    "watches": "The org's watches, through the server's API.",
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

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of `driftgate --help`, from SUMMARIES: no module is loaded."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))
        rows = [(name, _shortened(self._summary(ctx, name), limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        """Command names (with their lines from SUMMARIES) and options, for a tab press that
        must not load every command's module."""
        from click.shell_completion import CompletionItem

        found = [
            CompletionItem(name, help=self._summary(ctx, name))
            for name in self.list_commands(ctx)
            if name.startswith(incomplete)
        ]
        return found + click.Command.shell_complete(self, ctx, incomplete)

    def _summary(self, ctx: click.Context, name: str) -> str:
        summary = SUMMARIES.get(name)
        if summary is None:
            command = self.get_command(ctx, name)
            summary = command.get_short_help_str(limit=1000) if command is not None else ""
        return summary

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Click's entry point, and a reader that went away (`driftgate ... | head -1`) is not
        an error: stdout is pointed at /dev/null so that nothing more is written, nor flushed
        at exit, and the command ends quietly with its own exit code (0 when it was cut off
        while printing), where Python would print a BrokenPipeError and click exit 1."""
        try:
            result = super().main(*args, **kwargs)
            _flush_stdout()
        except SystemExit as exc:
            _flush_stdout()
            raise exc from None
        return result

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:  # `driftgate --help` and `--version` print here
            return super().make_context(*args, **kwargs)
        except BrokenPipeError:
            _reader_gone()

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            _reader_gone()
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


def _flush_stdout() -> None:
    """Flush what is buffered for stdout now, where a reader that went away can be told."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
    except (AttributeError, ValueError):  # a replaced or closed stream
        pass


def _reader_gone() -> NoReturn:
    """The reader of stdout closed it while the command printed: exit 0, quietly."""
    _silence_stdout()
    sys.exit(0)


def _silence_stdout() -> None:
    """Python's documented recipe (the `signal` module's notes on SIGPIPE): point stdout's
    descriptor at /dev/null, so the interpreter's last flush has somewhere to go."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # a replaced stream (a test's runner)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, descriptor)
    os.close(devnull)


def _shortened(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, cut at a word with "..." (as click cuts)."""
    if len(text) <= limit:
        return text
    import textwrap

    return textwrap.shorten(text, max(limit, 3), placeholder="...", break_on_hyphens=False)


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
