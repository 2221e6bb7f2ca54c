"""Agents in the console: bindings with their composite status and policy; kill, unblock and
acknowledge with the API's rules (approval rules, acknowledgement required); a new binding
(API-managed; agents declared in git stay read-only)."""

from __future__ import annotations

from flask import current_app, redirect, request, url_for
from werkzeug.wrappers import Response

from controller.accounts.service import SignedIn
from controller.agents import service
from controller.errors import Unprocessable
from controller.fuse import service as fuse
from controller.model.watch import WatchListQuery
from controller.watches import service as watch_service
from web.body import validate
from web.console import action, blueprint, now, page, signed_in
from web.db import request_session


@blueprint.get("/agents")
@signed_in
def agents(user: SignedIn) -> Response:
    listed = service.list_agents(request_session(), user.org_id).agents
    statuses = {
        a.id: service.agent_status(request_session(), user.org_id, a.id, now()) for a in listed
    }
    watches, _ = watch_service.list_watches(
        request_session(), user.org_id, WatchListQuery(limit=200)
    )
    return page(
        "agents.html",
        user,
        agents=listed,
        statuses=statuses,
        watches=watches,
        presets=service.policy_presets(),
    )


@blueprint.get("/agents/<agent_id>")
@signed_in
def agent(user: SignedIn, agent_id: str) -> Response:
    status = service.agent_status(request_session(), user.org_id, agent_id, now())
    trips = fuse.list_trips(
        request_session(), user.org_id, fuse.TripListQuery(agent_id=status.agent.slug, limit=10)
    )
    return page(
        "agent.html", user, status=status, presets=service.policy_presets(), trips=trips.trips
    )


@blueprint.post("/agents")
@action
def bind(user: SignedIn) -> Response:
    form = request.form
    key = form.get("key", "").strip()
    if not key:
        raise Unprocessable("an agent needs an id", code="agent_id_required")
    policy = form.get("policy", "notify-only")
    if policy not in service.policy_presets():
        raise Unprocessable(f"unknown policy {policy!r}", code="unknown_policy")
    watch = watch_service.get_watch(request_session(), user.org_id, form.get("watchId", ""))
    bound = service.bind(
        request_session(),
        user.principal(),
        key,
        watch,
        policy=policy,
        name=form.get("name", "").strip() or None,
        environment=form.get("environment", "").strip() or None,
    )
    return redirect(url_for("console.agent", agent_id=bound.key))


def _note() -> service.AgentNote:
    return validate(
        service.AgentNote, {"note": request.form.get("note", "").strip() or None}, "form"
    )


@blueprint.post("/agents/<agent_id>/edit")
@action
def edit(user: SignedIn, agent_id: str) -> str:
    form = request.form
    service.edit_agent(
        request_session(),
        user.principal(),
        agent_id,
        policy=form.get("policy", ""),
        name=form.get("name", "").strip()[:200] or None,
        environment=form.get("environment", "").strip()[:63] or None,
    )
    return url_for("console.agent", agent_id=agent_id)


@blueprint.post("/agents/<agent_id>/unbind/<watch_id>")
@action
def unbind(user: SignedIn, agent_id: str, watch_id: str) -> str:
    service.unbind(request_session(), user.principal(), agent_id, watch_id)
    return url_for("console.agent", agent_id=agent_id)


@blueprint.post("/agents/<agent_id>/kill")
@action
def kill(user: SignedIn, agent_id: str) -> str:
    return _runtime_changed(user, agent_id, service.kill_agent)


@blueprint.post("/agents/<agent_id>/unblock")
@action
def unblock(user: SignedIn, agent_id: str) -> str:
    return _runtime_changed(user, agent_id, service.unblock_agent)


def _runtime_changed(user: SignedIn, agent_id: str, change: service.RuntimeChange) -> str:
    """Kill or unblock the agent with the note of the form; back to the agent's page."""
    box = current_app.extensions["driftgate.secret_box"]
    change(request_session(), user.principal(), agent_id, _note().note, box, now())
    return url_for("console.agent", agent_id=agent_id)


@blueprint.post("/agents/<agent_id>/ack")
@action
def ack(user: SignedIn, agent_id: str) -> str:
    form = request.form
    data = validate(
        service.AgentAck,
        {
            "note": form.get("note", "").strip() or None,
            "repository": form.get("repository", "").strip() or None,
            "branch": form.get("branch", "").strip() or None,
        },
        "form",
    )
    box = current_app.extensions["driftgate.secret_box"]
    service.ack_agent(request_session(), user.principal(), agent_id, data, box, now())
    return url_for("console.agent", agent_id=agent_id)
