"""Keyset pages, newest or oldest first: a cursor `<time in µs>.<id>` names the last row of
a page.

Every well-formed position is valid, so a cursor never expires, and a page never repeats or
skips a row that existed when the listing started. Microseconds are computed with integers
(a float timestamp can be off by one).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Select, bindparam, tuple_
from sqlalchemy.orm import InstrumentedAttribute, Session

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def encode_cursor(at: datetime, row_id: str) -> str:
    return f"{(at - _EPOCH) // _MICROSECOND}.{row_id}"


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    micros, _, last_id = cursor.partition(".")
    return _EPOCH + timedelta(microseconds=int(micros)), last_id


def newest_first(
    session: Session,
    stmt: Select[Any],
    at: InstrumentedAttribute[Any],
    row_id: InstrumentedAttribute[Any],
    cursor: str | None,
    limit: int,
) -> tuple[list[Any], str | None]:
    """One page of `stmt` ordered by (`at`, `row_id`) descending, and the next cursor."""
    return _page(session, stmt, at, row_id, cursor, limit, descending=True)


def oldest_first(
    session: Session,
    stmt: Select[Any],
    at: InstrumentedAttribute[Any],
    row_id: InstrumentedAttribute[Any],
    cursor: str | None,
    limit: int,
) -> tuple[list[Any], str | None]:
    """One page of `stmt` ordered by (`at`, `row_id`) ascending, and the next cursor."""
    return _page(session, stmt, at, row_id, cursor, limit, descending=False)


def _page(
    session: Session,
    stmt: Select[Any],
    at: InstrumentedAttribute[Any],
    row_id: InstrumentedAttribute[Any],
    cursor: str | None,
    limit: int,
    *,
    descending: bool,
) -> tuple[list[Any], str | None]:
    # `limit + 1` rows tell whether there is a next page without counting the rest.
    if cursor:
        position, last_id = decode_cursor(cursor)
        # A row-value comparison: both stores seek an index on (..., at, id) to the position
        # (with `at > p OR (at = p AND id > i)` SQLite walked the index from the start).
        row = tuple_(at, row_id)
        after = tuple_(bindparam(None, position, type_=at.type), bindparam(None, last_id))
        stmt = stmt.where(row < after if descending else row > after)
    order = (at.desc(), row_id.desc()) if descending else (at, row_id)
    rows = list(session.scalars(stmt.order_by(*order).limit(limit + 1)))
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    last = rows[-1]
    return rows, encode_cursor(getattr(last, at.key), getattr(last, row_id.key))
