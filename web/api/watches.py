"""Watches: list, create, read, update, delete, pause and resume (org-scoped)."""

from __future__ import annotations

from flask import current_app

from controller.crypto import SecretBox
from controller.model.watch import WatchCreate, WatchList, WatchListQuery, WatchOut, WatchUpdate
from controller.services import watches as service
from web.api import REGISTRY
from web.routes import Call, Reply


def _box() -> SecretBox:
    box: SecretBox = current_app.extensions["driftgate.secret_box"]
    return box


@REGISTRY.route(
    "GET",
    "/api/watches",
    summary="List watches",
    tag="watches",
    auth="key_or_trial",
    query=WatchListQuery,
    responses={200: WatchList},
)
def list_watches(call: Call) -> WatchList:
    """Watches of the caller's org, oldest first, filtered by tag (all given), status and type."""
    rows, cursor = service.list_watches(call.session, call.org_id, call.query)
    return service.to_list(rows, cursor, call.now)


@REGISTRY.route(
    "POST",
    "/api/watches",
    summary="Create a watch",
    tag="watches",
    body=WatchCreate,
    responses={201: WatchOut},
    errors=(409, 422),
)
def create_watch(call: Call) -> Reply:
    """Creates a watch in `never_run`; `watchType` is inferred from the URL when it is clear."""
    watch = service.create_watch(call.session, call.principal_required, call.body, _box())
    return Reply(201, service.to_out(watch, call.now), {"Location": f"/api/watches/{watch.id}"})


@REGISTRY.route(
    "GET",
    "/api/watches/<watch_id>",
    summary="Read a watch",
    tag="watches",
    responses={200: WatchOut},
)
def get_watch(call: Call) -> WatchOut:
    """One watch of the caller's org; another org's id answers 404."""
    return service.to_out(
        service.get_watch(call.session, call.org_id, call.path["watch_id"]), call.now
    )


@REGISTRY.route(
    "PATCH",
    "/api/watches/<watch_id>",
    summary="Update a watch",
    tag="watches",
    body=WatchUpdate,
    responses={200: WatchOut},
    errors=(409,),
)
def update_watch(call: Call) -> WatchOut:
    """Changes only the fields sent; `headers: null` removes the stored headers."""
    watch = service.update_watch(
        call.session, call.principal_required, call.path["watch_id"], call.body, _box()
    )
    return service.to_out(watch, call.now)


@REGISTRY.route(
    "DELETE",
    "/api/watches/<watch_id>",
    summary="Delete a watch",
    tag="watches",
    responses={204: None},
    errors=(409,),
)
def delete_watch(call: Call) -> Reply:
    """Deletes the watch; git-managed watches answer 409 `managed_by_source`."""
    service.delete_watch(call.session, call.principal_required, call.path["watch_id"])
    return Reply(204)


@REGISTRY.route(
    "POST",
    "/api/watches/<watch_id>/pause",
    summary="Pause a watch",
    tag="watches",
    responses={200: WatchOut},
    errors=(409,),
)
def pause_watch(call: Call) -> WatchOut:
    """Sets `driftStatus` to `disabled`; paused watches are not checked and block preflight."""
    return service.to_out(
        service.pause_watch(call.session, call.principal_required, call.path["watch_id"]), call.now
    )


@REGISTRY.route(
    "POST",
    "/api/watches/<watch_id>/resume",
    summary="Resume a watch",
    tag="watches",
    responses={200: WatchOut},
    errors=(409,),
)
def resume_watch(call: Call) -> WatchOut:
    """Recomputes `driftStatus` from the last check (never_run, ok, drifted or error)."""
    return service.to_out(
        service.resume_watch(call.session, call.principal_required, call.path["watch_id"]), call.now
    )
