"""Turning raw findings into `Change` objects through the rule catalog.

Engines know *what* changed and *where*; this module knows how each rule is classified and
worded, so every engine produces the same change object (CONTRACT.md).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator
from functools import lru_cache
from typing import Any, Literal, TypeVar

from controller.diffs.jsonschema import Finding, pointer_suffix
from controller.diffs.rules import CATALOG, FAMILIES, ROOT_ASPECTS, Direction
from controller.model.change import Change, Location, Severity

_CHANGE_TYPES = (
    ("removed", "removed"),
    ("deleted", "removed"),
    ("unset", "removed"),
    ("added", "added"),
    ("set", "added"),
)
K = TypeVar("K")
# What a revision did with a key of a keyed surface; "removed" and "added" are also the last
# word of the rules that report it (`tool-removed`, `skill-added`).
Presence = Literal["removed", "kept", "added"]


def escape_pointer(segment: str) -> str:
    """Escape one JSON Pointer segment (RFC 6901)."""
    return segment.replace("~", "~0").replace("/", "~1")


def compare_keys(
    before: Collection[K], after: Collection[K], *, kept_last: bool = False
) -> Iterator[tuple[Presence, K]]:
    """The keys of a keyed surface (operations, parameters, tools, skills ...) on both sides,
    each with what the revision did with it: `before`'s keys in its order, removed or kept,
    then the keys only `after` has. With `kept_last`, the kept keys come after the added
    ones: every key removed or added is reported before what changed in the others."""
    kept: list[K] = []
    for key in before:
        if key not in after:
            yield "removed", key
        elif kept_last:
            kept.append(key)
        else:
            yield "kept", key
    for key in after:
        if key not in before:
            yield "added", key
    for key in kept:
        yield "kept", key


def make_change(
    rule_id: str,
    path: str,
    *,
    location: Location | None = None,
    before: Any = None,
    after: Any = None,
    name: str | None = None,
    detail: str | None = None,
    prefix: str | None = None,
    origin: str | None = None,
) -> Change:
    """Build the change for a catalog rule; the summary comes from the rule's template.
    `origin` names the referenced schema the change lives in (one cause, many operations)."""
    rule = CATALOG[rule_id]
    text = describe(rule_id, name=name, before=before, after=after, detail=detail)
    if prefix:
        text = f"{prefix}: {text}"
    # Fields come from the catalog and the engines, so validation is skipped: large vendor
    # specs yield 10^5 changes and building them validated would dominate the diff time.
    return Change.model_construct(
        path=path,
        severity=rule.severity,
        summary=text,
        rule=rule_id,
        changeType=change_type_of(rule_id),
        before=before,
        after=after,
        location=location,
        agentAction=rule.agent_action,
        ignored=False,
        ignoreReason=None,
        origin=origin,
        affected=None,
        placeCount=None,
    )


def describe(
    rule_id: str,
    *,
    name: str | None = None,
    before: Any = None,
    after: Any = None,
    detail: str | None = None,
) -> str:
    """What changed, in the words of the rule's template (`maxLength 5000 removed`),
    without the place it was found at."""
    return _format(
        CATALOG[rule_id].summary,
        name=name if name is not None else "",
        before=_short(before),
        after=_short(after),
        detail=detail or "",
    )


# Causes met so far in a grouped diff: (rule, origin, before, after) -> the change that
# stands for the cause and the places it was met (`controller.diffs.grouping`).
Causes = dict[tuple[str, str, str, str], tuple[Change, list[str]]]


def cause_key(rule: str, origin: str, before: Any, after: Any) -> tuple[str, str, str, str]:
    """What makes two changes the same cause (also `grouping.group_changes`' key)."""
    return (rule, origin, _frozen(before), _frozen(after))


def _frozen(value: Any) -> str:
    if value is None or isinstance(value, str | int | float | bool):
        return repr(value)
    return json.dumps(value, sort_keys=True, default=str)


def changes_from_findings(
    findings: Iterable[Finding],
    *,
    direction: Direction,
    root_prefix: str,
    nested_prefix: str,
    pointer: str,
    location: Location | None,
    label: str,
    causes: Causes | None = None,
) -> list[Change]:
    """Classify schema findings of one subject (a body, a parameter, a tool input ...).
    With `causes`, a finding whose cause was met before only adds its place to that cause
    (no second change is built: large vendor specs repeat causes 10^4 times)."""
    out: list[Change] = []
    place = (location.operation or location.tool or "") if location is not None else ""
    for f in findings:
        nested = _is_nested(f.path)
        prefix = nested_prefix if nested else root_prefix
        rule_id = f"{prefix}-{f.aspect if nested else ROOT_ASPECTS.get(f.aspect, f.aspect)}"
        if rule_id not in CATALOG:
            # Never silent: a finding no rule names for this subject is still reported.
            rule_id = f"{prefix}-unclassified-difference"
        key = None
        if causes is not None and f.origin is not None:
            key = cause_key(rule_id, f.origin, f.before, f.after)
            met = causes.get(key)
            if met is not None:
                met[1].append(place or pointer + pointer_suffix(f.path))
                continue
        field = field_name(f.path)
        # Membership rules name the property themselves.
        named = CATALOG[rule_id].family in _NAMING
        where = f"{label} property '{field}'" if field and not named else label
        path = pointer + pointer_suffix(f.path)
        change = make_change(
            rule_id,
            path,
            location=location,
            before=f.before,
            after=f.after,
            name=f"'{field}'" if field else (f.name or ""),
            prefix=where,
            origin=f.origin,
        )
        out.append(change)
        if key is not None and causes is not None:
            causes[key] = (change, [place or path])
    return out


def with_causes(
    changes: list[Change], causes: Causes, weights: dict[int, int] | None = None
) -> list[Change]:
    """The changes with each cause's `affected` places set (sorted, without repeats) and
    `placeCount`: how many times the cause was met (one per place recorded, unless
    `weights` gives a count per cause, keyed by the id of the change standing for it)."""
    update = {
        id(change): {
            "affected": sorted(set(places)),
            "placeCount": (weights or {}).get(id(change), len(places)),
        }
        for change, places in causes.values()
    }
    return [
        change.model_copy(update=update[id(change)]) if id(change) in update else change
        for change in changes
    ]


# Families whose summary names the property itself (membership and visibility).
_NAMING = frozenset(fam.aspect for fam in FAMILIES.values() if fam.nested_only)
_PROPERTY_STEPS = frozenset(
    {"properties", "additionalProperties", "patternProperties", "dependentSchemas"}
)


@lru_cache(maxsize=65536)
def _is_nested(path: tuple[str, ...]) -> bool:
    # Array items and composition stay on the subject itself; a property step nests.
    return any(seg in _PROPERTY_STEPS for seg in path)


@lru_cache(maxsize=65536)
def field_name(path: tuple[str, ...]) -> str:
    """Render a schema path as a field path: `a.b[].c`, composition steps left out."""
    parts: list[str] = []
    i = 0
    while i < len(path):
        seg = path[i]
        if seg in ("properties", "patternProperties", "dependentSchemas") and i + 1 < len(path):
            parts.append(path[i + 1])
            i += 2
            continue
        if seg == "items":
            parts.append("[]")
        elif seg == "additionalProperties":
            parts.append("{*}")
        elif seg in ("oneOf", "anyOf", "allOf", "prefixItems", "x-subtypes") and i + 1 < len(path):
            i += 2
            continue
        i += 1
    text = ""
    for part in parts:
        if part in ("[]", "{*}"):
            text += part
        else:
            text += ("." if text else "") + part
    return text


@lru_cache(maxsize=1024)
def change_type_of(rule_id: str) -> str:
    """Return `added`, `removed` or `changed` for a rule id."""
    for token, kind in _CHANGE_TYPES:
        if rule_id.endswith("-" + token) or f"-{token}-" in rule_id:
            return kind
    return "changed"


def max_severity(changes: Iterable[Change]) -> Severity | None:
    """Return the worst severity among changes that are not ignored, or None."""
    worst: Severity | None = None
    for c in changes:
        if c.ignored:
            continue
        if worst is None or c.severity.rank > worst.rank:
            worst = c.severity
    return worst


def _short(value: Any) -> str:
    if value is None:
        return "none"
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= 120 else text[:117] + "..."


class _Defaulting(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return ""


def _format(template: str, **values: str) -> str:
    return template.format_map(_Defaulting(values)).replace("  ", " ").strip()
