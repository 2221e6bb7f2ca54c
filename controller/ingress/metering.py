"""Validation metering: the quota counters, one atomic statement per validation.

The org's counter for the month is an upsert that only increments below the quota
(`INSERT ... ON CONFLICT DO UPDATE ... WHERE used < quota RETURNING used`); when no row comes
back the quota is used up. One statement, so two racing requests can never both take the
last unit, on SQLite (one writer) or Postgres (the row lock of the conflicting row), across
gunicorn workers and replicas. A trial session counts on its own row the same way. The
caller's `X-Service-Source` label is counted beside, for reporting only.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from typing import Any, cast

from sqlalchemy import Table, bindparam, case, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from controller.store.models import TrialSession, ValidationMeter, ValidationSource


def period_of(now: datetime) -> str:
    """The calendar month (UTC) a validation counts in: `YYYY-MM`."""
    return now.strftime("%Y-%m")


_METER = cast(Table, ValidationMeter.__table__)
_SOURCES = cast(Table, ValidationSource.__table__)
_TRIALS = cast(Table, TrialSession.__table__)


@lru_cache(maxsize=8)
def _take_org_statement(dialect: str, limited: bool) -> Any:
    """The upsert, built once per dialect (building it per request costs more than running it)."""
    insert = sqlite.insert if dialect == "sqlite" else postgresql.insert
    stmt = insert(_METER).values(org_id=bindparam("org_id"), period=bindparam("period"), used=1)
    return stmt.on_conflict_do_update(
        index_elements=[_METER.c.org_id, _METER.c.period],
        set_={"used": _METER.c.used + 1},
        where=(_METER.c.used < bindparam("quota")) if limited else None,
    ).returning(_METER.c.used)


def take_org(session: Session, org_id: str, quota: int, now: datetime) -> int | None:
    """Count one validation for the org this month; the count after it, or None when the
    quota (0: none) is used up and nothing was counted."""
    stmt = _take_org_statement(session.get_bind().dialect.name, bool(quota))
    values: dict[str, Any] = {"org_id": org_id, "period": period_of(now)}
    if quota:
        values["quota"] = quota
    used = session.connection().execute(stmt, values).scalar()
    if used is None or (quota and used > quota):
        return None
    return int(used)


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
        org_id=bindparam("org_id"), period=bindparam("period"), source=bindparam("source"), used=1
    )
    return stmt.on_conflict_do_update(
        index_elements=[_SOURCES.c.org_id, _SOURCES.c.period, _SOURCES.c.source],
        set_={"used": _SOURCES.c.used + 1},
    )


def count_source(session: Session, org_id: str, source: str, now: datetime) -> None:
    stmt = _source_statement(session.get_bind().dialect.name)
    session.execute(stmt, {"org_id": org_id, "period": period_of(now), "source": source[:100]})
