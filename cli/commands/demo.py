"""`driftgate demo`: drift on loopback with no internet (the package `demo`), and
`driftgate demo vendor`: the vendor simulator alone, for examples/ and your own tries."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from cli.common import fail

_interval = click.option(
    "--interval",
    type=click.FloatRange(min=0),
    default=15.0,
    show_default=True,
    help="Seconds between the vendors' changes (0: only on Enter or POST /_demo/next).",
)


@click.group(invoke_without_command=True)
@click.option("--port", type=int, default=8080, show_default=True, help="driftgate's port.")
@click.option(
    "--vendor-port", type=int, default=8090, show_default=True, help="The simulator's port."
)
@click.option(
    "--receiver-port",
    type=int,
    default=8091,
    show_default=True,
    help="The webhook receiver's port.",
)
@_interval
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="An empty or new directory for the demo's store, repository and log "
    "(default: a new temporary directory).",
)
@click.option(
    "--examples",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="The configuration to commit to the demo repository (default: examples/).",
)
@click.option(
    "--exit-when-done", is_flag=True, help="Stop after the last stage instead of serving on."
)
@click.option(
    "--keep",
    is_flag=True,
    help="Keep the temporary data directory (store, log, API key, console password) after the "
    "demo; without --data-dir it is removed.",
)
@click.pass_context
def demo(
    ctx: click.Context,
    port: int,
    vendor_port: int,
    receiver_port: int,
    interval: float,
    data_dir: Path | None,
    examples: Path | None,
    exit_when_done: bool,
    keep: bool,
) -> None:
    """Watch drift happen: a vendor simulator, a webhook receiver and driftgate on loopback.

    Within about two minutes the vendors remove an endpoint (breaking), rewrite a tool's
    description (warning), add a tool (info) and revert; the console shows the watches, the
    incident, the killed production agent and its signed webhook, the run gate's 409 and the
    way back. Ctrl-C stops everything within about a second and removes the temporary data
    directory, which holds the demo's API key and console password (--keep keeps it; a
    --data-dir is always kept).
    """
    if ctx.invoked_subcommand is not None:
        return
    from demo.run import DemoOptions, default_examples, run

    options = DemoOptions(
        data_dir=data_dir or Path(tempfile.mkdtemp(prefix="driftgate-demo-")),
        remove_data_dir=data_dir is None and not keep,
        examples=examples or default_examples(),
        port=port,
        vendor_port=vendor_port,
        receiver_port=receiver_port,
        interval=interval or None,
        exit_when_done=exit_when_done,
    )
    try:
        run(options, lambda line: click.echo(line))
    except RuntimeError as exc:
        fail(str(exc))
    finally:
        _skip_final_collection()


def _skip_final_collection() -> None:
    """Everything is stopped and closed: the interpreter's last garbage collection of what
    the demo loaded (pygit2, SQLAlchemy, uvicorn, the MCP SDK) would only delay the exit,
    by seconds on a busy machine, after "stopped." was said."""
    import gc

    gc.freeze()


@demo.command("vendor")
@click.option("--port", type=int, default=8090, show_default=True, help="Port to serve on.")
@_interval
def vendor(port: int, interval: float) -> None:
    """Serve the vendor simulator alone (what examples/ points at): its OpenAPI document at
    /specs/stripe.json and its MCP server at /mcp change on the timer, on Enter or on
    POST /_demo/next."""
    from demo.run import serve_vendor

    try:
        serve_vendor("127.0.0.1", port, interval or None, lambda line: click.echo(line))
    except OSError as exc:
        fail(f"cannot serve on 127.0.0.1:{port}: {exc.strerror or exc}")
    finally:
        _skip_final_collection()
