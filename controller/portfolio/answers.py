"""Ask (`POST /api/ask`): a question read by the grammar of `ask.py`, answered with the same
queries as the portfolio views. Pro plans and higher get their org's live data with
citations (objects the API serves); free plans and trial sessions get fixture answers,
marked `fixture: true` (SPEC.md: "trial and demo sessions receive fixture answers")."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any

from pydantic import Field, StringConstraints
from pydantic_core import to_jsonable_python
from sqlalchemy.orm import Session

from controller.model import durations
from controller.model.base import ApiModel, RequestModel
from controller.model.jsonvalue import JsonValue
from controller.model.plans import minimum_plan
from controller.model.watch import NOTE_PATTERN
from controller.portfolio import ask, views

Question = Annotated[str, StringConstraints(min_length=1, max_length=500, pattern=NOTE_PATTERN)]


class AskIn(RequestModel):
    question: Question = Field(examples=["which vendors broke us most this quarter?"])


class AskFilters(ApiModel):
    days: int
    since: datetime
    until: datetime
    vendor: str | None
    tag: str | None
    watch_type: str | None


class Citation(ApiModel):
    kind: str = Field(description="watch, drift_event or incident")
    id: str
    url: str = Field(description="where the API serves it")
    label: str


class IntentOut(ApiModel):
    intent: str
    description: str
    examples: list[str]


class AskOut(ApiModel):
    intent: str = Field(description="one of `intents`, or `unknown`")
    filters: AskFilters
    answer: str = Field(description="the answer in words")
    data: dict[str, JsonValue] = Field(description="the figures the answer is made of")
    citations: list[Citation]
    fixture: bool = Field(description="a fixture answer (free plans, trial sessions)")
    intents: list[IntentOut] = Field(
        default_factory=list, description="what can be asked, when the question was not read"
    )


def _intents() -> list[IntentOut]:
    return [
        IntentOut(intent=name, description=text, examples=ask.EXAMPLES[name])
        for name, text in ask.INTENTS.items()
    ]


def answer(session: Session, org_id: str, live: bool, data: AskIn, now: datetime) -> AskOut:
    """`live`: the org's own data (Pro plans and higher), else fixture answers."""
    vendors, tags = views.known_labels(session, org_id) if live else (FIXTURE_VENDORS, [])
    reading = ask.read(data.question, vendors, tags)
    since = now - timedelta(days=reading.days)
    filters = AskFilters(
        days=reading.days,
        since=since,
        until=now,
        vendor=reading.vendor,
        tag=reading.tag,
        watch_type=reading.watch_type,
    )
    if reading.intent is None:
        return AskOut(
            intent="unknown",
            filters=filters,
            answer="I did not understand the question. I can answer: "
            + "; ".join(f"{name} ({text.lower()})" for name, text in ask.INTENTS.items()),
            data={},
            citations=[],
            fixture=not live,
            intents=_intents(),
        )
    if not live:
        text, figures = FIXTURES[reading.intent]
        return AskOut(
            intent=reading.intent,
            filters=filters,
            answer="Example answer on fixture data (live answers need the "
            f"{minimum_plan('live_ask')} plan or higher): {text}",
            data=figures,
            citations=[],
            fixture=True,
        )
    narrowed = views.Filters(tag=reading.tag, vendor=reading.vendor, watch_type=reading.watch_type)
    live_answer = _drifted if reading.any_severity else LIVE[reading.intent]
    text, figures, citations = live_answer(session, org_id, narrowed, since, now)
    scope = _scope(reading)
    return AskOut(
        intent=reading.intent,
        filters=filters,
        answer=f"{text} ({scope})",
        data=to_jsonable_python(figures),
        citations=citations,
        fixture=False,
    )


def _scope(reading: ask.Reading) -> str:
    parts = [f"last {reading.days} day{'s' if reading.days != 1 else ''}"]
    if reading.vendor:
        parts.append(f"vendor {reading.vendor}")
    if reading.tag:
        parts.append(f"tag {reading.tag}")
    if reading.watch_type:
        parts.append(f"{reading.watch_type} watches")
    return ", ".join(parts)


def _watch(watch_id: str, label: str) -> Citation:
    return Citation(kind="watch", id=watch_id, url=f"/api/watches/{watch_id}/status", label=label)


Live = tuple[str, dict[str, Any], list[Citation]]


def _breaking(
    session: Session, org_id: str, filters: views.Filters, since: datetime, now: datetime
) -> Live:
    events, changes, newest = views.breaking_events(session, org_id, filters, since)
    vendors = views.breaking_by_vendor(session, org_id, filters, since)
    if not events:
        return "No breaking drift", {"events": 0, "breakingChanges": 0, "byVendor": []}, []
    top = ", ".join(f"{v['vendor']} ({v['breakingChanges']})" for v in vendors[:3])
    text = f"{events} drift event(s) with {changes} breaking change(s); most from {top}"
    citations = [
        Citation(
            kind="drift_event",
            id=e["id"],
            url=f"/api/drift/events/{e['id']}",
            label=f"{e['watchName']}: {e['breaking']} breaking",
        )
        for e in newest
    ]
    return text, {"events": events, "breakingChanges": changes, "byVendor": vendors}, citations


def _drifted(
    session: Session, org_id: str, filters: views.Filters, since: datetime, now: datetime
) -> Live:
    """Drift of any weight that matters ("which watches drifted"): breaking or warning."""
    events, changes, newest = views.breaking_events(
        session, org_id, filters, since, limit=10, with_warnings=True
    )
    if not events:
        return "No breaking or warning drift", {"events": 0, "breakingChanges": 0}, []
    names = list(dict.fromkeys(e["watchName"] for e in newest))
    text = (
        f"{events} drift event(s) with breaking or warning changes ({changes} breaking "
        f"change(s)); latest on {', '.join(names[:5])}"
    )
    citations = [
        Citation(
            kind="drift_event",
            id=e["id"],
            url=f"/api/drift/events/{e['id']}",
            label=f"{e['watchName']}: {e['breaking']} breaking, {e['warning']} warning",
        )
        for e in newest
    ]
    return text, {"events": events, "breakingChanges": changes}, citations


def _mcp_health(
    session: Session, org_id: str, filters: views.Filters, since: datetime, now: datetime
) -> Live:
    health = views.health(session, org_id, filters, now)
    gaps = views.gaps(session, org_id, filters, now)
    bands = health["byHealthBand"]
    if not health["total"]:
        return "No MCP server is watched", {"health": health}, []
    unhealthy = [
        (kind, w) for kind in ("error", "staleChecks", "neverRun") for w in gaps[kind]["watches"]
    ]
    if bands["degraded"]:
        names = ", ".join(sorted({w["name"] for _, w in unhealthy})[:5])
        text = (
            f"{bands['degraded']} of {health['total']} MCP server(s) are unhealthy "
            f"(failing, stale or never checked): {names}"
        )
    else:
        text = f"All {health['total']} MCP server(s) checked recently are healthy"
    citations = [_watch(w["watchId"], f"{w['name']}: {kind}") for kind, w in unhealthy[:10]]
    figures = {
        "health": health,
        "gaps": {k: gaps[k]["count"] for k in ("error", "staleChecks", "neverRun")},
    }
    return text, figures, citations


def _mttr(
    session: Session, org_id: str, filters: views.Filters, since: datetime, now: datetime
) -> Live:
    # The text writes durations in human units from the exact figures (a 9.6 s repair reads
    # `9.6 s`, not `0.0 h`); the figures keep the API's hours to 0.01.
    mttr = views.mttr(session, org_id, filters, since, now, digits=None)
    if not mttr["resolved"]:
        return "No incident was resolved", {"mttr": mttr}, []
    slowest = views.slowest_repairs(session, org_id, filters, since, now, digits=None)
    worst = mttr["byVendor"][0]
    text = (
        f"Mean time to repair: {durations.hours(mttr['overallHours'])} over {mttr['resolved']} "
        f"resolved incident(s); slowest vendor {worst['key']} ({durations.hours(worst['hours'])})"
    )
    citations = [
        Citation(
            kind="incident",
            id=i["id"],
            url=f"/api/watches/{i['watchId']}/status",
            label=f"{i['watchName']}: {durations.hours(i['hours'])}, {i['resolution']}",
        )
        for i in slowest
    ]
    return text, {"mttr": views.round_hours(mttr), "slowest": views.round_hours(slowest)}, citations


def _hotspots(
    session: Session, org_id: str, filters: views.Filters, since: datetime, now: datetime
) -> Live:
    vendors = views.breaking_by_vendor(session, org_id, filters, since)
    watches = views.hotspots(session, org_id, filters, now, limit=5, since=since)
    if not vendors:
        return "No breaking drift, so no hotspot", {"byVendor": [], "watches": []}, []
    text = "Most breaking drift: " + ", ".join(
        f"{v['vendor']} ({v['breakingChanges']} breaking in {v['events']} event(s))"
        for v in vendors[:3]
    )
    citations = [_watch(w["watchId"], f"{w['name']}: {w['breakingCount30d']}") for w in watches]
    return text, {"byVendor": vendors, "watches": watches}, citations


def _gaps(
    session: Session, org_id: str, filters: views.Filters, since: datetime, now: datetime
) -> Live:
    gaps = views.gaps(session, org_id, filters, now)
    counts = {k: gaps[k]["count"] for k in ("neverRun", "staleChecks", "error")}
    text = (
        f"{gaps['total']} watch(es) in a gap: {counts['neverRun']} never run, "
        f"{counts['staleChecks']} with stale checks, {counts['error']} failing"
    )
    citations = [
        _watch(w["watchId"], f"{w['name']}: {kind}")
        for kind in ("error", "staleChecks", "neverRun")
        for w in gaps[kind]["watches"][:4]
    ]
    return text, {"gaps": counts, "total": gaps["total"]}, citations


LIVE = {
    "breaking_drift": _breaking,
    "mcp_health": _mcp_health,
    "mttr": _mttr,
    "hotspots": _hotspots,
    "coverage_gaps": _gaps,
}

# Fixture answers: the same shapes over a made-up portfolio (never an org's data).
FIXTURE_VENDORS = ["api.stripe.com", "api.github.com", "mcp.example-docs.dev"]
FIXTURES: dict[str, tuple[str, dict[str, Any]]] = {
    "breaking_drift": (
        "14 drift event(s) with 31 breaking change(s); most from api.stripe.com (17), "
        "api.github.com (9), mcp.example-docs.dev (5)",
        {"events": 14, "breakingChanges": 31},
    ),
    "mcp_health": (
        "1 of 6 MCP server(s) are unhealthy (failing, stale or never checked): docs-search",
        {"health": {"total": 6, "byHealthBand": {"healthy": 5, "degraded": 1, "unknown": 0}}},
    ),
    "mttr": (
        "Mean time to repair: 19.5 h over 12 resolved incident(s); slowest vendor "
        "api.github.com (41.0 h)",
        {"mttr": {"overallHours": 19.5, "resolved": 12}},
    ),
    "hotspots": (
        "Most breaking drift: api.stripe.com (17 breaking in 6 event(s)), api.github.com "
        "(9 breaking in 5 event(s))",
        {"byVendor": [{"vendor": "api.stripe.com", "events": 6, "breakingChanges": 17}]},
    ),
    "coverage_gaps": (
        "3 watch(es) in a gap: 1 never run, 1 with stale checks, 1 failing",
        {"gaps": {"neverRun": 1, "staleChecks": 1, "error": 1}, "total": 3},
    ),
}
