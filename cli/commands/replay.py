"""`driftgate replay`: replay fixtures of the org's drifts, through a running server
(`DRIFTGATE_URL`, `DRIFTGATE_API_KEY`). See docs/replay.md."""

from __future__ import annotations

from pathlib import Path

import click

from cli import api
from cli.common import fail
from cli.output import emit, table
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
            body["driftEventId"] = api.drift_event_id(http, event_id)
        fixture = api.call(http, "POST", "/v1/replay/fixtures/from-watch", json=body)
    _write(out, fixture["files"])
    click.echo(f"wrote {len(fixture['files'])} files to {out} (digest {fixture['digest'][:12]})")


@replay.command("publish")
@click.option("--watch", "watch", required=True, help="The watch (id or name).")
@click.option("--event", "event_id", help="The drift event (default: the latest).")
@click.option("--title", help="The catalog row's title (default: `<watch>: <date> drift`).")
@click.option("--vendor", help="The catalog row's vendor (default: the watch URL's host).")
@click.option("--tag", "tags", multiple=True, help="A tag of the row (repeatable).")
@click.option("--public", is_flag=True, help="Visible to every caller (else the org alone).")
@server_command
def replay_publish(
    watch: str,
    event_id: str | None,
    title: str | None,
    vendor: str | None,
    tags: tuple[str, ...],
    public: bool,
    url: str | None,
    api_key: str | None,
    output_format: str,
) -> None:
    """Publish the fixture of a watch's drift to the catalog (hosted-curated); publishing the
    same drift again updates its row."""
    with server(url, api_key) as http:
        body: dict[str, object] = {"watchId": api.watch_id(http, watch), "public": public}
        if event_id:
            event_id = api.drift_event_id(http, event_id)
        for key, value in (("driftEventId", event_id), ("title", title), ("vendor", vendor)):
            if value:
                body[key] = value
        if tags:
            body["tags"] = list(tags)
        published = api.call(http, "POST", "/v1/replay/fixtures/publish", json=body)
    emit(
        published,
        output_format,
        lambda p: [
            f"published {p['row']['id']} ({'public' if p['public'] else 'this org only'}): "
            f"{p['row']['title']}"
        ],
    )


@replay.command("published")
@server_command
def replay_published(url: str | None, api_key: str | None, output_format: str) -> None:
    """The fixtures the org published."""
    with server(url, api_key) as http:
        listed = api.call(http, "GET", "/v1/replay/fixtures/published")
    emit(
        listed,
        output_format,
        lambda doc: table(
            [
                (
                    p["row"]["id"],
                    "public" if p["public"] else "org",
                    f"{p['row']['changes']['breaking']}",
                    p["row"]["title"],
                )
                for p in doc["publications"]
            ],
            ("ID", "VISIBLE", "BREAKING", "TITLE"),
        ),
    )


@replay.command("unpublish")
@click.argument("row_id")
@server_command
def replay_unpublish(row_id: str, url: str | None, api_key: str | None, output_format: str) -> None:
    """Withdraw a published fixture (`hosted-...`) from the catalog."""
    with server(url, api_key) as http:
        api.call(http, "DELETE", f"/v1/replay/fixtures/published/{row_id}")
    click.echo(f"withdrew {row_id}")


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
