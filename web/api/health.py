"""Liveness (`/health`, touches nothing) and readiness (`/health/ready`, pings the database).

Under `driftgate serve`, `/health` never reaches a worker thread: the server front answers it
in its event loop (`web.front`), so it answers while every thread waits on the database.
This route answers it elsewhere (the test client, another WSGI server). `/health/ready` runs
on threads of its own there, and waits at most `READY_BUDGET_SECONDS` for the database.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from controller import __version__
from controller.checks.heartbeats_service import ControllerHealth, controller_health
from controller.model.base import ApiModel
from web.api import REGISTRY
from web.db import database
from web.routes import Call

route = REGISTRY.tagged("health")

# Readiness answers within a second whatever the store does: a ping that has not answered by
# then is a 503 (a SQLite write lock held by another process is not: reads go on meanwhile).
READY_BUDGET_SECONDS = 0.5


class HealthOut(ApiModel):
    status: Literal["ok"]
    version: str


class ReadyOut(ApiModel):
    status: Literal["ok"]
    database: Literal["ok"]
    controller: ControllerHealth = Field(
        description="the newest controller heartbeat: `alive`, `stale` (no controller beat "
        "for three ticks, at least a minute: dead or stuck) or `absent` (none runs); reported, "
        "not a readiness condition: this process serves without a controller"
    )


@route("GET /health", "Liveness", auth="none")
def health(call: Call) -> HealthOut:
    """Answers as long as the process serves HTTP; touches neither the database nor the disk."""
    return HealthOut(status="ok", version=__version__)


@route("GET /health/ready", "Readiness", auth="none", errors=(503,))
def health_ready(call: Call) -> ReadyOut:
    """Answers 200 when the database answers a query, else 503 `store_unavailable` with
    `Retry-After`: at once while an outage lasts, otherwise within `READY_BUDGET_SECONDS`.
    The body reports the controllers' heartbeat (one indexed read), which does not decide
    readiness."""
    database().ready(budget=READY_BUDGET_SECONDS)
    return ReadyOut(status="ok", database="ok", controller=controller_health(database(), call.now))
