"""Grouped changes: one row per cause, not one per operation that reaches it.

A vendor schema that many operations reference (Stripe's `charge`) yields the same change once
per operation; the engines record where it lives (`Change.origin`). Grouping keeps one change
per (rule, severity, origin, values, ignored) with `affected`: the operations it reaches, so a
change to a shared schema is read once. Changes without an origin (an operation's own
parameters, an MCP tool) stand alone. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from controller.model.change import Change


def group_changes(changes: Iterable[Change]) -> list[Change]:
    """The changes grouped by cause, in the order each cause first appears; a grouped
    change is its shortest-path occurrence with `affected` set (sorted, without repeats)."""
    groups: dict[tuple[Any, ...], list[Change]] = {}
    alone: list[tuple[int, Change]] = []
    order: dict[tuple[Any, ...], int] = {}
    for index, change in enumerate(changes):
        if change.origin is None:
            alone.append((index, change))
            continue
        key = (
            change.rule,
            change.severity,
            change.origin,
            change.ignored,
            _frozen(change.before),
            _frozen(change.after),
        )
        if key not in groups:
            groups[key] = []
            order[key] = index
        groups[key].append(change)
    placed = [(index, change) for index, change in alone]
    for key, members in groups.items():
        first = min(members, key=lambda c: (len(c.path), c.path))
        affected = sorted({_where(m) for m in members})
        placed.append((order[key], first.model_copy(update={"affected": affected})))
    return [change for _, change in sorted(placed, key=lambda pair: pair[0])]


def _where(change: Change) -> str:
    location = change.location
    if location is not None and (location.operation or location.tool):
        return str(location.operation or location.tool)
    return change.path


def _frozen(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)
