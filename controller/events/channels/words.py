"""What a message about an event says in plain words, for the channels that show people a
title and a few lines (PagerDuty, Opsgenie, Teams, Discord, e-mail, a Slack bot).

The webhook channel sends the event as it is; the incoming-webhook Slack channel keeps its own
markup (`slack.slack_text`). These helpers only read the payload: no markup, no I/O.
"""

from __future__ import annotations

from typing import Any

INCIDENT_EVENTS = ("incident.open", "incident.acknowledged", "incident.resolved")


def subject_of(payload: dict[str, Any]) -> str:
    """What happened and to what, in one line: `Incident opened for payments`."""
    data = payload.get("data") or {}
    kind = str(payload.get("type", "event"))
    name = (
        data.get("watchName") or data.get("watchId") or data.get("destinationName") or "driftgate"
    )
    return {
        "drift.detected": f"Contract drift on {name}",
        "drift.cleared": f"Drift cleared on {name}",
        "drift.check_failed": f"Check failed for {name}",
        "incident.open": f"Incident opened for {name}",
        "incident.acknowledged": f"Incident acknowledged for {name}",
        "incident.resolved": f"Incident resolved for {name}",
        "agent.contract.blocked": f"Agent blocked by a contract change on {name}",
        "agent.unblocked": f"Agent unblocked ({name})",
        "ingress.quarantine": f"Ingress quarantine ({name})",
        "destination.failing": f"Destination {name} is failing",
        "destination.recovered": f"Destination {name} works again",
        "destination.test": f"Test message for destination {name}",
        "digest": f"driftgate digest: {int(data.get('count') or 0)} event(s)",
    }.get(kind, f"driftgate {kind}: {name}")


def lines_of(payload: dict[str, Any]) -> list[str]:
    """The details worth a line each: counts, the first changes, an error, repeats held back,
    the events of a digest."""
    data = payload.get("data") or {}
    lines: list[str] = []
    counts = data.get("counts") or {}
    if counts:
        lines.append(
            f"{counts.get('breaking', 0)} breaking, {counts.get('warning', 0)} warning, "
            f"{counts.get('info', 0)} info"
        )
    if data.get("breakingCount"):
        lines.append(f"{data['breakingCount']} breaking change(s)")
    if data.get("resolution"):
        lines.append(f"Resolution: {data['resolution']}")
    for change in (data.get("changes") or [])[:5]:
        lines.append(f"[{change.get('severity')}] {change.get('summary')}")
    if data.get("error"):
        lines.append(f"Error: {data['error']}")
    if data.get("lastError"):
        lines.append(f"Last error: {data['lastError']}")
    if data.get("suppressedCount"):
        lines.append(f"({data['suppressedCount']} earlier notification(s) about this held back)")
    for event in (data.get("events") or [])[:50]:
        lines.append(f"{event.get('timestamp', '')} {subject_of(event)}".strip())
    return lines


def text_of(payload: dict[str, Any]) -> str:
    """Subject and details, one per line."""
    return "\n".join([subject_of(payload), *lines_of(payload)])


def incident_of(payload: dict[str, Any]) -> str | None:
    """The incident an event is about, if any."""
    incident = (payload.get("data") or {}).get("incidentId")
    return str(incident) if incident else None
