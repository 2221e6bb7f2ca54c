"""`driftgate replay`: replay fixtures of the org's drifts, through a running server
(`DRIFTGATE_URL`, `DRIFTGATE_API_KEY`). See docs/replay.md."""

from __future__ import annotations

from pathlib import Path

import click

from cli import api
from cli.common import fail
from cli.remote import server, server_command


@click.group()
def replay() -> None:
    """Replay fixtures: test an agent against a contract before it ships."""


def _write(out: str, files: dict[str, str]) -> None:
    root = Path(out)
    for path, content in sorted(files.items()):
        target = (root / path).resolve()
        if root.resolve() not in target.parents:
            fail(f"the server sent a path outside {out}: {path}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")


@replay.command("install")
@click.argument("fixture_id")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False), help="Directory.")
@server_command
def replay_install(
    fixture_id: str, out: str, url: str | None, api_key: str | None, output_format: str
) -> None:
    """Write a catalog fixture (GET /v1/replay/fixtures/catalog lists them) into OUT."""
    with server(url, api_key) as http:
        installed = api.call(http, "POST", "/v1/replay/fixtures/install", json={"id": fixture_id})
    _write(out, installed["files"])
    click.echo(
        f"wrote {len(installed['files'])} files to {out} (digest {installed['digest'][:12]})"
    )


@replay.command("pull")
@click.option("--watch", "watch", required=True, help="The watch (id or name).")
@click.option("--event", "event_id", help="The drift event (default: the latest).")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False), help="Directory.")
@server_command
def replay_pull(
    watch: str,
    event_id: str | None,
    out: str,
    url: str | None,
    api_key: str | None,
    output_format: str,
) -> None:
    """Write the fixture of a watch's drift into OUT: before.schema.json, after.schema.json,
    mock-responses/, cloud-meta.json."""
    with server(url, api_key) as http:
        body = {"watchId": api.watch_id(http, watch)}
        if event_id:
            body["driftEventId"] = event_id
        fixture = api.call(http, "POST", "/v1/replay/fixtures/from-watch", json=body)
    _write(out, fixture["files"])
    click.echo(f"wrote {len(fixture['files'])} files to {out} (digest {fixture['digest'][:12]})")


@replay.command("serve")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="The port on 127.0.0.1 (0: any free one).",
)
@click.option("--stdio", is_flag=True, help="MCP fixtures: serve over stdin/stdout instead.")
def replay_serve(directory: str, port: int, stdio: bool) -> None:
    """Serve DIRECTORY's after contract on 127.0.0.1 with its mock responses: an MCP server
    (Streamable HTTP at /mcp, or --stdio) whose tools answer with the mocks, or an HTTP server
    whose operations do, checking each request against the after contract (400 when it does
    not fit). Runs until interrupted."""
    import signal
    import threading

    from controller.replay import serve

    served = serve.load(directory)
    if stdio:
        if served.kind != "mcp":
            fail(f"{directory} holds an OpenAPI fixture: --stdio serves MCP fixtures only")
        serve.serve_stdio(served)
        return
    try:
        server = serve.ReplayServer(served, port=port)
        server.start()
    except OSError as exc:
        fail(f"cannot listen on 127.0.0.1:{port} ({exc.strerror}); pick another --port")
    click.echo(f"serving {served.fixture_id} ({serve.describe(served)}) at {server.url}", err=True)
    click.echo(server.url)  # alone on stdout: scripts read it
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    stop.wait()
    server.stop()
