"""Helpers of the reconcile tests (real git repositories into the real store): what reconcile
may touch as plain values, a source's row and its conditions, a consumer profile and the
profiles in the store, and the hosted `.driftguard/agents.yaml` fixtures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select

from controller.store.db import Database
from controller.store.models import Agent, IngressProfile, Source, Template, Watch, WatchSet

# The hosted product's agents.yaml files, valid and invalid (README.md there says whence).
HOSTED = Path(__file__).parent / "hosted"


def snapshot(database: Database) -> dict[str, Any]:
    """Everything reconcile may touch, as plain values (to compare before and after)."""
    with database.session() as session:
        return {
            "watches": sorted(
                (w.name, w.url, w.watch_type, w.managed_source, tuple(w.tags))
                for w in session.scalars(select(Watch))
            ),
            "agents": sorted(
                (a.key, a.policy, tuple((b.ref, b.watch_id) for b in a.bindings))
                for a in session.scalars(select(Agent))
            ),
            "templates": sorted(t.name for t in session.scalars(select(Template))),
            "sets": sorted(s.name for s in session.scalars(select(WatchSet))),
        }


def source_row(database: Database, name: str = "fleet") -> Source:
    with database.session() as session:
        row = session.get(Source, name)
        assert row is not None
        return row


def condition(row: Source, kind: str) -> dict[str, Any]:
    return next(c for c in row.conditions if c["type"] == kind)


ORDER_PROFILE = """\
id: order
version: 1
schema:
  type: object
  properties:
    email: {type: string}
  required: [email]
"""


def profiles(database: Database) -> list[tuple[str, int, str | None, str | None]]:
    with database.session() as session:
        return [
            (p.profile_id, p.version, p.managed_source, p.managed_path)
            for p in session.scalars(select(IngressProfile).order_by(IngressProfile.profile_id))
        ]
