"""Portfolio figures over a store seeded with realistic history, each checked against an
independent computation over the same history in memory; filters; another org's data never
counts; the HTTP routes, CSV downloads included."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from statistics import mean
from typing import Any

import pytest
from flask.testing import FlaskClient

from controller.model.watch import is_stale_check
from controller.portfolio import service, views
from controller.store.db import Database
from tests.conftest import OrgKey
from tests.portfolio.seed import History, seed

NOW = datetime(2026, 11, 25, 10, 30, tzinfo=UTC)


@pytest.fixture
def histories(database: Database) -> tuple[History, History]:
    with database.transaction() as session:
        mine = seed(session, "mine", NOW)
        theirs = seed(session, "theirs", NOW, watches=40, events=500, incidents=60, seed_value=99)
    return mine, theirs


def keep(history: History, **filters: Any) -> list[dict[str, Any]]:
    """The watches a filter keeps, computed from the history."""
    found = []
    for w in history.watches:
        if filters.get("tag") and filters["tag"] not in w["tags"]:
            continue
        if filters.get("vendor") and w["vendor"] != filters["vendor"]:
            continue
        if filters.get("watch_type") and w["watch_type"] != filters["watch_type"]:
            continue
        if filters.get("environment") and w["id"] not in history.production:
            continue
        found.append(w)
    return found


def stale(w: dict[str, Any]) -> bool:
    """The one definition of staleness the SQL of the views must agree with."""
    return is_stale_check(
        status=w["drift_status"],
        last_checked_at=w["last_checked_at"],
        interval_minutes=w["interval_minutes"],
        now=NOW,
    )


def band(w: dict[str, Any]) -> str:
    if w["drift_status"] == "disabled":
        return "unknown"
    if stale(w) or w["drift_status"] in ("error", "never_run") or w["last_checked_at"] is None:
        return "degraded"
    return "healthy"


FILTERS = [
    {},
    {"vendor": "api.stripe.example.com"},
    {"tag": "team:billing"},
    {"watch_type": "mcp"},
    {"environment": "production"},
    {"tag": "team:core", "watch_type": "openapi"},
]


@pytest.mark.parametrize("filters", FILTERS, ids=lambda f: ",".join(f) or "all")
def test_the_overview_agrees_with_an_independent_computation(
    database: Database, histories: tuple[History, History], filters: dict[str, Any]
) -> None:
    mine, _ = histories
    kept = keep(mine, **filters)
    ids = {w["id"] for w in kept}
    by_id = {w["id"]: w for w in kept}
    query = service.PortfolioQuery.model_validate(
        {("watchType" if k == "watch_type" else k): v for k, v in filters.items()}
    )
    with database.session() as session:
        out = service.overview(session, mine.org_id, query, NOW).model_dump(by_alias=True)

    health = out["health"]
    assert health["total"] == len(kept)
    statuses: dict[str, int] = defaultdict(int)
    bands = {"healthy": 0, "degraded": 0, "unknown": 0}
    for w in kept:
        statuses[w["drift_status"]] += 1
        bands[band(w)] += 1
    assert health["byDriftStatus"] == dict(statuses)
    assert health["byHealthBand"] == bands
    assert health["stale"] == sum(1 for w in kept if stale(w))

    analytics = out["analytics"]
    starts = views.week_starts(NOW, 12)
    expected_weeks = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else NOW + timedelta(days=7)
        row = {"weekStart": start.date().isoformat(), "breaking": 0, "warning": 0, "info": 0}
        for e in mine.events:
            if e["watch_id"] in ids and start <= e["detected_at"] < end:
                worst = (
                    "breaking"
                    if e["breaking_count"]
                    else "warning"
                    if e["warning_count"]
                    else "info"
                )
                row[worst] += 1
        expected_weeks.append(row)
    assert analytics["driftEventsByWeek"] == expected_weeks

    since = NOW - timedelta(days=90)
    resolved = [
        i
        for i in mine.incidents
        if i["watch_id"] in ids and i["status"] == "resolved" and since <= i["resolved_at"] <= NOW
    ]

    def hours(rows: list[dict[str, Any]]) -> float:
        return round(
            mean((i["resolved_at"] - i["opened_at"]).total_seconds() / 3600 for i in rows), 2
        )

    mttr = analytics["mttr"]
    assert mttr["resolved"] == len(resolved)
    if resolved:
        assert mttr["overallHours"] == pytest.approx(hours(resolved), abs=0.02)
    else:
        assert mttr["overallHours"] is None
    for key_name, table in (("vendor", "byVendor"), ("watch_type", "byWatchType")):
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for i in resolved:
            groups[by_id[i["watch_id"]][key_name]].append(i)
        got = {r["key"]: (r["hours"], r["resolved"]) for r in mttr[table]}
        assert set(got) == set(groups)
        for key, rows in groups.items():
            assert got[key][1] == len(rows)
            assert got[key][0] == pytest.approx(hours(rows), abs=0.02)
    by_resolution = {r["key"]: r["resolved"] for r in mttr["byResolution"]}
    expected_resolution: dict[str, int] = defaultdict(int)
    for i in resolved:
        expected_resolution[i["resolution"]] += 1
    assert by_resolution == dict(expected_resolution)

    mine_incidents = [i for i in mine.incidents if i["watch_id"] in ids]
    assert analytics["incidents"] == {
        "open": sum(1 for i in mine_incidents if i["status"] == "open"),
        "acknowledged": sum(1 for i in mine_incidents if i["status"] == "acknowledged"),
        "resolvedLast30d": sum(
            1
            for i in mine_incidents
            if i["status"] == "resolved" and i["resolved_at"] >= NOW - timedelta(days=30)
        ),
    }
    recent_jobs = [
        j
        for j in mine.jobs
        if j["watch_id"] in ids and j["finished_at"] >= NOW - timedelta(hours=24)
    ]
    assert analytics["checks"] == {
        "last24h": len(recent_jobs),
        "failedLast24h": sum(
            1
            for j in recent_jobs
            if j["status"] == "failed" or (j["result"] or {}).get("outcome") == "error"
        ),
    }
    assert [d["id"] for d in out["dashboardTemplates"]][:3] == [
        "system.production-agents",
        "system.mcp-health",
        "system.vendor-hotspots",
    ]


@pytest.mark.parametrize("filters", FILTERS[:3], ids=lambda f: ",".join(f) or "all")
def test_the_compass_agrees_with_an_independent_computation(
    database: Database, histories: tuple[History, History], filters: dict[str, Any]
) -> None:
    mine, _ = histories
    kept = keep(mine, **filters)
    ids = {w["id"] for w in kept}
    query = service.PortfolioQuery.model_validate(filters)
    with database.session() as session:
        out = service.compass(session, mine.org_id, query, NOW).model_dump(by_alias=True)

    def split(key: Callable[[dict[str, Any]], list[str]]) -> dict[str, dict[str, int]]:
        table: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for w in kept:
            for k in key(w):
                table[k][w["drift_status"]] += 1
        return {k: dict(v) for k, v in table.items()}

    coverage = out["coverage"]
    for name, key in (
        ("byVendor", lambda w: [w["vendor"]]),
        ("byWatchType", lambda w: [w["watch_type"]]),
        ("byTag", lambda w: w["tags"]),
    ):
        got = {r["key"]: r["byDriftStatus"] for r in coverage[name]}
        assert got == split(key), name
        assert all(r["watches"] == sum(r["byDriftStatus"].values()) for r in coverage[name])

    gaps = out["gaps"]
    never = [w for w in kept if w["drift_status"] == "never_run"]
    errors = [w for w in kept if w["drift_status"] == "error"]
    stales = [w for w in kept if stale(w)]
    assert gaps["neverRun"]["count"] == len(never)
    assert gaps["error"]["count"] == len(errors)
    assert gaps["staleChecks"]["count"] == len(stales)
    assert (
        sorted(g["name"] for g in gaps["error"]["watches"])
        == sorted(w["name"] for w in errors)[:100]
    )
    assert gaps["total"] == len({w["id"] for w in never + errors + stales})

    since = NOW - timedelta(days=30)
    totals: dict[str, int] = defaultdict(int)
    last: dict[str, datetime] = {}
    for e in mine.events:
        if e["watch_id"] in ids and e["detected_at"] >= since and e["breaking_count"] > 0:
            totals[e["watch_id"]] += e["breaking_count"]
            last[e["watch_id"]] = max(last.get(e["watch_id"], e["detected_at"]), e["detected_at"])
    hot = out["hotspots"]
    assert len(hot) == min(10, len(totals))
    top = sorted(totals.values(), reverse=True)[:10]
    assert [h["breakingCount30d"] for h in hot] == top
    for h in hot:
        assert (
            totals[h["watchId"]] == h["breakingCount30d"] and h["lastDriftAt"] == last[h["watchId"]]
        )
    assert out["summary"] == {
        "totalWatches": len(kept),
        "vendorCount": len({w["vendor"] for w in kept}),
        "gapCount": gaps["total"],
    }


def test_the_routes_scope_filter_and_download(
    client: FlaskClient, make_org: Callable[..., OrgKey], database: Database
) -> None:
    acme = make_org("acme", "pro")
    other = make_org("other", "pro")
    now = datetime.now(UTC)
    with database.transaction() as session:
        seed(session, "acme", now, watches=30, events=200, incidents=30, org_id=acme.org_id)
    mine = client.get("/api/portfolio/overview", headers=acme.headers)
    assert mine.status_code == 200, mine.get_json()
    assert mine.get_json()["health"]["total"] == 30
    theirs = client.get("/api/portfolio/overview", headers=other.headers).get_json()
    assert theirs["health"]["total"] == 0
    assert all(
        w["breaking"] == w["warning"] == w["info"] == 0
        for w in theirs["analytics"]["driftEventsByWeek"]
    )
    assert client.get("/api/portfolio/compass", headers=other.headers).get_json()["hotspots"] == []

    filtered = client.get("/api/portfolio/compass?watchType=api", headers=acme.headers).get_json()
    assert {r["key"] for r in filtered["coverage"]["byWatchType"]} <= {"rest"}

    download = client.get("/api/portfolio/compass?format=csv&table=byVendor", headers=acme.headers)
    assert download.status_code == 200 and download.mimetype == "text/csv"
    rows = list(csv.DictReader(io.StringIO(download.get_data(as_text=True))))
    compass = client.get("/api/portfolio/compass", headers=acme.headers).get_json()
    assert [(r["key"], int(r["watches"])) for r in rows] == [
        (r["key"], r["watches"]) for r in compass["coverage"]["byVendor"]
    ]
    weeks = client.get("/api/portfolio/overview?format=csv", headers=acme.headers)
    assert weeks.get_data(as_text=True).splitlines()[0] == "weekStart,breaking,warning,info"
    bad = client.get("/api/portfolio/overview?format=csv&table=nope", headers=acme.headers)
    assert bad.status_code == 400 and bad.get_json()["error"] == "validation_error"
    assert client.get("/api/portfolio/overview?days=0", headers=acme.headers).status_code == 400

    # With a discovery input: what it found that nothing watches.
    with database.session() as session:
        from sqlalchemy import select as sql_select

        from controller.store.models import Watch as WatchRow

        some_url = session.scalars(
            sql_select(WatchRow.url).where(WatchRow.org_id == acme.org_id).limit(1)
        ).one()
    found = client.post(
        "/api/portfolio/compass",
        json={"urls": [some_url, "https://api.unwatched-vendor.example.org/openapi.json"]},
        headers=acme.headers,
    )
    assert found.status_code == 200, found.get_json()
    body = found.get_json()
    assert body["found"]["discovered"] == 2 and body["found"]["unwatchedCount"] == 1
    assert body["found"]["unwatched"][0]["url"].startswith("https://api.unwatched-vendor")
    assert body["summary"] == compass["summary"]
    assert client.get("/api/portfolio/overview").status_code == 401


def test_dashboard_templates_are_saved_listed_and_scoped(
    client: FlaskClient, make_org: Callable[..., OrgKey], database: Database
) -> None:
    acme = make_org("acme", "pro")
    other = make_org("other", "pro")
    body = {
        "name": "Billing vendors",
        "description": "what billing depends on",
        "filters": {"tag": "team:billing", "watchType": "openapi"},
        "panels": ["health", "mttr", "hotspots"],
    }
    created = client.post("/api/portfolio/dashboards", json=body, headers=acme.headers)
    assert created.status_code == 201, created.get_json()
    saved = created.get_json()
    assert saved["system"] is False
    assert {k: v for k, v in saved["filters"].items() if v is not None} == body["filters"]
    listed = client.get("/api/portfolio/dashboards", headers=acme.headers).get_json()["dashboards"]
    assert [d["name"] for d in listed] == [
        "Production agents",
        "MCP health",
        "Vendor hotspots",
        "Billing vendors",
    ]
    overview = client.get("/api/portfolio/overview", headers=acme.headers).get_json()
    assert "Billing vendors" in [d["name"] for d in overview["dashboardTemplates"]]
    path = f"/api/portfolio/dashboards/{saved['id']}"
    assert client.get(path, headers=other.headers).status_code == 404
    assert "Billing vendors" not in [
        d["name"]
        for d in client.get("/api/portfolio/dashboards", headers=other.headers).get_json()[
            "dashboards"
        ]
    ]
    duplicate = client.post("/api/portfolio/dashboards", json=body, headers=acme.headers)
    assert duplicate.status_code == 409 and duplicate.get_json()["error"] == "duplicate_name"
    renamed = client.put(path, json={**body, "name": "Billing"}, headers=acme.headers)
    assert renamed.status_code == 200 and renamed.get_json()["name"] == "Billing"
    starter = "/api/portfolio/dashboards/system.mcp-health"
    assert client.get(starter, headers=acme.headers).get_json()["system"] is True
    assert client.put(starter, json=body, headers=acme.headers).status_code == 409
    bad = client.post(
        "/api/portfolio/dashboards", json={**body, "panels": ["nope"]}, headers=acme.headers
    )
    assert bad.status_code == 400
    assert client.delete(path, headers=other.headers).status_code == 404
    assert client.delete(path, headers=acme.headers).status_code == 204
    assert client.get(path, headers=acme.headers).status_code == 404
