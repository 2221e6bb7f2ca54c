"""Grouped changes: one row per cause, not one per operation that reaches it.

A vendor schema that many operations reference (Stripe's `charge`) yields the same change once
per operation; the engines record where it lives (`Change.origin`). Grouping keeps one change
per (rule, severity, origin, values, ignored) with `affected`: the operations it reaches, so a
change to a shared schema is read once. Changes without an origin (an operation's own
parameters, an MCP tool) stand alone. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

from controller.diffs.core import Causes, cause_key, with_causes
from controller.model.change import Change, Severity


def group_changes(changes: Iterable[Change]) -> list[Change]:
    """The changes grouped by cause, in the order each cause first appears; a grouped
    change is its first occurrence with `affected` set (sorted, without repeats). The same
    result as the OpenAPI engine's own grouping (`DiffOptions(grouped=True)`)."""
    out: list[Change] = []
    causes: Causes = {}
    for change in changes:
        if change.origin is None:
            out.append(change)
            continue
        key = cause_key(change.rule, change.origin, change.before, change.after)
        if change.ignored:
            key = (*key[:3], key[3] + "|ignored")
        places = change.affected or [_where(change)]  # grouping a grouped list changes nothing
        met = causes.get(key)
        if met is not None:
            met[1].extend(places)
            continue
        causes[key] = (change, list(places))
        out.append(change)
    return with_causes(out, causes)


def _where(change: Change) -> str:
    location = change.location
    if location is not None and (location.operation or location.tool):
        return str(location.operation or location.tool)
    return change.path


def occurrences(changes: Iterable[Change]) -> dict[str, int]:
    """(cause, operation) pairs by severity: what a grouped report stands for."""
    counts = {severity.value: 0 for severity in Severity}
    for change in changes:
        if not change.ignored:
            counts[change.severity.value] += len(change.affected) if change.affected else 1
    return counts
