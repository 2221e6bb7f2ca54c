"""The `slack` channel: a readable message for a Slack incoming webhook (its URL is its
secret, so nothing is signed)."""

from __future__ import annotations

import json
from typing import Any

from controller.events.channels.base import Channel, DestinationKind, Event, Outgoing
from controller.events.channels.kinds import NoSettings, SecretUrl, secret_url


def render_slack(event: Event) -> Outgoing:
    """`{"text": ...}` as Slack's incoming webhooks take it."""
    body = json.dumps({"text": slack_text(event.payload)}).encode()
    return Outgoing(body, {"Content-Type": "application/json"})


def slack_text(payload: dict[str, Any]) -> str:
    """A readable Slack message for an event."""
    data = payload.get("data", {})
    name = data.get("watchName") or data.get("watchId") or "a watch"
    kind = payload.get("type", "event")
    counts = data.get("counts") or {}
    headline = {
        "drift.detected": f":warning: Contract drift on *{name}*",
        "drift.cleared": f":white_check_mark: Drift cleared on *{name}*",
        "drift.check_failed": f":x: Check failed for *{name}*",
        "incident.open": f":rotating_light: Incident opened for *{name}*",
        "incident.acknowledged": f":eyes: Incident acknowledged for *{name}*",
        "incident.resolved": f":white_check_mark: Incident resolved for *{name}*",
    }.get(kind, f"driftgate {kind}: *{name}*")
    lines = [headline]
    if counts:
        lines.append(
            f"{counts.get('breaking', 0)} breaking, {counts.get('warning', 0)} warning, "
            f"{counts.get('info', 0)} info"
        )
    for change in (data.get("changes") or [])[:5]:
        hint = f" _{change['hint']}_" if change.get("hint") else ""
        lines.append(f"• [{change.get('severity')}] {_told(change)}{hint}")
    if data.get("error"):
        lines.append(f"Error: {data['error']}")
    if data.get("flapCount"):
        lines.append(f"Flapping: reopened {data['flapCount']} time(s) after the vendor reverted")
    if data.get("suppressedCount"):
        lines.append(f"({data['suppressedCount']} earlier notification(s) about this held back)")
    return "\n".join(lines)


SLACK = Channel(
    "slack",
    render_slack,
    is_destination_kind=True,
    hosts=("hooks.slack.com", "*.slack.com"),
    destination=DestinationKind(NoSettings, SecretUrl, address=secret_url),
)


def _told(change: dict[str, Any]) -> str:
    """A change to a shared schema by its cause and reach, any other by its summary."""
    if not change.get("cause"):
        return str(change.get("summary"))
    count = int(change.get("affectedCount") or 1)
    return f"{change['cause']} ({count} operation{'s' if count != 1 else ''})"
