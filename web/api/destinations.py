"""An org's named destinations (PagerDuty, Opsgenie, Teams, Discord, e-mail, Slack, webhooks):
their settings, secrets (never answered), routing, digest and health. See
docs/destinations.md."""

from __future__ import annotations

from controller.destinations import service
from web.api import REGISTRY
from web.routes import Call, Reply

route = REGISTRY.tagged("destinations")


@route("GET /api/org/destinations", "The org's destinations and their health")
def list_destinations(call: Call) -> service.NamedDestinationList:
    """Every destination by name, with its secrets as hints, its routing and its health (last
    attempt, last error, failed attempts in a row, next retry), and the kinds there are."""
    return service.list_destinations(call.session, call.org_id)


@route(
    "POST /api/org/destinations",
    "Add a destination",
    body=service.NamedDestinationIn,
    responses={201: service.NamedDestinationOut},
    errors=(409, 422),
)
def create_destination(call: Call) -> Reply:
    """Adds a destination (audited, without its secrets): `kind` names the channel, `settings`
    and `secrets` are the kind's (422 naming the field when wrong), `routing` filters the
    events it takes; 409 when the org has a destination of that name."""
    created = service.create(call.session, call.principal_required, call.body, call.secret_box)
    return Reply(201, created)


@route("GET /api/org/destinations/<destination_id>", "A destination and its health", errors=(404,))
def get_destination(call: Call) -> service.NamedDestinationOut:
    """One destination (404 for an id of another org)."""
    return service.get(call.session, call.org_id, call.path["destination_id"])


@route(
    "PUT /api/org/destinations/<destination_id>",
    "Replace a destination",
    body=service.NamedDestinationIn,
    errors=(404, 409, 422),
)
def replace_destination(call: Call) -> service.NamedDestinationOut:
    """Replaces a destination (audited); without `secrets` the stored ones are kept while the
    kind is unchanged."""
    return service.replace(
        call.session,
        call.principal_required,
        call.path["destination_id"],
        call.body,
        call.secret_box,
    )


@route("DELETE /api/org/destinations/<destination_id>", "Delete a destination", errors=(404,))
def delete_destination(call: Call) -> Reply:
    """Deletes a destination (audited); its messages not yet sent give up."""
    service.delete(call.session, call.principal_required, call.path["destination_id"], call.now)
    return Reply(204)


@route(
    "POST /api/org/destinations/<destination_id>/test",
    "Send a test message to a destination",
    responses={202: service.DestinationTestOut},
    errors=(404,),
)
def test_destination(call: Call) -> Reply:
    """Queues a `destination.test` event for this destination alone; the controller's
    delivery lane sends it, and the destination's health says how it went."""
    queued = service.send_test(
        call.session,
        call.principal_required,
        call.path["destination_id"],
        call.secret_box,
        call.now,
    )
    return Reply(202, queued)
