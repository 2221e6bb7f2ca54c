"""Git sources and their push webhooks (org-scoped)."""

from __future__ import annotations

from typing import Any

from controller.errors import ValidationFailed
from controller.gitsources import service as source_service
from web.api import REGISTRY
from web.body import read_json
from web.routes import Call

route = REGISTRY.tagged("sources")


@route("GET /api/sources", "List git sources")
def list_sources(call: Call) -> source_service.SourceList:
    """The org's git sources with their revisions, conditions, problems and last runs."""
    return source_service.list_sources(call.session, call.settings, call.org_id)


@route("GET /api/sources/<name>", "One git source")
def get_source(call: Call) -> source_service.SourceOut:
    """`lastFetchedRevision`, `lastAttemptedRevision`, `lastAppliedRevision`, conditions
    `Ready` / `Reconciling` / `Stalled`, the problems of the last invalid revision with
    file:line:column, and the last runs."""
    return source_service.get_source(call.session, call.settings, call.org_id, call.path["name"])


@route("POST /api/sources/<name>/reconcile", "Request a reconcile", status=202)
def reconcile_source(call: Call) -> source_service.ReconcileQueued:
    """Queues a reconcile of the source now; the controller runs it (202)."""
    return source_service.queue_reconcile(
        call.session, call.settings, call.org_id, call.path["name"], call.now
    )


@route("POST /hooks/github", "GitHub push webhook", auth="none", status=202, errors=(401,))
def github_hook(call: Call) -> source_service.HookAccepted:
    """Verifies `X-Hub-Signature-256`, ignores a repeated `X-GitHub-Delivery`, queues the
    sources of the pushed repository and branch, and answers 202 without touching git."""
    payload = github_delivery(call)
    return source_service.accept_push(
        call.session,
        call.settings,
        call.headers.get("X-GitHub-Delivery"),
        call.headers.get("X-GitHub-Event"),
        payload,
        call.now,
    )


def github_delivery(call: Call) -> dict[str, Any]:
    """The JSON object GitHub delivered to a webhook, once `X-Hub-Signature-256` shows it was
    signed with `github_webhook_secret` (401 otherwise; 400 when it is not an object)."""
    body = call.read_body()
    secret = call.settings.github_webhook_secret
    source_service.verify_github_signature(
        secret.get_secret_value() if secret else None, body, call.headers.get("X-Hub-Signature-256")
    )
    payload = read_json(body)
    if not isinstance(payload, dict):
        raise ValidationFailed("the webhook body must be a JSON object")
    return payload
