"""The id a person typed, found in the store: a whole id, or a unique prefix of one
(`controller.model.ids`), for the operator's commands (`driftgate keys revoke 3f2a9c1e`,
`--org 7d4b...`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from controller.model.ids import SHOWN_CANDIDATES, ambiguous, is_id_prefix, normalized


def by_prefix(
    session: Session,
    id_column: InstrumentedAttribute[str],
    label_column: InstrumentedAttribute[Any],
    ref: str,
    *,
    kind: str,
    where: Sequence[ColumnElement[bool]] = (),
) -> str | None:
    """The id in `id_column` that starts with `ref` among the rows `where` selects; None when
    `ref` is not a prefix or no id starts with it; `Conflict` (`ambiguous_id`, listing the
    candidates with their `label_column`) when several do."""
    if not is_id_prefix(ref):
        return None
    rows = session.execute(
        select(id_column, label_column)
        .where(id_column.startswith(normalized(ref), autoescape=True), *where)
        .order_by(id_column)
        .limit(SHOWN_CANDIDATES + 1)
    ).all()
    if len(rows) > 1:
        found = [(str(i), str(label or "")) for i, label in rows]
        raise ambiguous(kind, ref, found, more=len(rows) > SHOWN_CANDIDATES)
    return str(rows[0][0]) if rows else None
