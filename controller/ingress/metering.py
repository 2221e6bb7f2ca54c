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
from typing import cast

from sqlalchemy import Table, case, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from controller.store.models import TrialSession, ValidationMeter, ValidationSource


def period_of(now: datetime) -> str:
    """The calendar month (UTC) a validation counts in: `YYYY-MM`."""
    return now.strftime("%Y-%m")


def _insert(session: Session):  # type: ignore[no-untyped-def]
    return sqlite.insert if session.get_bind().dialect.name == "sqlite" else postgresql.insert


def take_org(session: Session, org_id: str, quota: int, now: datetime) -> int | None:
    """Count one validation for the org this month; the count after it, or None when the
    quota (0: none) is used up and nothing was counted."""
    table = cast(Table, ValidationMeter.__table__)
    stmt = _insert(session)(table).values(org_id=org_id, period=period_of(now), used=1)
    stmt = stmt.on_conflict_do_update(
        index_elements=[table.c.org_id, table.c.period],
        set_={"used": table.c.used + 1},
        where=(table.c.used < quota) if quota else None,
    ).returning(table.c.used)
    used = session.execute(stmt).scalar()
    if used is None or (quota and used > quota):
        return None
    return int(used)


def take_trial(session: Session, trial_id: str, allowance: int, now: datetime) -> int | None:
    """Count one validation of a trial session this month; the count after it, or None when
    its allowance is used up."""
    period = period_of(now)
    table = cast(Table, TrialSession.__table__)
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


def count_source(session: Session, org_id: str, source: str, now: datetime) -> None:
    table = cast(Table, ValidationSource.__table__)
    stmt = _insert(session)(table).values(
        org_id=org_id, period=period_of(now), source=source[:100], used=1
    )
    session.execute(
        stmt.on_conflict_do_update(
            index_elements=[table.c.org_id, table.c.period, table.c.source],
            set_={"used": table.c.used + 1},
        )
    )
