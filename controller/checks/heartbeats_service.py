"""Controller heartbeats (issue 40, point 4): whether any controller is running checks.

Each controller process writes its row of `controller_heartbeats` on every tick (one upsert
by primary key, its own short transaction) and deletes it when it stops cleanly. Readers
(`/health/ready`, the console's banner) take the newest row, one step down the `beat_at`
index: `alive` while it is younger than `STALE_TICKS` ticks (at least `STALE_FLOOR_SECONDS`),
`stale` after, `absent` when no controller has a row. The web process does not need a
controller to serve (a web replica beside controllers elsewhere is a valid deployment), so
readiness reports this and does not fail on it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite

from controller.model.base import ApiModel
from controller.store.db import Database
from controller.store.models import ControllerHeartbeat

STALE_TICKS = 3
STALE_FLOOR_SECONDS = 60.0
FORGET_AFTER = timedelta(days=1)  # a row this old is a controller long dead: deleted

ControllerState = Literal["alive", "stale", "absent"]


class ControllerHealth(ApiModel):
    state: ControllerState
    last_heartbeat_at: datetime | None
    age_seconds: float | None


def beat(
    database: Database, worker: str, started_at: datetime, tick_seconds: float, now: datetime
) -> None:
    """Record that `worker` is alive at `now` (a single-row upsert)."""
    values = {
        "worker": worker,
        "started_at": started_at,
        "beat_at": now,
        "tick_seconds": tick_seconds,
    }
    dialect = sqlite if database.is_sqlite else postgresql
    statement = dialect.insert(ControllerHeartbeat).values(values)
    statement = statement.on_conflict_do_update(
        index_elements=[ControllerHeartbeat.worker], set_={"beat_at": now}
    )
    with database.transaction() as session:
        session.execute(statement)


def forget(database: Database, worker: str, now: datetime) -> None:
    """Delete `worker`'s row (it stops cleanly) and any left by controllers dead for long."""
    with database.transaction() as session:
        session.execute(
            delete(ControllerHeartbeat).where(
                (ControllerHeartbeat.worker == worker)
                | (ControllerHeartbeat.beat_at < now - FORGET_AFTER)
            )
        )


def controller_health(database: Database, now: datetime) -> ControllerHealth:
    """The newest heartbeat of any controller, and what it says at `now`."""
    with database.engine.connect() as connection:
        newest = connection.execute(
            select(ControllerHeartbeat.beat_at, ControllerHeartbeat.tick_seconds)
            .order_by(ControllerHeartbeat.beat_at.desc())
            .limit(1)
        ).first()
    if newest is None:
        return ControllerHealth(state="absent", last_heartbeat_at=None, age_seconds=None)
    beat_at, tick_seconds = newest
    age = max(0.0, (now - beat_at).total_seconds())
    alive = age <= max(STALE_FLOOR_SECONDS, STALE_TICKS * tick_seconds)
    return ControllerHealth(
        state="alive" if alive else "stale", last_heartbeat_at=beat_at, age_seconds=round(age, 1)
    )
