"""Drift explanation: per change a summary, the agentAction token and a human hint.

Backs `POST /api/drift/explain` and the CLI's text output. Input changes may come from another
system (the draft-PR webhook calls `summary` `message`); rules unknown to this catalog still
get a hint chosen by severity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from controller.diffs.fails import what_fails
from controller.diffs.grouping import cause_of
from controller.diffs.rules import ACCEPT, ACK, CATALOG, NEW_ENUM, order_actions
from controller.model.change import Change, Severity

_FALLBACK_HINTS = {
    Severity.BREAKING: (ACK, "Breaking for consumers: update the client or tool before deploying."),
    Severity.WARNING: (ACCEPT, "Review recommended before the next deploy."),
    Severity.INFO: (ACCEPT, "Backward compatible; accept the new baseline when convenient."),
}


def explain_changes(changes: Iterable[Change | Mapping[str, Any]]) -> dict[str, Any]:
    """Explain changes: `{changes: [...], counts, ignored, agentActions, summary}`.

    Mappings are validated into `Change` (pydantic `ValidationError` on bad input, with the
    JSON path of the problem); ignored changes are listed but not counted.
    """
    items: list[dict[str, Any]] = []
    counts = {s.value: 0 for s in Severity}
    ignored = 0
    actions: set[str] = set()
    for raw in changes:
        change = raw if isinstance(raw, Change) else Change.model_validate(dict(raw))
        rule = CATALOG.get(change.rule)
        fallback_action = _FALLBACK_HINTS[change.severity][0]
        # A token the sender chose wins; otherwise the rule's, else one chosen by severity.
        if "agentAction" in change.model_fields_set:
            action = change.agentAction
        elif rule is not None:
            action = rule.agent_action
        elif "enum" in change.rule and "added" in change.rule:
            action = NEW_ENUM
        else:
            action = fallback_action
        hint = hint_for(change)
        entry: dict[str, Any] = {
            "path": change.path,
            "severity": change.severity.value,
            "rule": change.rule,
            "summary": change.summary,
            "agentAction": action,
            "hint": hint,
        }
        if change.location is not None:
            entry["location"] = change.location.model_dump(exclude_none=True)
        cause = cause_of(change.rule, change.origin, change.before, change.after)
        if cause is not None:
            entry["cause"] = cause.text
        if change.affected is not None:
            entry["affectedCount"] = len(change.affected)
        if change.ignored:
            entry["ignored"] = True
            entry["ignoreReason"] = change.ignoreReason
            if change.waived and change.waiver is not None:
                entry["waived"] = True
                entry["waiver"] = change.waiver.model_dump()
            ignored += 1
        else:
            counts[change.severity.value] += 1
            actions.add(action)
        items.append(entry)
    return {
        "changes": items,
        "counts": counts,
        "ignored": ignored,
        "agentActions": order_actions(actions),
        "summary": summarize_counts(counts, ignored),
    }


def hint_of(rule: str, severity: Severity | str) -> str:
    """The human hint of a rule (the catalog's), else the one chosen by severity."""
    known = CATALOG.get(rule)
    if known is not None:
        return known.hint
    try:
        return _FALLBACK_HINTS[Severity(severity)][1]
    except ValueError:
        return _FALLBACK_HINTS[Severity.WARNING][1]


def hint_for(change: Change | Mapping[str, Any]) -> str:
    """The hint of one change: for a breaking one, first what a client sees fail (filled from
    the change, `controller.diffs.fails`), then what to do (the rule's hint)."""
    data = change.to_json() if isinstance(change, Change) else change
    hint = hint_of(str(data.get("rule", "")), str(data.get("severity", "")))
    fails = data.get("fails") if isinstance(data.get("fails"), str) else what_fails(data)
    return f"{fails} {hint}" if fails else hint


def with_hints(changes: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Stored or rendered change objects, each with its `hint` (drift events, the status,
    exports): the same text `POST /api/drift/explain` gives; a change that lives in a shared
    schema also gets its `cause` (`refund.reason: maxLength 5000 removed`)."""
    out = []
    for change in changes:
        item = {**change, "hint": hint_for(change)}
        cause = cause_text(change)
        if cause is not None:
            item["cause"] = cause
        out.append(item)
    return out


def cause_text(change: Mapping[str, Any]) -> str | None:
    """The cause of a change object that carries an `origin`: the schema and what changed
    in it; None otherwise."""
    origin = change.get("origin")
    if not isinstance(origin, str):
        return None
    cause = cause_of(str(change.get("rule", "")), origin, change.get("before"), change.get("after"))
    return cause.text if cause is not None else None


def summarize_counts(counts: Mapping[str, int], ignored: int = 0, noun: str = "change") -> str:
    """Render counts as one sentence: `2 breaking, 1 warning, 0 info changes (1 ignored).`
    (`noun`: what is counted, `cause` for a grouped report)."""
    total = sum(counts.values())
    if total == 0 and ignored == 0:
        return "No changes."
    text = (
        f"{counts.get('breaking', 0):,} breaking, {counts.get('warning', 0):,} warning, "
        f"{counts.get('info', 0):,} info {noun}{'s' if total != 1 else ''}"
    )
    if ignored:
        text += f" ({ignored} ignored)"
    verdict = " Breaking: act before deploying." if counts.get("breaking") else ""
    return text + "." + verdict
