"""The `pagerduty` channel: PagerDuty's Events API v2 (`POST /v2/enqueue`).

An incident of driftgate is one PagerDuty alert: `incident.open` triggers it,
`incident.acknowledged` acknowledges it and `incident.resolved` resolves it, all three with
the incident's id as `dedup_key`, so PagerDuty folds them into one alert. Another event a
destination takes (a test) triggers an alert of its own. The integration's `routing_key` is
the secret; the URL is a setting (default `https://events.pagerduty.com/v2/enqueue`) so a
proxy, or the tests' loopback fake, can stand in.
See https://developer.pagerduty.com/docs/send-alert-event (Events API v2).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import Field

from controller.events.channels.base import Channel, DestinationKind, Event, Outgoing
from controller.events.channels.kinds import Token
from controller.events.channels.words import incident_of, lines_of, subject_of
from controller.model.base import RequestModel
from controller.model.watch import HttpUrl

EVENTS_URL = "https://events.pagerduty.com/v2/enqueue"
ACTIONS = {
    "incident.open": "trigger",
    "incident.acknowledged": "acknowledge",
    "incident.resolved": "resolve",
}


class PagerDutySettings(RequestModel):
    url: HttpUrl = Field(default=EVENTS_URL, description="the Events API v2 enqueue URL")
    severity: Literal["critical", "error", "warning", "info"] = Field(
        default="error", description="the severity of the alerts an incident triggers"
    )


class PagerDutySecrets(RequestModel):
    routing_key: Token = Field(description="the integration key of an Events API v2 integration")


def render_pagerduty(event: Event) -> Outgoing:
    """One Events API v2 event: trigger, acknowledge or resolve, keyed by the incident."""
    payload = event.payload
    kind = str(payload.get("type"))
    action = ACTIONS.get(kind, "trigger")
    data = payload.get("data") or {}
    dedup_key = incident_of(payload) if kind in ACTIONS else None
    body: dict[str, Any] = {
        "routing_key": str(event.config.get("routing_key", "")),
        "event_action": action,
        "dedup_key": (dedup_key or f"driftgate-{event.message_id}")[:255],
    }
    if action == "trigger":
        body["payload"] = {
            "summary": subject_of(payload)[:1024],
            "source": str(data.get("watchUrl") or data.get("watchName") or "driftgate")[:255],
            "severity": str(event.config.get("severity", "error")),
            "timestamp": event.now.isoformat(),
            "component": str(data.get("watchName") or "driftgate")[:255],
            "class": kind,
            "custom_details": {"event": kind, "details": lines_of(payload), **_ids(data)},
        }
        body["client"] = "driftgate"
    return Outgoing(json.dumps(body).encode(), {"Content-Type": "application/json"})


def _ids(data: dict[str, Any]) -> dict[str, str]:
    keys = ("incidentId", "watchId", "driftEventId")
    return {key: str(data[key]) for key in keys if data.get(key)}


PAGERDUTY = Channel(
    "pagerduty",
    render_pagerduty,
    destination=DestinationKind(
        PagerDutySettings,
        PagerDutySecrets,
        address=lambda config: str(config.get("url") or EVENTS_URL),
        digests=False,
        events=(*ACTIONS, "destination.test"),
    ),
)
