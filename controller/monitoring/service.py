"""`GET /metrics`: the Prometheus exposition of one host's driftgate processes, and what is
read from the store when Prometheus asks.

Two parts make an answer:

- the processes' own counters and histograms (`controller.metrics`): under `driftgate serve`
  or `up`, every process of the run (the gunicorn workers, the controller `up` started)
  writes them to the run's directory and they are added up here (prometheus_client's
  `MultiProcessCollector`); a process on its own (`driftgate controller --metrics-port`)
  answers its own, with prometheus_client's process metrics;
- `StoreCollector`: gauges read from the database at scrape time, in a handful of aggregate
  queries (watches by status, open incidents, queued jobs and their lag, leases running and
  expired). They are the store's, the same from every process that serves them: aggregate
  them with `max`, not `sum`. A database that does not answer is itself the answer:
  `driftgate_database_up 0` and no store gauges, never an error without metrics.

`metrics_app` is the WSGI application that serves both (prometheus_client's own, which
chooses the text or OpenMetrics format and compresses on request), behind the bearer token of
`metrics_token` when it is set; the web server routes `/metrics` to it (`web.metrics`) and
`serve_metrics` runs it on a port of its own for a controller. The token is compared in
constant time and never logged.
"""

from __future__ import annotations

import hmac
import logging
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import REGISTRY, CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector
from sqlalchemy import ColumnElement, case, func, select
from sqlalchemy.orm import Session

from controller import __version__, metrics
from controller.drift.incidents import ACTIVE
from controller.errors import ConfigError
from controller.logs import log
from controller.model.watch import DriftStatus
from controller.settings import Settings, metrics_directory
from controller.store.db import Database
from controller.store.jobs import CHECK, RECONCILE
from controller.store.models import Incident, Job, Watch

logger = logging.getLogger("driftgate.metrics")

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
# The longest a scrape waits for the database to answer a ping before it says it is down.
PING_BUDGET_SECONDS = 1.0
REALM = 'Bearer realm="driftgate metrics"'


class StoreCollector(Collector):
    """The store's gauges, read when Prometheus scrapes (see the module docstring)."""

    def __init__(
        self,
        database: Database,
        *,
        org_label: bool = False,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.database = database
        self.org_label = org_label
        self.clock = clock

    def collect(self) -> Iterator[Metric]:
        yield _info()
        up = GaugeMetricFamily(
            "driftgate_database_up",
            "1 when the database answered this scrape's queries, 0 when it did not.",
        )
        try:
            self.database.ready(budget=PING_BUDGET_SECONDS)
            with self.database.session() as session:
                families = list(self._read(session, self.clock()))
        except Exception as exc:  # noqa: BLE001 - a scrape always answers
            if self.database.unavailable(exc) is None:
                logger.error("metrics.store_read_failed", exc_info=exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families

    def _read(self, session: Session, now: datetime) -> Iterator[Metric]:
        org: tuple[str, ...] = ("org",) if self.org_label else ()

        watches = GaugeMetricFamily(
            "driftgate_watches", "Watches by driftStatus.", labels=("status", *org)
        )
        by_org = [Watch.org_id] if org else []
        counts = _counts(session, [Watch.drift_status, *by_org])
        if not org:  # every status, so that a series does not vanish at 0
            counts = {(s.value,): 0 for s in DriftStatus} | counts
        _add(watches, counts)
        yield watches

        incidents = GaugeMetricFamily(
            "driftgate_incidents_open",
            "Incidents not resolved, by state (open, acknowledged).",
            labels=("state", *org),
        )
        by_org = [Incident.org_id] if org else []
        counts = _counts(session, [Incident.status, *by_org], Incident.status.in_(ACTIVE))
        if not org:
            counts = {(state,): 0 for state in ACTIVE} | counts
        _add(incidents, counts)
        yield incidents

        # One read of the queue: its depth by kind (and org), and the oldest due job of each.
        queued = GaugeMetricFamily(
            "driftgate_jobs_queued",
            "Jobs waiting in the job table (due or not), by kind.",
            labels=("kind", *org),
        )
        lag = GaugeMetricFamily(
            "driftgate_job_lag_seconds",
            "How long the oldest due job has waited past its time, by kind (0: none waits).",
            labels=("kind",),
        )
        job_org: list[Any] = [func.coalesce(Job.org_id, "")] if org else []
        depth: dict[tuple[str, ...], int] = {}
        oldest: dict[str, datetime] = {}
        for row in session.execute(
            select(
                func.min(case((Job.run_after <= now, Job.run_after))),
                func.count(),
                Job.kind,
                *job_org,
            )
            .where(Job.status == "queued")
            .group_by(Job.kind, *job_org)
        ):
            due, count, labels = row[0], int(row[1]), tuple(str(v) for v in row[2:])
            depth[labels] = count
            if due is not None:
                due = _utc(due)
                oldest[labels[0]] = min(oldest.get(labels[0], due), due)
        kinds = {CHECK, RECONCILE} | {labels[0] for labels in depth}
        if not org:
            depth = {(kind,): 0 for kind in kinds} | depth
        _add(queued, depth)
        for kind in sorted(kinds):
            waited = (now - oldest[kind]).total_seconds() if kind in oldest else 0.0
            lag.add_metric([kind], max(0.0, waited))
        yield queued
        yield lag

        leases = GaugeMetricFamily(
            "driftgate_job_leases",
            "Jobs running under a lease, by kind and state: running (lease current) or expired "
            "(its controller died or was cut off; the reaper hands it on).",
            labels=("kind", "state"),
        )
        held: dict[str, tuple[int, int]] = {}
        for kind, count, expired in session.execute(
            select(
                Job.kind,
                func.count(),
                func.coalesce(func.sum(case((Job.lease_expires_at < now, 1), else_=0)), 0),
            )
            .where(Job.status == "running")
            .group_by(Job.kind)
        ):
            held[str(kind)] = (int(count) - int(expired), int(expired))
        for kind in sorted(kinds | set(held)):
            running, gone = held.get(kind, (0, 0))
            leases.add_metric([kind, "running"], running)
            leases.add_metric([kind, "expired"], gone)
        yield leases


def _counts(
    session: Session, columns: list[Any], *where: ColumnElement[bool]
) -> dict[tuple[str, ...], int]:
    """`count(*)` of the rows (matching `where`) grouped by `columns`, by their values."""
    rows = session.execute(select(func.count(), *columns).where(*where).group_by(*columns))
    return {tuple(str(v) for v in row[1:]): int(row[0]) for row in rows}


def _add(family: GaugeMetricFamily, counts: dict[tuple[str, ...], int]) -> None:
    for labels, count in sorted(counts.items()):
        family.add_metric(list(labels), count)


def _info() -> Metric:
    info = GaugeMetricFamily(
        "driftgate_build_info", "The driftgate version serving; always 1.", labels=("version",)
    )
    info.add_metric([__version__], 1)
    return info


def _utc(value: datetime | str) -> datetime:
    """A timestamp from an aggregate (SQLite gives its text back when the type is lost)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


class _ThisProcess(Collector):
    """This process's own registry (its instruments and prometheus_client's process
    metrics), when no directory of a run gathers several processes."""

    def collect(self) -> Iterable[Metric]:
        return REGISTRY.collect()


def configure(settings: Settings) -> None:
    """This process's instruments as the settings want them (the `org` label or not)."""
    metrics.configure(org_label=settings.metrics_org_label)


def metrics_registry(settings: Settings, database: Database) -> CollectorRegistry:
    """What a scrape collects: the run's processes (or this one) and the store's gauges."""
    registry = CollectorRegistry()
    # The store first: a scrape that meets the database down counts it in the same answer.
    registry.register(StoreCollector(database, org_label=settings.metrics_org_label))
    directory = metrics_directory()
    if directory is not None:
        MultiProcessCollector(registry, path=str(directory))  # type: ignore[no-untyped-call]
    else:
        registry.register(_ThisProcess())
    return registry


def metrics_app(settings: Settings, database: Database) -> WSGIApp:
    """The WSGI application of `GET /metrics` (see the module docstring)."""
    exposition = make_wsgi_app(metrics_registry(settings, database))
    secret = settings.metrics_token
    expected = secret.get_secret_value().encode() if secret is not None else None

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if expected is not None and not _bearer_matches(
            environ.get("HTTP_AUTHORIZATION", ""), expected
        ):
            body = (
                b'{"error":"unauthorized","message":"GET /metrics needs the metrics token: '
                b'Authorization: Bearer <metrics_token>"}'
            )
            start_response(
                "401 Unauthorized",
                [
                    ("Content-Type", "application/json"),
                    ("Content-Length", str(len(body))),
                    ("WWW-Authenticate", REALM),
                ],
            )
            return [body]
        answer: Iterable[bytes] = exposition(environ, start_response)
        return answer

    return app


def _bearer_matches(header: str, expected: bytes) -> bool:
    """Whether `Authorization` carries the bearer token `expected` (compared in constant
    time, whatever the header holds)."""
    scheme, _, token = header.strip().partition(" ")
    given = token.strip().encode("utf-8", "surrogateescape")
    matches = hmac.compare_digest(given, expected)
    return scheme.lower() == "bearer" and matches


class _Quiet(WSGIRequestHandler):
    """No access line per scrape on stderr (wsgiref's default)."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - its signature
        return


class MetricsServer:
    """`metrics_app` on a port of its own, in a daemon thread (a controller's own /metrics)."""

    def __init__(self, settings: Settings, database: Database, port: int) -> None:
        host = settings.metrics_host
        server_class: type[ThreadingWSGIServer] = ThreadingWSGIServer
        if ":" in host:

            class ServerV6(ThreadingWSGIServer):
                address_family = socket.AF_INET6

            server_class = ServerV6
        try:
            self.server = make_server(
                host, port, metrics_app(settings, database), server_class, handler_class=_Quiet
            )
        except OSError as exc:
            raise ConfigError(f"cannot serve metrics on {host}:{port}: {exc.strerror}") from None
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(
            target=self.server.serve_forever, name="driftgate-metrics", daemon=True
        )

    def start(self) -> MetricsServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def serve_metrics(settings: Settings, database: Database, port: int) -> MetricsServer:
    """Serve `/metrics` on `metrics_host`:`port` until `stop` (0: a free port)."""
    server = MetricsServer(settings, database, port).start()
    log(logger, logging.INFO, "metrics.serving", host=settings.metrics_host, port=server.port)
    return server
