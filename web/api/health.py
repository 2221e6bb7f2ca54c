"""Liveness (`/health`, touches nothing) and readiness (`/health/ready`, pings the database)."""

from __future__ import annotations

from typing import Literal

from sqlalchemy.exc import SQLAlchemyError

from controller import __version__
from controller.errors import TemporaryError
from controller.model.base import ApiModel
from web.api import REGISTRY
from web.db import database
from web.routes import Call


class HealthOut(ApiModel):
    status: Literal["ok"]
    version: str


class ReadyOut(ApiModel):
    status: Literal["ok"]
    database: Literal["ok"]


@REGISTRY.route(
    "GET", "/health", summary="Liveness", tag="health", auth="none", responses={200: HealthOut}
)
def health(call: Call) -> HealthOut:
    """Answers as long as the process serves HTTP; touches neither the database nor the disk."""
    return HealthOut(status="ok", version=__version__)


@REGISTRY.route(
    "GET",
    "/health/ready",
    summary="Readiness",
    tag="health",
    auth="none",
    responses={200: ReadyOut},
    errors=(503,),
)
def health_ready(call: Call) -> ReadyOut:
    """Answers 200 when the database accepts a query, 503 otherwise."""
    try:
        database().ping()
    except SQLAlchemyError:
        raise TemporaryError("database unreachable", code="database_unavailable") from None
    return ReadyOut(status="ok", database="ok")
