"""`driftgate serve`, `up` and `controller`: the processes of the service (their plumbing is
`cli/server.py` and `cli/supervision.py`)."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

import click

from cli.common import Context, options
from controller import __version__
from controller.errors import ConfigError

if TYPE_CHECKING:
    from controller.settings import Settings

_server_options = options(
    click.option("--host", help="Address to bind (default 127.0.0.1; 0.0.0.0 in Docker)."),
    click.option("--port", type=int, help="Port to bind (default 8080)."),
    click.option("--workers", type=int, help="gunicorn worker processes (default 2)."),
    click.option("--threads", type=int, help="Threads per worker (default 8)."),
)


@click.command()
@_server_options
@click.pass_obj
def serve(
    obj: Context, host: str | None, port: int | None, workers: int | None, threads: int | None
) -> None:
    """Serve the HTTP API with gunicorn (gthread workers)."""
    settings = obj.settings(host=host, port=port, workers=workers, threads=threads)
    from cli.server import ensure_port_free, metrics_directory_of_run, run_gunicorn

    ensure_port_free(settings.host, settings.port)
    with metrics_directory_of_run():  # before anything imports prometheus_client
        run_gunicorn(settings)


@click.command()
@_server_options
@click.option("--no-controller", is_flag=True, help="Serve the API only (no checks run).")
@click.pass_obj
def up(
    obj: Context,
    host: str | None,
    port: int | None,
    workers: int | None,
    threads: int | None,
    no_controller: bool,
) -> None:
    """Run everything on one machine: migrate the store, start the controller, serve the API."""
    settings = obj.settings(host=host, port=port, workers=workers, threads=threads)
    from cli.server import ensure_port_free, metrics_directory_of_run

    ensure_port_free(settings.host, settings.port)
    # Every process of the run (the web workers, the controller) writes its metrics there,
    # and `/metrics` adds them up; before anything imports prometheus_client.
    with metrics_directory_of_run():
        _up(obj, settings, no_controller)


def _up(obj: Context, settings: Settings, no_controller: bool) -> None:
    from controller.crypto import load_secret_box

    load_secret_box(settings, create=True)
    if not no_controller:
        from controller.scheduler import ensure_controller_can_start

        # Refuse the whole start, not only its controller: `up` without one is half a server.
        ensure_controller_can_start(settings.effective_database_url)
    from controller.store import migrate

    revision = migrate.upgrade(obj.database(), "head")
    click.echo(
        f"driftgate {__version__}: database at revision {revision}; "
        f"serving on http://{settings.host}:{settings.port}",
        err=True,
    )
    from cli.server import controller_supervisor, run_gunicorn

    # The controller is restarted when it dies; `up` exits with status 3 when it keeps dying
    # (cli/supervision.py).
    supervisor = None if no_controller else controller_supervisor(settings, obj.config)
    if supervisor is not None:
        supervisor.start()
    try:
        run_gunicorn(settings, supervisor)
    finally:
        if supervisor is not None:
            supervisor.stop(timeout=60)


@click.command()
@click.option(
    "--concurrency",
    type=click.IntRange(1, 64),
    default=8,
    show_default=True,
    help="Checks run at once.",
)
@click.option("--tick", type=float, default=5.0, show_default=True, help="Seconds between rounds.")
@click.option(
    "--lease",
    type=float,
    default=20.0,
    show_default=True,
    help="Seconds a claimed check is reserved; a crashed worker's checks are retried after it.",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    help="Serve this controller's own Prometheus /metrics on this port (on metrics_host, "
    "127.0.0.1 by default); under `driftgate up` the web port serves them.",
)
# `driftgate up` passes its pid: the controller it starts dies with it (cli/supervision.py).
@click.option("--parent", type=int, hidden=True)
@click.pass_obj
def controller(
    obj: Context,
    concurrency: int,
    tick: float,
    lease: float,
    metrics_port: int | None,
    parent: int | None,
) -> None:
    """Run the controller: schedule and run checks, deliver events (no HTTP serving).

    With --metrics-port, it serves its own Prometheus /metrics there."""
    import logging
    import signal
    import threading

    if parent is not None:
        from cli.supervision import die_with_parent

        die_with_parent(parent)
    from controller import tracing
    from controller.crypto import load_secret_box
    from controller.logs import configure_logging
    from controller.monitoring import service as monitoring
    from controller.scheduler import Controller
    from controller.settings import process_environment
    from controller.store import migrate
    from controller.store.db import Database

    settings = obj.settings()
    configure_logging(settings)
    monitoring.configure(settings)
    tracing.setup("controller")  # when the OpenTelemetry variables ask for it
    # Every worker, delivery thread, the lease thread and the ticker may hold one at once.
    pool_size = concurrency + settings.delivery_concurrency + 4
    database = Database(
        settings.effective_database_url,
        pool_size=pool_size,
        connect_timeout=settings.database_connect_timeout_seconds,
        statement_timeout=settings.database_controller_statement_timeout_seconds,
    )
    current, head = migrate.current_revision(database), migrate.head_revision(database)
    if current != head and migrate.is_ahead(current):
        # A newer release migrated the store: a rolling upgrade is under way, and its
        # migrations only expand (docs/operations.md, "Upgrading").
        logging.getLogger("driftgate.controller").warning(
            "store.schema_ahead", extra={"fields": {"revision": current, "release": head}}
        )
    elif current != head:
        raise ConfigError(
            f"the database schema is at {current or 'none'}; run `driftgate db upgrade`"
        )
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    runner = Controller(
        settings,
        database,
        load_secret_box(settings, create=True),
        concurrency=concurrency,
        tick_seconds=tick,
        lease=timedelta(seconds=lease),
        env=process_environment(),
    )
    metrics = (
        None if metrics_port is None else monitoring.serve_metrics(settings, database, metrics_port)
    )
    runner.start()
    stop.wait()
    runner.stop()
    tracing.shutdown()  # the last spans go out
    if metrics is not None:
        metrics.stop()
    database.dispose()
