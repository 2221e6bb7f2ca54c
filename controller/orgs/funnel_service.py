"""Anonymous usage counting: event name and day, nothing that identifies anyone."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Annotated

from pydantic import Field, RootModel, StringConstraints
from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from controller.model.base import ApiModel, BodyDateTime, RequestModel
from controller.store.models import FunnelCounter

EventName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_.:-]{0,63}$")]


class FunnelEvent(RequestModel):
    event: EventName
    occurred_at: BodyDateTime | None = None


class FunnelBatch(RequestModel):
    events: Annotated[list[FunnelEvent], Field(min_length=1, max_length=50)]


class FunnelBody(RootModel[FunnelEvent | FunnelBatch]):
    """One event (`{event}`) or a batch (`{events: [...]}`, at most 50). Nothing else is
    accepted, so no personal data can arrive."""

    def names(self) -> list[str]:
        if isinstance(self.root, FunnelBatch):
            return [e.event for e in self.root.events]
        return [self.root.event]


class FunnelAccepted(ApiModel):
    accepted: int


def count_events(session: Session, names: list[str], now: datetime) -> None:
    """Add the events to today's counters with one upsert per name (safe under concurrency)."""
    day = now.strftime("%Y-%m-%d")
    dialect = sqlite if session.get_bind().dialect.name == "sqlite" else postgresql
    for name, count in sorted(Counter(names).items()):
        stmt = dialect.insert(FunnelCounter).values(event=name, day=day, count=count)
        session.execute(
            stmt.on_conflict_do_update(
                index_elements=[FunnelCounter.event, FunnelCounter.day],
                set_={"count": FunnelCounter.count + stmt.excluded.count},
            )
        )


def totals(session: Session) -> dict[str, int]:
    result: Counter[str] = Counter()
    for row in session.scalars(select(FunnelCounter)):
        result[row.event] += row.count
    return dict(result)
