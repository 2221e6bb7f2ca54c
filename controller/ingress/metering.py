"""Validation metering: the quota counters, reserved in blocks by atomic statements.

The org's counter for the month is taken in reservations (`Meter`): an upsert that adds `n`
units only when they all fit under the quota (`INSERT ... ON CONFLICT DO UPDATE ... WHERE
used + n <= quota RETURNING used`); when no row comes back they do not fit. One statement,
so two racing requests can never both take the last unit, on SQLite (one writer) or
Postgres (the row lock of the conflicting row), across gunicorn workers and replicas. A
trial session counts on its own row, one statement per validation. The caller's
`X-Service-Source` label is counted beside, for reporting only.
"""

from __future__ import annotations

import atexit
import threading
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, cast

from sqlalchemy import Table, bindparam, case, event, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from controller.store.models import TrialSession, ValidationMeter, ValidationSource


def period_of(now: datetime) -> str:
    """The calendar month (UTC) a validation counts in: `YYYY-MM`."""
    return now.strftime("%Y-%m")


_METER = cast(Table, ValidationMeter.__table__)
_SOURCES = cast(Table, ValidationSource.__table__)
_TRIALS = cast(Table, TrialSession.__table__)


# Units a process reserves at once at most; near the quota it reserves fewer (an eighth of
# what it last saw left), and one at a time at the very end.
BLOCK = 50


@lru_cache(maxsize=8)
def _reserve_statement(dialect: str, limited: bool) -> Any:
    """The reservation upsert, built once per dialect: `n` more units, only when they all fit
    under the quota (building it per request costs more than running it)."""
    insert = sqlite.insert if dialect == "sqlite" else postgresql.insert
    stmt = insert(_METER).values(
        org_id=bindparam("org_id"), period=bindparam("period"), used=bindparam("n")
    )
    return stmt.on_conflict_do_update(
        index_elements=[_METER.c.org_id, _METER.c.period],
        set_={"used": _METER.c.used + bindparam("n")},
        where=(_METER.c.used + bindparam("n") <= bindparam("quota")) if limited else None,
    ).returning(_METER.c.used)


def _reserve(session: Session, org_id: str, period: str, n: int, quota: int) -> int | None:
    """Take `n` units of the org's month in the request's transaction; the month's count after
    it, or None when they do not fit."""
    values: dict[str, Any] = {"org_id": org_id, "period": period, "n": n}
    if quota:
        values["quota"] = quota
    stmt = _reserve_statement(session.get_bind().dialect.name, bool(quota))
    used = session.connection().execute(stmt, values).scalar()
    if used is None or (quota and used > quota):
        return None
    return int(used)


@dataclass
class _Held:
    left: int = 0  # reserved in the store, not used yet by this process
    seen: int = 0  # the month's count at the last reservation
    engine: Any = None


class Meter:
    """This process's reservations of validation units, per org and month.

    A validation uses a unit this process reserved; only when none is left does it reserve
    more, with one atomic statement that never takes the store's count past the quota. So a
    validation usually writes nothing, however many workers and replicas serve, and no two
    requests can take the last unit. The count in the store is of units reserved: it runs
    ahead of the validations done by at most what the processes still hold (given back when
    a process exits normally)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[tuple[str, str], _Held] = {}
        # Validations by source label not written yet: (org, period, source) -> count.
        self._sources: Counter[tuple[str, str, str]] = Counter()
        atexit.register(self.release)

    def count_source(self, org_id: str, source: str, now: datetime) -> None:
        """Count a validation under its source label; written with the next reservation."""
        with self._lock:
            self._sources[(org_id, period_of(now), source[:100])] += 1

    def _flush_sources(self, session: Session, org_id: str) -> None:
        """Write the org's pending source counts in the request's transaction (the request's
        own org: it exists); they leave the pending ones only when it commits."""
        with self._lock:
            pending = {key: n for key, n in self._sources.items() if key[0] == org_id}
        if not pending:
            return
        stmt = _source_statement(session.get_bind().dialect.name)
        connection = session.connection()
        for (org_id, period, source), n in pending.items():
            connection.execute(stmt, {"org_id": org_id, "period": period, "source": source, "n": n})

        def written(_session: Session) -> None:
            with self._lock:
                self._sources.subtract(pending)
                self._sources = +self._sources

        event.listen(session, "after_commit", written, once=True)

    def take(self, session: Session, org_id: str, quota: int, now: datetime) -> int | None:
        """Use one unit; the validations left this month for the org (an estimate that counts
        other processes' reserves as used; None without a quota), or -1 when none is left.

        A reservation is made in the request's own transaction: this request uses one unit
        of it, and the rest becomes this process's only when that transaction commits (a
        request that fails gives the whole reservation back by rolling it back)."""
        key = (org_id, period_of(now))
        with self._lock:
            held = self._held.get(key)
            if held is not None and held.left > 0:
                held.left -= 1
                return quota - held.seen + held.left if quota else None
            seen = held.seen if held is not None else None
        size = (
            1 if seen is None else BLOCK if not quota else max(1, min(BLOCK, (quota - seen) // 8))
        )
        self._flush_sources(session, org_id)
        used = _reserve(session, org_id, key[1], size, quota)
        if used is None and size > 1:
            size, used = 1, _reserve(session, org_id, key[1], 1, quota)
        if used is None:
            return -1
        engine = session.get_bind()

        def credit(_session: Session) -> None:
            with self._lock:
                kept = self._held.setdefault(key, _Held(engine=engine))
                kept.left += size - 1
                kept.seen = max(kept.seen, used)

        if size > 1:
            event.listen(session, "after_commit", credit, once=True)
        else:
            with self._lock:
                kept = self._held.setdefault(key, _Held(engine=engine))
                kept.seen = max(kept.seen, used)
        with self._lock:
            left = self._held[key].left if key in self._held else 0
        return quota - used + left if quota else None

    def release(self) -> None:
        """Give back what this process reserved and did not use, and write the pending source
        counts (at exit; best effort)."""
        with self._lock:
            held, self._held = self._held, {}
            pending, self._sources = dict(self._sources), Counter()
        engine = next((h.engine for h in held.values() if h.engine is not None), None)
        if pending and engine is not None:
            try:
                stmt = _source_statement(engine.dialect.name)
                with engine.begin() as conn:
                    for (org_id, period, source), n in pending.items():
                        conn.execute(
                            stmt, {"org_id": org_id, "period": period, "source": source, "n": n}
                        )
            except Exception:  # noqa: BLE001, S110 - a store gone at exit loses the counts
                pass
        for (org_id, period), h in held.items():
            if h.left <= 0 or h.engine is None:
                continue
            try:
                with h.engine.begin() as conn:
                    conn.execute(
                        update(_METER)
                        .where(_METER.c.org_id == org_id, _METER.c.period == period)
                        .values(used=_METER.c.used - h.left)
                    )
            except Exception:  # noqa: BLE001, S110 - a store gone at exit keeps the count
                pass


METER = Meter()


def take_org(session: Session, org_id: str, quota: int, now: datetime) -> int | None:
    """Count one validation for the org this month (through this process's reservations);
    the validations left (None without a quota), or -1 when the quota is used up."""
    return METER.take(session, org_id, quota, now)


def take_trial(session: Session, trial_id: str, allowance: int, now: datetime) -> int | None:
    """Count one validation of a trial session this month; the count after it, or None when
    its allowance is used up."""
    period = period_of(now)
    table = _TRIALS
    same = table.c.validations_period == period
    stmt = (
        update(table)
        .where(table.c.id == trial_id, (~same) | (table.c.validations_used < allowance))
        .values(
            validations_used=case((same, table.c.validations_used + 1), else_=1),
            validations_period=period,
        )
        .returning(table.c.validations_used)
    )
    used = session.execute(stmt).scalar()
    if used is None or used > allowance:
        return None
    return int(used)


@lru_cache(maxsize=4)
def _source_statement(dialect: str) -> Any:
    insert = sqlite.insert if dialect == "sqlite" else postgresql.insert
    stmt = insert(_SOURCES).values(
        org_id=bindparam("org_id"),
        period=bindparam("period"),
        source=bindparam("source"),
        used=bindparam("n"),
    )
    return stmt.on_conflict_do_update(
        index_elements=[_SOURCES.c.org_id, _SOURCES.c.period, _SOURCES.c.source],
        set_={"used": _SOURCES.c.used + bindparam("n")},
    )


def count_source(org_id: str, source: str, now: datetime) -> None:
    """Count a validation under the caller's `X-Service-Source` label (written in batches)."""
    METER.count_source(org_id, source, now)
