"""The process's Prometheus instruments, and the one way every layer records on them.

Every counter and histogram driftgate keeps is defined here, with the official
`prometheus_client`, and recorded through the functions below (one call at each recording
site: the check engine, preflight, the outbox delivery, reconcile, the job claims and the
reaper, the store's view of its outages). The values are this process's; `/metrics`
(`controller.monitoring.service`) adds what is read from the store at scrape time (watches by
status, open incidents, the job queue, leases, whether the database answers).

Under `driftgate serve` and `up`, each process (every gunicorn worker, the controller `up`
starts) writes its values to files in a directory of the run (prometheus_client's
multiprocess mode: `PROMETHEUS_MULTIPROC_DIR`, set by `cli.server` before prometheus_client is
first imported, which this module does when its process first records), and whichever process
serves `/metrics` adds them up. Elsewhere (a controller
alone, the CLI, the tests) the values live in this process's memory.

Labels are bounded: a watch type, a result, a channel, a source, a job kind, never a watch.
The `org` label (`metrics_org_label`, off by default) is the one that grows with use;
`configure` switches it on, before anything is recorded.

Recording costs a few microseconds (a dictionary lookup, an addition under prometheus_client's
lock; an `mmap` write in multiprocess mode): see docs/metrics.md.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # imported when a process first records: a CLI command that never does
    from prometheus_client import Counter, Histogram  # does not load prometheus_client

NAMESPACE = "driftgate"
_Metric = TypeVar("_Metric", "Counter", "Histogram")

# Seconds. A check is a fetch (up to the fetch deadline, 60 s by default) plus a diff; a
# preflight is a few milliseconds; a delivery is bounded by its deadline (15 s); a reconcile
# fetches a repository.
CHECK_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
PREFLIGHT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
DELIVERY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 30.0)
RECONCILE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

# The results of a reconcile that count as an error of its source.
RECONCILE_ERRORS = frozenset({"failed", "stalled"})


class Instruments:
    """The instruments of one process, with or without the `org` label."""

    def __init__(self, *, org_label: bool) -> None:
        from prometheus_client import REGISTRY, Counter, Histogram, disable_created_metrics

        # No `_created` series beside each counter and histogram (as in multiprocess mode,
        # which has none): half the series, and nothing a dashboard reads.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.org_label = org_label
        self._series: dict[tuple[int, tuple[str, ...]], Any] = {}
        org: tuple[str, ...] = ("org",) if org_label else ()
        kw: dict[str, Any] = {"namespace": NAMESPACE, "registry": REGISTRY}
        self.checks = Counter(
            "checks",
            "Checks of watched contracts, by watch type and result "
            "(unchanged, baseline, changed, error, skipped).",
            ("type", "result", *org),
            **kw,
        )
        self.check_seconds = Histogram(
            "check_duration_seconds",
            "Time of one check (fetch, diff, record), by watch type.",
            ("type", *org),
            buckets=CHECK_BUCKETS,
            **kw,
        )
        self.preflights = Counter(
            "preflight",
            "Preflight answers, by decision (allowed, blocked, policy_blocked).",
            ("decision", *org),
            **kw,
        )
        self.preflight_seconds = Histogram(
            "preflight_duration_seconds",
            "Time of one preflight, from the request's arrival to its recorded decision.",
            org,
            buckets=PREFLIGHT_BUCKETS,
            **kw,
        )
        self.deliveries = Counter(
            "deliveries",
            "Delivery attempts of outbox messages, by channel and result (success, failure).",
            ("channel", "result", *org),
            **kw,
        )
        self.delivery_seconds = Histogram(
            "delivery_duration_seconds",
            "Time of one delivery attempt, by channel.",
            ("channel", *org),
            buckets=DELIVERY_BUCKETS,
            **kw,
        )
        # Sources are few and named in the configuration: a bounded label.
        self.reconciles = Counter(
            "reconciles",
            "Reconciles of git sources, by source and result "
            "(applied, unchanged, stalled, failed, suspended, crashed).",
            ("source", "result"),
            **kw,
        )
        self.reconcile_seconds = Histogram(
            "reconcile_duration_seconds",
            "Time of one reconcile (fetch, load, plan, apply, status), by source.",
            ("source",),
            buckets=RECONCILE_BUCKETS,
            **kw,
        )
        self.reconcile_errors = Counter(
            "reconcile_errors",
            "Reconciles that failed, stalled on invalid files or crashed, by source.",
            ("source",),
            **kw,
        )
        self.jobs_claimed = Counter(
            "jobs_claimed", "Jobs claimed by a controller's workers, by kind.", ("kind",), **kw
        )
        self.jobs_reaped = Counter(
            "jobs_reaped",
            "Running jobs whose lease expired (their controller died or was cut off), handed "
            "on by the reaper, by kind.",
            ("kind",),
            **kw,
        )
        self.database_errors = Counter(
            "database_errors",
            "Uses of the database that failed because it could not answer, by reason: "
            "unreachable, timeout, busy (as the driver or the wait said), refused (at once, "
            "while an outage lasts).",
            ("reason",),
            **kw,
        )
        self.database_outages = Counter(
            "database_outages",
            "Outages of the database this process saw start (it stopped answering).",
            **kw,
        )

    def child(self, metric: _Metric, *values: str) -> _Metric:
        """`metric`'s series for these label values, kept once made: prometheus_client's
        `labels()` checks and locks on every call, a few microseconds; this is a lookup."""
        if not values:
            return metric
        key = (id(metric), values)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = metric.labels(*values)
        return series

    def collectors(self) -> Iterable[Counter | Histogram]:
        from prometheus_client import Counter, Histogram

        return (value for value in vars(self).values() if isinstance(value, Counter | Histogram))


# Made on first use, or by `configure`: a process that switches the `org` label on makes its
# instruments once, with the label (in multiprocess mode a value, once made, stays in the
# process's file).
_instruments: Instruments | None = None
_lock = threading.Lock()


def configure(*, org_label: bool) -> None:
    """Switch the `org` label on or off for this process (the `metrics_org_label` setting);
    called when a process starts, before it records anything."""
    global _instruments
    with _lock:
        if _instruments is not None:
            if org_label == _instruments.org_label:
                return
            from prometheus_client import REGISTRY

            for collector in _instruments.collectors():
                REGISTRY.unregister(collector)
        _instruments = Instruments(org_label=org_label)


def instruments() -> Instruments:
    """The instruments in force (made without the `org` label if nothing configured them)."""
    current = _instruments
    if current is None:
        configure(org_label=False)
        current = _instruments
        assert current is not None
    return current


def _org(m: Instruments, org: str | None) -> tuple[str, ...]:
    return (org or "",) if m.org_label else ()


# -- recording: one call at each site -----------------------------------------------------


def check_done(watch_type: str, result: str, seconds: float, org: str | None = None) -> None:
    """One check of a watch of `watch_type` ended with `result` after `seconds`."""
    m = instruments()
    extra = _org(m, org)
    m.child(m.checks, watch_type, result, *extra).inc()
    m.child(m.check_seconds, watch_type, *extra).observe(seconds)


def preflight_done(decision: str, seconds: float, org: str | None = None) -> None:
    """One preflight answered `decision` (allowed, blocked, policy_blocked) after `seconds`."""
    m = instruments()
    extra = _org(m, org)
    m.child(m.preflights, decision, *extra).inc()
    m.child(m.preflight_seconds, *extra).observe(seconds)


def delivery_done(channel: str, success: bool, seconds: float, org: str | None = None) -> None:
    """One delivery attempt through `channel` succeeded or failed after `seconds`."""
    m = instruments()
    extra = _org(m, org)
    m.child(m.deliveries, channel, "success" if success else "failure", *extra).inc()
    m.child(m.delivery_seconds, channel, *extra).observe(seconds)


def reconcile_done(source: str, result: str, seconds: float) -> None:
    """One reconcile of `source` ended with `result` after `seconds`."""
    m = instruments()
    m.child(m.reconciles, source, result).inc()
    m.child(m.reconcile_seconds, source).observe(seconds)
    if result in RECONCILE_ERRORS:
        m.child(m.reconcile_errors, source).inc()


def reconcile_crashed(source: str) -> None:
    """A reconcile of `source` raised what it did not foresee (its job failed)."""
    m = instruments()
    m.child(m.reconciles, source, "crashed").inc()
    m.child(m.reconcile_errors, source).inc()


def jobs_claimed(kinds: Sequence[str]) -> None:
    """A controller claimed jobs of these kinds (one entry per job)."""
    m = instruments()
    for kind in kinds:
        m.child(m.jobs_claimed, kind).inc()


def jobs_reaped(kinds: Sequence[str]) -> None:
    """The reaper handed on jobs of these kinds whose lease had expired (one entry per job)."""
    m = instruments()
    for kind in kinds:
        m.child(m.jobs_reaped, kind).inc()


def database_error(reason: str) -> None:
    """A use of the database failed because it could not answer (`controller.store.outage`)."""
    m = instruments()
    m.child(m.database_errors, reason).inc()


def database_outage() -> None:
    """An outage of the database started, as this process saw it."""
    instruments().database_outages.inc()
