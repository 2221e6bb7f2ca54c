"""Portfolio views (`/api/portfolio/...`): the overview and the compass, as JSON or CSV. See
docs/portfolio.md."""

from __future__ import annotations

from flask import Response

from controller.portfolio import service
from web.api import REGISTRY
from web.routes import Call, Reply

route = REGISTRY.tagged("portfolio")

CSV = {"text/csv": {"schema": {"type": "string"}}}


def _csv(rows: list[dict[str, object]], name: str) -> Response:
    return Response(
        service.to_csv(rows),
        mimetype="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{name}.csv"'},
    )


@route(
    "GET /api/portfolio/overview",
    "Portfolio overview",
    query=service.OverviewQuery,
    out=service.OverviewOut,
    raw_response=CSV,
)
def portfolio_overview(call: Call) -> Reply | Response:
    """Health (by drift status and health band, stale checks), analytics (drift events by
    week for 12 weeks, MTTR overall, by vendor, watch type and resolution, incidents, checks
    in the last 24 hours), the alert delivery statistics and the dashboard templates;
    filtered by `tag`, `vendor`, `watchType`, `environment`, MTTR over `days`. `format=csv`
    downloads a table (`table`: weeks, mttrByVendor, mttrByWatchType)."""
    out = service.overview(call.session, call.org_id, call.query, call.now)
    if call.query.format == "csv":
        return _csv(service.overview_table(out, call.query.table), "portfolio-overview")
    return Reply(200, out)


@route(
    "GET /api/portfolio/compass",
    "Portfolio compass",
    query=service.CompassQuery,
    out=service.CompassOut,
    raw_response=CSV,
)
def portfolio_compass(call: Call) -> Reply | Response:
    """Coverage by vendor, watch type and tag (each split by drift status), the gaps (never
    run, stale checks, errors), the hotspots (breaking drift in the last 30 days) and a
    summary; the same filters. `format=csv` downloads a table (`table`: byVendor,
    byWatchType, byTag, hotspots, gaps)."""
    out = service.compass(call.session, call.org_id, call.query, call.now)
    if call.query.format == "csv":
        return _csv(service.compass_table(out, call.query.table), "portfolio-compass")
    return Reply(200, out)


@route(
    "POST /api/portfolio/compass",
    "Portfolio compass with what a discovery found",
    query=service.CompassQuery,
    body=service.CompassFoundIn,
    errors=(422,),
)
def portfolio_compass_found(call: Call) -> service.CompassOut:
    """The compass, plus `found`: what the input's dependencies hold (URLs, text, an MCP
    configuration, or a repository's `files` as for POST /api/repo/scan) that the org does
    not watch (at or above `minConfidence`). A configuration that cannot be read is 422
    `config_invalid`."""
    return service.compass_found(
        call.session, call.principal_required, call.query, call.body, call.now
    )


@route("POST /api/ask", "Ask about the portfolio", auth="key_or_trial", body=service.AskIn)
def ask_question(call: Call) -> service.AskOut:
    """Read-only answers about breaking drift, MCP health, mean time to repair, vendor
    hotspots and coverage gaps, with time windows and vendor, tag or type filters (the
    grammar: docs/portfolio.md). Pro plans and higher: the org's live data, with citations;
    free plans and trial sessions: fixture answers (`fixture: true`). A question that is not
    understood answers `intent: unknown` and what can be asked."""
    principal = call.principal_required
    return service.ask(
        call.session, principal.org_id, principal.plan, call.trial is not None, call.body, call.now
    )


@route("GET /api/portfolio/dashboards", "List dashboard templates")
def list_dashboards(call: Call) -> service.DashboardList:
    """The system starters (`system: true`) and the org's own dashboards (from the API and
    from git), by name."""
    return service.list_dashboards(call.session, call.org_id)


@route(
    "POST /api/portfolio/dashboards",
    "Save a dashboard template",
    body=service.DashboardIn,
    status=201,
    errors=(409,),
)
def create_dashboard(call: Call) -> service.DashboardOut:
    """A named view: filters (`tag`, `vendor`, `watchType`, `environment`) and the panels
    shown. Names are unique in the org (409 `duplicate_name`)."""
    return service.save_dashboard(call.session, call.principal_required, call.body, call.now)


@route("GET /api/portfolio/dashboards/<dashboard_id>", "A dashboard template")
def get_dashboard(call: Call) -> service.DashboardOut:
    """One of the org's dashboards, or a starter (`system....`)."""
    return service.get_dashboard(call.session, call.org_id, call.path["dashboard_id"])


@route(
    "PUT /api/portfolio/dashboards/<dashboard_id>",
    "Replace a dashboard template",
    body=service.DashboardIn,
    errors=(409,),
)
def replace_dashboard(call: Call) -> service.DashboardOut:
    """Replaces one of the org's dashboards; starters and dashboards from git answer 409."""
    return service.save_dashboard(
        call.session, call.principal_required, call.body, call.now, call.path["dashboard_id"]
    )


@route(
    "DELETE /api/portfolio/dashboards/<dashboard_id>", "Delete a dashboard template", errors=(409,)
)
def delete_dashboard(call: Call) -> Reply:
    """Deletes one of the org's dashboards (audited); starters and git's answer 409."""
    service.delete_dashboard(call.session, call.principal_required, call.path["dashboard_id"])
    return Reply(204)
