"""`driftgate mcp`: driftgate's tools for agents, as an MCP server over stdio (how desktop and
IDE clients launch local servers) or Streamable HTTP on 127.0.0.1 (`--http`). It calls a
running server's API (`DRIFTGATE_URL`, `DRIFTGATE_API_KEY`). See docs/mcp.md.

`driftgate mcp lock` and `driftgate mcp verify` pin the tool sets of MCP servers in git
(`.driftgate/mcp.lock`, `controller.toollock`) and check servers against it, live or from a
snapshot file, offline in CI (exit 0 clean, 1 with the findings, 2 bad input). See
docs/mcp-lock.md."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import click

from cli import api
from cli.common import fail, options
from cli.toolserver.configs import CLIENTS


@click.group(invoke_without_command=True)
@api.server_options
@click.option("--http", "http", is_flag=True, help="Serve Streamable HTTP at /mcp, not stdio.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="With --http: the port on 127.0.0.1 (0: any free one).",
)
@click.option(
    "--poll-seconds",
    type=click.FloatRange(0.1, 3600),
    default=15.0,
    show_default=True,
    help="How often watch resources are checked for changes (subscriptions).",
)
@click.option(
    "--print-config",
    "client",
    type=click.Choice(sorted(CLIENTS)),
    help="Print the entry that adds this server to CLIENT's configuration, and exit (its "
    "command is this driftgate as installed: `driftgate` when PATH finds it, else its "
    "absolute path).",
)
@click.pass_context
def mcp(
    ctx: click.Context,
    url: str | None,
    api_key: str | None,
    http: bool,
    port: int,
    poll_seconds: float,
    client: str | None,
) -> None:
    """Serve driftgate's MCP tools (preflight, watch and agent status, drift events,
    explanations, acknowledgements, discovery, offline compare and payload checks), the
    watches as resources and the triage_drift prompt; `lock` and `verify` pin servers' tool
    sets in git."""
    if ctx.invoked_subcommand is not None:
        return
    if client is not None:
        from cli.toolserver.configs import installed_command, snippet

        launcher = installed_command()
        where, text = snippet(client, url or "http://127.0.0.1:8080", launcher)
        click.echo(f"# {client}: add to {where}", err=True)
        click.echo(f"# command: {launcher.why}", err=True)
        click.echo(text, nl=False)
        return
    import logging
    import sys

    import anyio

    from cli.toolserver import server
    from cli.toolserver.tools import Connection

    # stdout is the stdio transport: every log line goes to stderr.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    connection = Connection(url, api_key)
    if not http:
        try:
            anyio.run(server.serve_stdio, connection, poll_seconds)
        except KeyboardInterrupt:
            pass
        return
    import signal
    import threading

    from controller.loopback import ThreadedServer

    try:
        served = ThreadedServer(
            server.http_app(connection, poll_seconds), port=port, name="tool server"
        )
    except OSError as exc:
        fail(f"cannot listen on 127.0.0.1:{port} ({exc.strerror}); pick another --port")
    served.start()
    click.echo(f"driftgate MCP tools at http://127.0.0.1:{served.port}/mcp", err=True)
    click.echo(f"http://127.0.0.1:{served.port}/mcp")
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    stop.wait()
    served.stop()
    connection.close()


# -- pinned tool sets ------------------------------------------------------------------------

LOCK_PATH = ".driftgate/mcp.lock"
HOSTED_LOCK_PATH = ".driftguard/mcp/driftguard-lock.json"
_lock_options = options(
    click.option(
        "--server",
        "server",
        metavar="NAME",
        help="Only this server: one of the --config file's servers, else the org's MCP watch "
        "of this name (through the server's API; its URL, without its secret headers).",
    ),
    click.option(
        "--config",
        "config",
        type=click.Path(dir_okay=False),
        metavar="FILE",
        help="An MCP client configuration (.mcp.json, .cursor/mcp.json, .vscode/mcp.json, "
        "Codex TOML ...): its servers, by their names there.",
    ),
    click.option(
        "--snapshot",
        "snapshot",
        type=click.Path(dir_okay=False, exists=True),
        metavar="FILE",
        help="Read the server's surface from this file (a driftgate snapshot, a capture or a "
        "tools/list result) instead of connecting: offline. Needs --server unless the lock "
        "holds one server.",
    ),
)


@mcp.command("lock")
@_lock_options
@click.option(
    "--lock",
    "lock_path",
    type=click.Path(dir_okay=False),
    default=LOCK_PATH,
    show_default=True,
    help="The lock file to write (its other servers are kept).",
)
@api.server_options
@click.pass_obj
def mcp_lock(
    obj: object,
    server: str | None,
    config: str | None,
    snapshot: str | None,
    lock_path: str,
    url: str | None,
    api_key: str | None,
) -> None:
    """Pin the tool sets of MCP servers in git: write each server's tools (a hash of each
    input schema and of each description), protocol version and capabilities to
    .driftgate/mcp.lock, from the live server (or --snapshot).

    Local stdio servers are started only when DRIFTGATE_ALLOW_STDIO_MCP allows them.
    """
    from controller.toollock.files import DRIFTGATE, LockFileInvalid
    from controller.toollock.lock import entry_of, render
    from controller.toollock.service import TargetUnreachable, lock_entries

    path = Path(lock_path)
    kept: dict[str, dict[str, Any]] = {}
    if path.exists():
        try:
            found = _read_lock(path)
        except LockFileInvalid as exc:
            _fail_lock(path, exc)
        if found.format != DRIFTGATE:
            fail(
                f"{path} is the hosted product's lock, which driftgate reads but does not "
                f"write; lock into {LOCK_PATH} (--lock)"
            )
        kept = found.servers
    if snapshot is not None:
        if server is None:
            fail("--snapshot needs --server NAME: the name the lock keeps the server under")
        entries = {server: entry_of(_read_snapshot(snapshot))}
    else:
        targets = _targets(obj, server, config, url, api_key)
        try:
            with _fetching(obj) as (client, allow_stdio, limits):
                entries = lock_entries(
                    targets, client=client, allow_stdio=allow_stdio, limits=limits
                )
        except TargetUnreachable as exc:
            fail(str(exc))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render({**kept, **entries}), encoding="utf-8")
    for name, entry in sorted(entries.items()):
        click.echo(f"locked {name}: {len(entry['tools'])} tools -> {path}")


@mcp.command("verify")
@_lock_options
@click.option(
    "--lock",
    "lock_path",
    type=click.Path(dir_okay=False),
    help=f"The lock to verify against (default: {LOCK_PATH}, else the hosted product's "
    f"{HOSTED_LOCK_PATH}).",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@api.server_options
@click.pass_obj
def mcp_verify(
    obj: object,
    server: str | None,
    config: str | None,
    snapshot: str | None,
    lock_path: str | None,
    fmt: str,
    url: str | None,
    api_key: str | None,
) -> None:
    """Check MCP servers against their lock: a tool outside it, a changed input schema or
    description, a pinned tool gone, another protocol version or other capabilities is a
    finding. Live, or offline from a --snapshot file.

    Exit 0 when every server keeps to its lock, 1 with the findings, 2 when the lock, the
    configuration or a server cannot be read.
    """
    import json
    import sys

    from controller.toollock.files import LockFileInvalid
    from controller.toollock.service import TargetUnreachable, fetch_surface, verify

    path = _lock_file(lock_path)
    try:
        lock = _read_lock(path)
    except LockFileInvalid as exc:
        _fail_lock(path, exc)
    if snapshot is not None:
        name = server or (next(iter(lock.servers)) if len(lock.servers) == 1 else None)
        if name is None:
            fail(f"{path} holds {len(lock.servers)} servers: name the snapshot's with --server")
        if name not in lock.servers:
            fail(f"{path} has no server {name!r} (it has {', '.join(sorted(lock.servers))})")
        surfaces = {name: _read_snapshot(snapshot)}
    else:
        targets = _targets(obj, server, config, url, api_key)
        missing = sorted(set(lock.servers) - set(targets)) if server is None else []
        unknown = sorted(set(targets) - set(lock.servers))
        if server is not None and unknown:
            fail(f"{path} has no server {server!r} (it has {', '.join(sorted(lock.servers))})")
        if missing:
            fail(
                f"the lock's servers {', '.join(missing)} are not in {config}: verify each "
                "with --server NAME (a watch) or a configuration that has them"
            )
        for name in unknown:
            click.echo(f"driftgate: {name} is not in {path}: not verified", err=True)
        try:
            with _fetching(obj) as (client, allow_stdio, limits):
                surfaces = {
                    name: fetch_surface(
                        targets[name], client=client, allow_stdio=allow_stdio, limits=limits
                    )
                    for name in sorted(set(targets) & set(lock.servers))
                }
        except TargetUnreachable as exc:
            fail(str(exc))
    results = verify(surfaces, lock.servers)
    failed = any(result.violations for result in results)
    if fmt == "json":
        document = {
            "lock": str(path),
            "ok": not failed,
            "servers": [
                {
                    "server": result.server,
                    "ok": not result.violations,
                    "findings": [v.as_dict(result.server) for v in result.violations],
                }
                for result in results
            ],
        }
        click.echo(json.dumps(document, indent=2, sort_keys=True))
    else:
        for result in results:
            if not result.violations:
                tools = len(lock.servers[result.server].get("tools") or {})
                click.echo(f"{result.server}: keeps to its lock ({tools} tools)")
            for violation in result.violations:
                click.echo(f"{violation.describe(result.server)} [{violation.rule}]")
    sys.exit(1 if failed else 0)


def _lock_file(given: str | None) -> Path:
    if given is not None:
        if not Path(given).is_file():
            fail(f"no lock file {given}")
        return Path(given)
    for candidate in (LOCK_PATH, HOSTED_LOCK_PATH):
        if Path(candidate).is_file():
            return Path(candidate)
    fail(f"no lock: neither {LOCK_PATH} nor {HOSTED_LOCK_PATH} here; write one with `mcp lock`")


def _read_lock(path: Path) -> Any:
    from controller.toollock.files import load_lock

    try:
        raw = path.read_bytes()
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}")
    return load_lock(raw)


def _fail_lock(path: Path, exc: Any) -> NoReturn:
    for problem in exc.problems[1:]:
        click.echo(
            f"driftgate: error: {path}:{problem.line}:{problem.column}: {problem.message}", err=True
        )
    first = exc.problems[0]
    fail(f"{path}:{first.line}:{first.column}: {first.message}")


def _read_snapshot(file: str) -> Any:
    import json

    try:
        return json.loads(Path(file).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read {file}: {exc}")
    except json.JSONDecodeError as exc:
        fail(f"{file}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}")


def _targets(
    obj: Any, server: str | None, config: str | None, url: str | None, api_key: str | None
) -> dict[str, Any]:
    """The servers to read: those of --config (only --server's, when given), else the org's
    MCP watch named --server."""
    import os

    from controller.discovery.extract import ConfigInvalid
    from controller.toollock.targets import Target, targets_of

    if config is not None:
        try:
            text = Path(config).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            fail(f"cannot read {config}: {exc}")
        try:
            targets = targets_of(text, config, os.environ)
        except ConfigInvalid as exc:
            fail(exc.message)
        if server is not None:
            if server not in targets:
                known = ", ".join(sorted(targets)) or "none"
                fail(f"{config} has no server {server!r} (it has {known})")
            targets = {server: targets[server]}
        if not targets:
            fail(f"{config} has no MCP server")
        for target in targets.values():
            for name in target.unresolved:
                click.echo(
                    f"driftgate: {target.name}: {name} refers to a variable that is not set; "
                    "connecting without it",
                    err=True,
                )
        return targets
    if server is None:
        fail("name the servers: --config FILE (an MCP client configuration) or --server NAME")
    try:
        with api.client(url, api_key) as http:
            watch = api.call(http, "GET", f"/api/watches/{api.watch_id(http, server)}")
    except api.ApiError as exc:
        fail(str(exc))
    if watch.get("watchType") != "mcp":
        fail(f"watch {server!r} is not an MCP watch (it is {watch.get('watchType')})")
    address = str(watch.get("url") or "")
    if address.startswith("stdio:"):
        import shlex

        return {server: Target(server, command=tuple(shlex.split(address[len("stdio:") :])))}
    return {server: Target(server, url=address)}


@contextmanager
def _fetching(obj: Any) -> Iterator[tuple[Any, bool, Any]]:
    """An outbound client (private addresses allowed: the CLI runs where its servers are, as
    `driftgate diff` does), the operator's stdio switch and the fetch limits."""
    from controller.sources.http import CLI_USER_AGENT, make_client
    from controller.sources.mcp import McpLimits

    settings = obj.settings()
    limits = McpLimits(
        total_timeout=settings.fetch_deadline_seconds, max_bytes=settings.fetch_max_bytes
    )
    client = make_client(allow_private=True, user_agent=CLI_USER_AGENT)
    try:
        yield client, settings.allow_stdio_mcp, limits
    finally:
        client.close()
