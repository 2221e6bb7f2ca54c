"""Grouped changes: one row per cause, not one per operation that reaches it.

A vendor schema that many operations reference (Stripe's `charge`) yields the same change once
per operation; the engines record where it lives (`Change.origin`). Grouping keeps one change
per (rule, severity, origin, values, ignored) with `affected`: the operations it reaches, so a
change to a shared schema is read once. Changes without an origin (an operation's own
parameters, an MCP tool) stand alone. Pure: no I/O.

Three totals describe a diff whichever way it is listed (`totals`): causes, the (cause,
operation) pairs they reach, and the places they were met at (one per operation and request or
response: a cause in both the 200 and the error answer of one operation is two places). A
grouped report lists causes, `--flat` lists places.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from controller.diffs.core import (
    Causes,
    cause_key,
    describe,
    escape_pointer,
    field_name,
    with_causes,
)
from controller.diffs.refs import pointer_segments
from controller.diffs.rules import CATALOG, FAMILIES
from controller.model.change import Change, Severity

LEVELS = ("causes", "operations", "places")


def group_changes(changes: Iterable[Change]) -> list[Change]:
    """The changes grouped by cause, in the order each cause first appears; a grouped
    change is its first occurrence with `affected` set (sorted, without repeats) and
    `placeCount`. The same result as the OpenAPI engine's own grouping
    (`DiffOptions(grouped=True)`)."""
    out: list[Change] = []
    causes: Causes = {}
    weights: dict[int, int] = {}
    for change in changes:
        if change.origin is None:
            out.append(change)
            continue
        key = cause_key(change.rule, change.origin, change.before, change.after)
        if change.ignored:
            key = (*key[:3], key[3] + "|ignored")
        places = change.affected or [_where(change)]  # grouping a grouped list changes nothing
        weight = places_of(change)
        met = causes.get(key)
        if met is not None:
            met[1].extend(places)
            weights[id(met[0])] += weight
            continue
        causes[key] = (change, list(places))
        weights[id(change)] = weight
        out.append(change)
    return with_causes(out, causes, weights)


def _where(change: Change) -> str:
    location = change.location
    if location is not None and (location.operation or location.tool):
        return str(location.operation or location.tool)
    return change.path


def reach(change: Change) -> int:
    """How many operations (or tools) a change affects: its group's size, else one."""
    return len(change.affected) if change.affected else 1


def places_of(change: Change) -> int:
    """How many places a change stands for: its `placeCount`, else its reach."""
    return change.placeCount or reach(change)


def occurrences(changes: Iterable[Change]) -> dict[str, int]:
    """(cause, operation) pairs by severity: what a grouped report stands for."""
    counts = {severity.value: 0 for severity in Severity}
    for change in changes:
        if not change.ignored:
            counts[change.severity.value] += reach(change)
    return counts


def totals(grouped: Iterable[Change]) -> dict[str, dict[str, int]]:
    """Causes, (cause, operation) pairs and places by severity, of changes that are not
    ignored, from a grouped list (`group_changes` of a flat one gives the same)."""
    out = {level: {severity.value: 0 for severity in Severity} for level in LEVELS}
    for change in grouped:
        if change.ignored:
            continue
        severity = change.severity.value
        out["causes"][severity] += 1
        out["operations"][severity] += reach(change)
        out["places"][severity] += places_of(change)
    return out


@dataclass(frozen=True)
class Cause:
    """A grouped change told by its cause: the schema and what changed in it."""

    subject: str  # `refund.reason`: the schema, and the field in it
    what: str  # `maxLength 5000 removed`
    operations: int

    @property
    def text(self) -> str:
        """`refund.reason: maxLength 5000 removed`."""
        return f"{self.subject}: {self.what}"


def describe_cause(change: Change) -> Cause | None:
    """The cause of a change that lives in a referenced schema (`Change.origin`), told
    without the operation it was first met through; None for a change of its own place."""
    return cause_of(change.rule, change.origin, change.before, change.after, reach(change))


def cause_of(
    rule_id: str, origin: str | None, before: Any, after: Any, operations: int = 1
) -> Cause | None:
    """`describe_cause` from a change's fields (a stored or served change object)."""
    if origin is None or rule_id not in CATALOG:
        return None
    rule = CATALOG[rule_id]
    family = FAMILIES.get(rule.family)
    segments = pointer_segments(origin)
    name = None
    if family is not None and family.nested_only and segments[-2:-1] == ["properties"]:
        # A membership change (`property 'reason' removed`) belongs to the object holding it.
        name = f"'{segments[-1]}'"
        segments = segments[:-2]
    subject = cause_subject(origin, segments)
    what = describe(rule_id, name=name, before=before, after=after)
    return Cause(subject, what, operations)


def cause_subject(origin: str, segments: list[str] | None = None) -> str:
    """A schema place for people: `#/components/schemas/refund/properties/reason` is
    `refund.reason`; Swagger 2.0's `#/definitions/...` likewise; a place in another file
    names the file; anything else stays a pointer."""
    document, _, _ = origin.partition("#")
    segments = pointer_segments(origin) if segments is None else segments
    if segments[:2] == ["components", "schemas"] and len(segments) > 2:
        schema, rest = segments[2], segments[3:]
    elif segments[:1] == ["definitions"] and len(segments) > 1:
        schema, rest = segments[1], segments[2:]
    else:
        return f"{document}#/" + "/".join(escape_pointer(s) for s in segments)
    field = field_name(tuple(rest))
    text = schema + ("." if field and field[0] not in "[{" else "") + field
    return f"{text} ({document})" if document else text
