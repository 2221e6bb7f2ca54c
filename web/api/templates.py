"""Templates, launching watches from them, and org watch sets (org-scoped)."""

from __future__ import annotations

from controller.agents import service as agent_service
from controller.agents import templates_service as service
from controller.drift import service as drift
from controller.notifications import service as notifications
from controller.watches import sets_service as watch_sets
from web.api import REGISTRY
from web.routes import Call, Reply

route = REGISTRY.tagged("org")


@route("GET /api/templates", "List templates", tag="templates")
def list_templates(call: Call) -> service.TemplateList:
    """System starter templates (`system: true`) beside the org's own, from git and the API.
    Header values are never shown."""
    return service.list_templates(call.session, call.org_id)


@route(
    "POST /api/templates",
    "Create a template",
    tag="templates",
    body=service.TemplateCreate,
    status=201,
    errors=(409, 422),
)
def create_template(call: Call) -> service.TemplateOut:
    """An org template; headers are encrypted at rest. Names are unique in the org and
    `system/` is reserved."""
    template = service.create_template(
        call.session, call.principal_required, call.body, call.secret_box
    )
    return service.template_out(template)


@route("DELETE /api/templates/<template_id>", "Delete a template", tag="templates", errors=(409,))
def delete_template(call: Call) -> Reply:
    """Removes an org template (by id or name); watches launched from it keep their values.
    Templates from git answer 409 `managed_by_source`; system templates are not the org's (404)."""
    service.delete_template(call.session, call.principal_required, call.path["template_id"])
    return Reply(204)


@route(
    "POST /api/watches/from-template",
    "Launch a watch from a template",
    tag="templates",
    body=service.LaunchFromTemplate,
    out=service.LaunchOut,
    status=201,
    errors=(404, 409, 422),
)
def launch_from_template(call: Call) -> Reply:
    """Creates a new watch from the template's values with the overrides sent (URL, headers,
    policy, tags, interval), optionally in an API watch set and bound to an agent; a new agent
    inherits the policy preset. Launching again creates another watch; nothing is linked."""
    interval = notifications.default_interval(call.session, call.org_id)
    watch, ref, agent = service.launch(
        call.session, call.principal_required, call.body, call.secret_box, default_interval=interval
    )
    out = service.LaunchOut(
        watch=drift.watch_out(call.session, watch, call.now),
        template=ref,
        agent=agent_service.agent_out(agent) if agent is not None else None,
    )
    return Reply(201, out, {"Location": f"/api/watches/{watch.id}"})


@route("GET /api/org/watch-sets", "List watch sets")
def list_watch_sets(call: Call) -> watch_sets.WatchSetList:
    """The org's watch sets, from git (`managedBy`) and the API, with their watch ids."""
    return watch_sets.list_sets(call.session, call.org_id)


@route(
    "POST /api/org/watch-sets",
    "Create a watch set",
    body=watch_sets.WatchSetIn,
    out=watch_sets.WatchSetOut,
    status=201,
    errors=(409, 422),
)
def create_watch_set(call: Call) -> Reply:
    """A named set of the org's watches; a watch is in at most one set."""
    watch_set = watch_sets.create_set(call.session, call.principal_required, call.body)
    return Reply(
        201,
        watch_sets.watch_set_out(call.session, watch_set),
        {"Location": f"/api/org/watch-sets/{watch_set.id}"},
    )


@route("GET /api/org/watch-sets/<set_id>", "Read a watch set")
def get_watch_set(call: Call) -> watch_sets.WatchSetOut:
    """One watch set of the org; another org's id answers 404."""
    return watch_sets.watch_set_out(
        call.session, watch_sets.get_set(call.session, call.org_id, call.path["set_id"])
    )


@route(
    "PUT /api/org/watch-sets/<set_id>",
    "Replace a watch set",
    body=watch_sets.WatchSetIn,
    errors=(409, 422),
)
def replace_watch_set(call: Call) -> watch_sets.WatchSetOut:
    """Replaces name, environment, description and members; watches left out leave the set.
    Sets from git answer 409 `managed_by_source`."""
    watch_set = watch_sets.replace_set(
        call.session, call.principal_required, call.path["set_id"], call.body
    )
    return watch_sets.watch_set_out(call.session, watch_set)


@route("DELETE /api/org/watch-sets/<set_id>", "Delete a watch set", errors=(409,))
def delete_watch_set(call: Call) -> Reply:
    """Removes the set; its watches stay, in no set. Sets from git answer 409."""
    watch_sets.delete_set(call.session, call.principal_required, call.path["set_id"])
    return Reply(204)
