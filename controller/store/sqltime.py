"""Time arithmetic in SQL that reads the same on SQLite and Postgres: `epoch_seconds(column)`
is a UTC timestamp as seconds since 1970 (SQLite: from `julianday` of the naive UTC text
`UTCDateTime` stores; Postgres: `extract(epoch ...)` of the timestamptz). The portfolio views
bucket, subtract and compare times with it inside their aggregates."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Float
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement


class epoch_seconds(FunctionElement[float]):  # noqa: N801 - reads as a SQL function
    type = Float()
    inherit_cache = True
    name = "epoch_seconds"


@compiles(epoch_seconds, "sqlite")
def _sqlite(element: epoch_seconds, compiler: Any, **kw: Any) -> str:
    (column,) = list(element.clauses)
    return f"((julianday({compiler.process(column, **kw)}) - 2440587.5) * 86400.0)"


@compiles(epoch_seconds, "postgresql")
def _postgres(element: epoch_seconds, compiler: Any, **kw: Any) -> str:
    (column,) = list(element.clauses)
    return f"extract(epoch from {compiler.process(column, **kw)})"
