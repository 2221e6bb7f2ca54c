"""A store seeded with realistic history (watches across vendors and types, months of drift
events, incidents resolved by each path, check jobs), and the same history kept in memory so
tests compute every figure independently. Used by the tests and `bench/portfolio_bench.py`."""

from __future__ import annotations

import json
import random
import uuid
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from controller.store.models import (
    Agent,
    AgentWatch,
    DriftEvent,
    Incident,
    Job,
    Org,
    Watch,
    WatchTag,
)

VENDORS = ("stripe", "github", "twilio", "openai", "slack", "hubspot", "zendesk")
TYPES = ("openapi", "openapi", "rest", "mcp")
STATUSES = ("ok", "ok", "ok", "drifted", "error", "never_run", "disabled")
RESOLUTIONS = ("reverted", "baseline_accepted", "draft_pr_merged", "manual")


def _changes(breaking: int, warning: int) -> bytes:
    """A stored change list with the event's breaking and warning changes."""
    rows = [
        {
            "path": f"/paths/~1v1~1item{n}",
            "severity": severity,
            "summary": f"{severity} change {n}",
            "rule": "endpoint-removed"
            if severity == "breaking"
            else "response-property-became-optional",
            "changeType": "removed",
            "agentAction": "update_client_schema",
        }
        for n, severity in enumerate(["breaking"] * breaking + ["warning"] * warning)
    ]
    return zlib.compress(json.dumps(rows).encode(), 1)


@dataclass
class History:
    org_id: str
    watches: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    incidents: list[dict[str, Any]] = field(default_factory=list)
    jobs: list[dict[str, Any]] = field(default_factory=list)
    production: set[str] = field(default_factory=set)  # watch ids an agent in production uses


def seed(
    session: Session,
    name: str,
    now: datetime,
    *,
    watches: int = 150,
    events: int = 2000,
    incidents: int = 200,
    jobs: int = 300,
    seed_value: int = 7,
    org_id: str | None = None,
) -> History:
    """Seed into the org `org_id`, or into a new pro org named `name`."""
    rng = random.Random(seed_value)
    if org_id is None:
        org = Org(name=name, plan="pro")
        session.add(org)
        session.flush()
        org_id = org.id
    history = History(org_id)
    watch_rows, tag_rows = [], []
    for i in range(watches):
        vendor = rng.choice(VENDORS)
        status = rng.choice(STATUSES)
        interval = rng.choice((15, 60, 360))
        checked = (
            None
            if status == "never_run"
            else now - timedelta(minutes=rng.choice((5, 20, 90, 800, 3000)) + 0.5)
        )
        tagged = rng.random() < 0.3  # a vendor tag that differs from the host
        tags = [f"team:{rng.choice(('billing', 'growth', 'core'))}"]
        if tagged:
            tags.append(f"vendor:{vendor}-tagged")
        watch = {
            "id": str(uuid.uuid4()),
            "org_id": org_id,
            "name": f"{name}-w{i:04d}",
            "url": f"https://api.{vendor}.example.com/v{i % 3}/openapi.json",
            "watch_type": rng.choice(TYPES),
            "drift_status": status,
            "interval_minutes": interval,
            "last_checked_at": checked,
            "vendor": f"{vendor}-tagged" if tagged else f"api.{vendor}.example.com",
            "created_at": now - timedelta(days=200),
            "updated_at": now - timedelta(days=1),
        }
        watch_rows.append(watch)
        tag_rows += [
            {"watch_id": watch["id"], "tag": tag, "position": p} for p, tag in enumerate(tags)
        ]
        history.watches.append({**watch, "tags": tags})
    session.execute(insert(Watch), watch_rows)
    session.execute(insert(WatchTag), tag_rows)

    agent = Agent(
        org_id=org_id, key=f"{name}-agent", slug=f"{name}-agent", environment="production"
    )
    session.add(agent)
    session.flush()
    for position, watch in enumerate(rng.sample(history.watches, k=min(20, watches))):
        session.add(
            AgentWatch(agent_id=agent.id, position=position, ref=watch["id"], watch_id=watch["id"])
        )
        history.production.add(watch["id"])

    event_rows = []
    for _ in range(events):
        watch = rng.choice(history.watches)
        breaking = rng.choice((0, 0, 1, 3))
        warning = rng.choice((0, 1, 2))
        event = {
            "id": str(uuid.uuid4()),
            "org_id": org_id,
            "watch_id": watch["id"],
            "detected_at": now - timedelta(minutes=rng.randrange(1, 150 * 24 * 60) + 0.5),
            "breaking_count": breaking,
            "warning_count": warning,
            "info_count": rng.choice((0, 1, 4)) if breaking + warning else 1,
            "changes": _changes(breaking, warning),
            "agent_actions": [],
        }
        event_rows.append(event)
        history.events.append(event)
    session.execute(insert(DriftEvent), event_rows)

    incident_rows = []
    for _ in range(incidents):
        watch = rng.choice(history.watches)
        opened = now - timedelta(minutes=rng.randrange(60, 200 * 24 * 60) + 0.5)
        status = rng.choice(("open", "acknowledged", "resolved", "resolved", "resolved"))
        resolved_at = resolution = None
        if status == "resolved":
            resolved_at = min(
                now - timedelta(minutes=1), opened + timedelta(minutes=rng.randrange(5, 20000))
            )
            resolution = rng.choice(RESOLUTIONS)
        incident = {
            "id": str(uuid.uuid4()),
            "org_id": org_id,
            "watch_id": watch["id"],
            "status": status,
            "opened_at": opened,
            "breaking_count": rng.randrange(1, 5),
            "resolved_at": resolved_at,
            "resolution": resolution,
        }
        incident_rows.append(incident)
        history.incidents.append(incident)
    session.execute(insert(Incident), incident_rows)

    job_rows = []
    for n in range(jobs):
        watch = rng.choice(history.watches)
        finished = now - timedelta(minutes=rng.randrange(1, 48 * 60) + 0.5)
        status = "failed" if rng.random() < 0.05 else "done"
        outcome = rng.choice(("ok", "ok", "drifted", "error"))
        job = {
            "kind": "check",
            "key": f"check:{watch['id']}",
            "period": f"seed:{name}:{n}",
            "status": status,
            "run_after": finished,
            "payload": {"watchId": watch["id"]},
            "result": None if status == "failed" else {"outcome": outcome},
            "created_at": finished,
            "finished_at": finished,
        }
        job_rows.append(job)
        history.jobs.append({**job, "watch_id": watch["id"]})
    session.execute(insert(Job), job_rows)
    return history
