"""The `opsgenie` channel: Opsgenie's Alert API.

An incident is one Opsgenie alert whose `alias` is the incident's id: `incident.open` creates
it (`POST /v2/alerts`), `incident.acknowledged` acknowledges it and `incident.resolved` closes
it, both by alias (`POST /v2/alerts/{alias}/acknowledge?identifierType=alias`, `.../close`).
Requests carry `Authorization: GenieKey <key>` (the secret); the base URL is a setting
(`https://api.opsgenie.com`, `https://api.eu.opsgenie.com` for the EU region).
See https://docs.opsgenie.com/docs/alert-api.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import quote

from pydantic import Field

from controller.events.channels.base import Channel, DestinationKind, Event, Outgoing
from controller.events.channels.kinds import Token
from controller.events.channels.words import incident_of, subject_of, text_of
from controller.model.base import RequestModel
from controller.model.watch import HttpUrl

API_URL = "https://api.opsgenie.com"
STEPS = {"incident.acknowledged": "acknowledge", "incident.resolved": "close"}


class OpsgenieSettings(RequestModel):
    api_url: HttpUrl = Field(
        default=API_URL, description="the API's base URL (https://api.eu.opsgenie.com in the EU)"
    )
    priority: Literal["P1", "P2", "P3", "P4", "P5"] = Field(
        default="P3", description="the priority of the alerts incidents create"
    )


class OpsgenieSecrets(RequestModel):
    api_key: Token = Field(description="the API key of an Opsgenie API integration")


def alerts_url(config: Mapping[str, Any]) -> str:
    return f"{str(config.get('api_url') or API_URL).rstrip('/')}/v2/alerts"


def render_opsgenie(event: Event) -> Outgoing:
    """Create an alert (alias: the incident), or acknowledge or close it by its alias."""
    payload = event.payload
    kind = str(payload.get("type"))
    data = payload.get("data") or {}
    alias = (incident_of(payload) or f"driftgate-{event.message_id}")[:512]
    headers = {
        "Content-Type": "application/json",
        "Authorization": f"GenieKey {event.config.get('api_key', '')}",
    }
    step = STEPS.get(kind)
    if step is not None:
        url = f"{alerts_url(event.config)}/{quote(alias, safe='')}/{step}?identifierType=alias"
        body: dict[str, Any] = {"source": "driftgate", "note": subject_of(payload)[:25000]}
        return Outgoing(json.dumps(body).encode(), headers, url=url)
    body = {
        "message": subject_of(payload)[:130],
        "alias": alias,
        "description": text_of(payload)[:15000],
        "priority": str(event.config.get("priority", "P3")),
        "source": "driftgate",
        "tags": ["driftgate", kind][:20],
        "details": {k: str(v) for k, v in data.items() if isinstance(v, str | int) and v != ""},
    }
    return Outgoing(json.dumps(body).encode(), headers, url=alerts_url(event.config))


OPSGENIE = Channel(
    "opsgenie",
    render_opsgenie,
    destination=DestinationKind(
        OpsgenieSettings,
        OpsgenieSecrets,
        address=alerts_url,
        digests=False,
        events=("incident.open", *STEPS, "destination.test"),
    ),
)
