"""`driftgate mcp`: driftgate's tools for agents, as an MCP server over stdio (how desktop and
IDE clients launch local servers) or Streamable HTTP on 127.0.0.1 (`--http`). It calls a
running server's API (`DRIFTGATE_URL`, `DRIFTGATE_API_KEY`). See docs/mcp.md."""

from __future__ import annotations

import click

from cli import api
from cli.common import fail
from cli.toolserver.configs import CLIENTS


@click.command()
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
def mcp(
    url: str | None,
    api_key: str | None,
    http: bool,
    port: int,
    poll_seconds: float,
    client: str | None,
) -> None:
    """Serve driftgate's MCP tools (preflight, watch and agent status, drift events,
    explanations, acknowledgements, discovery, offline compare and payload checks), the
    watches as resources and the triage_drift prompt."""
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
