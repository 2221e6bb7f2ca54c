"""Loopback stand-ins for the services destinations deliver to (PagerDuty, Opsgenie, Teams,
Discord, Slack's Web API). Each fake checks every request it receives against the service's
published description, written as JSON Schema in `schemas/` (each file cites its pages), and
against the service's rules the schema cannot say (its credential header, the identifier type
in a path, Discord's 6000 characters across embeds). A valid request is recorded and answered
as the service answers; an invalid one is answered 400 and kept in `invalid`, so a test that
asserts `fake.invalid == []` knows each payload was valid.

The fakes keep the state the service would (PagerDuty's alerts by `dedup_key`, Opsgenie's by
alias, Slack's messages by `ts`), so a test can see that three steps made one alert.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from jsonschema import Draft202012Validator

from tests.servers import Loopback, QuietHandler

SCHEMAS = Path(__file__).parent / "schemas"


def validator(name: str, definition: str | None = None) -> Draft202012Validator:
    """The validator of schema `name` (or of one of its `$defs`)."""
    schema = json.loads((SCHEMAS / f"{name}.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    if definition is not None:
        schema = {**schema, "$ref": f"#/$defs/{definition}"}
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


Answer = tuple[int, Any]


@dataclass
class Route:
    method: str
    pattern: str
    schema: Draft202012Validator
    answer: Callable[[Request, re.Match[str]], Answer]
    check: Callable[[Request, re.Match[str]], str | None] = lambda _r, _m: None


@dataclass
class ServiceFake:
    """A service on a free loopback port, routes checked and answered as `routes` say."""

    routes: list[Route]
    received: list[Request] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    # While set, every request is answered with this status (a service that is down).
    failing_with: int | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        fake = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                status, body = fake.handle("POST", self.path, dict(self.headers), raw)
                self.answer(status, json.dumps(body).encode() if body is not None else b"")

        self.loopback = Loopback(Handler).start()

    def url(self, path: str) -> str:
        return self.loopback.url(path)

    def stop(self) -> None:
        self.loopback.stop()

    def handle(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> Answer:
        parts = urlsplit(target)
        with self.lock:
            if self.failing_with is not None:
                return self.failing_with, {"message": "unavailable"}
            for route in self.routes:
                match = re.fullmatch(route.pattern, parts.path)
                if route.method != method or match is None:
                    continue
                try:
                    body = json.loads(raw)
                except ValueError:
                    return self._refuse(f"{parts.path}: the body is not JSON")
                request = Request(
                    method,
                    parts.path,
                    parse_qs(parts.query),
                    {k.lower(): v for k, v in headers.items()},
                    body,
                )
                if not request.headers.get("content-type", "").startswith("application/json"):
                    return self._refuse(f"{parts.path}: Content-Type is not application/json")
                errors = [
                    f"{parts.path} {'/'.join(map(str, e.absolute_path))}: {e.message}"
                    for e in route.schema.iter_errors(body)
                ]
                problem = route.check(request, match)
                if errors or problem:
                    return self._refuse("; ".join([*errors, *([problem] if problem else [])]))
                self.received.append(request)
                return route.answer(request, match)
            return self._refuse(f"{method} {parts.path}: no such route")

    def _refuse(self, why: str) -> Answer:
        self.invalid.append(why)
        return 400, {"message": why}


# -- PagerDuty Events API v2 -----------------------------------------------------------------


def pagerduty(routing_key: str) -> tuple[ServiceFake, dict[str, str]]:
    """The fake and its alerts (dedup_key -> status: triggered, acknowledged, resolved)."""
    alerts: dict[str, str] = {}

    def check(request: Request, _match: re.Match[str]) -> str | None:
        if request.body.get("routing_key") != routing_key:
            return "routing_key: not an integration key of this service"
        return None

    def answer(request: Request, _match: re.Match[str]) -> Answer:
        action, key = request.body["event_action"], request.body.get("dedup_key")
        key = key or uuid.uuid4().hex
        if action == "trigger":
            alerts[key] = "triggered"
        elif key in alerts and alerts[key] != "resolved":
            alerts[key] = {"acknowledge": "acknowledged", "resolve": "resolved"}[action]
        return 202, {"status": "success", "message": "Event processed", "dedup_key": key}

    route = Route("POST", "/v2/enqueue", validator("pagerduty_events_v2"), answer, check)
    return ServiceFake([route]), alerts


# -- Opsgenie Alert API ----------------------------------------------------------------------


def opsgenie(api_key: str) -> tuple[ServiceFake, dict[str, str]]:
    """The fake and its alerts (alias -> status: open, acknowledged, closed)."""
    alerts: dict[str, str] = {}

    def authorized(request: Request, _match: re.Match[str]) -> str | None:
        if request.headers.get("authorization") != f"GenieKey {api_key}":
            return "Authorization: not GenieKey <the integration's key>"
        return None

    def by_alias(request: Request, match: re.Match[str]) -> str | None:
        if request.query.get("identifierType") != ["alias"]:
            return "identifierType: the alert is named by its alias here (identifierType=alias)"
        return authorized(request, match)

    def accepted() -> Answer:
        return 202, {
            "result": "Request will be processed",
            "took": 0.01,
            "requestId": str(uuid.uuid4()),
        }

    def create(request: Request, _match: re.Match[str]) -> Answer:
        alerts.setdefault(request.body.get("alias") or request.body["message"], "open")
        return accepted()

    def act(request: Request, match: re.Match[str]) -> Answer:
        alias, step = match.group(1), match.group(2)
        if alias in alerts and alerts[alias] != "closed":
            alerts[alias] = {"acknowledge": "acknowledged", "close": "closed"}[step]
        return accepted()

    return (
        ServiceFake(
            [
                Route(
                    "POST", "/v2/alerts", validator("opsgenie_alerts", "create"), create, authorized
                ),
                Route(
                    "POST",
                    r"/v2/alerts/([^/]+)/(acknowledge|close)",
                    validator("opsgenie_alerts", "action"),
                    act,
                    by_alias,
                ),
            ]
        ),
        alerts,
    )


# -- Microsoft Teams Workflows ---------------------------------------------------------------

TEAMS_PATH = "/workflows/6e1d8c0b/triggers/manual/paths/invoke"


def teams() -> ServiceFake:
    """A Workflows trigger URL: answers 202 Accepted, as Power Automate does."""
    return ServiceFake(
        [
            Route(
                "POST", TEAMS_PATH, validator("teams_workflows_message"), lambda _r, _m: (202, None)
            )
        ]
    )


# -- Discord ---------------------------------------------------------------------------------

DISCORD_PATH = "/api/webhooks/1234567890/s3cr3t-webhook-token"


def discord() -> ServiceFake:
    """An Execute Webhook URL: answers 204 No Content (no `?wait=true`)."""

    def within_limits(request: Request, _match: re.Match[str]) -> str | None:
        total = 0
        for embed in request.body.get("embeds") or []:
            total += len(embed.get("title", "")) + len(embed.get("description", ""))
            total += len((embed.get("footer") or {}).get("text", ""))
            for item in embed.get("fields") or []:
                total += len(item["name"]) + len(item["value"])
        return "embeds: over 6000 characters in all" if total > 6000 else None

    return ServiceFake(
        [
            Route(
                "POST",
                DISCORD_PATH,
                validator("discord_execute_webhook"),
                lambda _r, _m: (204, None),
                within_limits,
            )
        ]
    )


# -- Slack Web API ---------------------------------------------------------------------------


@dataclass
class SlackMessages:
    """The messages of the fake Slack: ts -> text, and how many were posted and updated."""

    texts: dict[str, str] = field(default_factory=dict)
    posted: int = 0
    updated: int = 0


def slack(token: str, channel_id: str = "C0DRIFT01") -> tuple[ServiceFake, SlackMessages]:
    messages = SlackMessages()

    def authorized(request: Request, _match: re.Match[str]) -> str | None:
        if request.headers.get("authorization") != f"Bearer {token}":
            return "Authorization: not Bearer <the bot token>"
        return None

    def post(request: Request, _match: re.Match[str]) -> Answer:
        messages.posted += 1
        ts = f"1700000000.{messages.posted:06d}"
        messages.texts[ts] = request.body["text"]
        return 200, {
            "ok": True,
            "channel": channel_id,
            "ts": ts,
            "message": {"text": request.body["text"]},
        }

    def update(request: Request, _match: re.Match[str]) -> Answer:
        if request.body["channel"] != channel_id or request.body["ts"] not in messages.texts:
            return 200, {"ok": False, "error": "message_not_found"}
        messages.updated += 1
        messages.texts[request.body["ts"]] = request.body["text"]
        return 200, {
            "ok": True,
            "channel": channel_id,
            "ts": request.body["ts"],
            "text": request.body["text"],
        }

    return (
        ServiceFake(
            [
                Route(
                    "POST",
                    "/api/chat.postMessage",
                    validator("slack_chat", "postMessage"),
                    post,
                    authorized,
                ),
                Route(
                    "POST",
                    "/api/chat.update",
                    validator("slack_chat", "update"),
                    update,
                    authorized,
                ),
            ]
        ),
        messages,
    )
