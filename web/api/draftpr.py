"""Draft pull requests (`/v1/draftpr/...`) and the org's overlay products (`/api/org/products`).

The web process never writes to GitHub: opening a pull request records it and queues a job
for the controller, then waits a little for the answer; GitHub's deliveries are verified,
recorded and queued (202). See docs/draft-prs.md.
"""

from __future__ import annotations

from controller.draftpr import service
from controller.errors import UpstreamError
from controller.gitsources import service as source_service
from web.api import REGISTRY
from web.api.gitops import github_delivery
from web.routes import Call, Reply, requires_product

route = REGISTRY.tagged("draftpr")

PRODUCT = requires_product(service.PRODUCT)


# -- overlay products ----------------------------------------------------------------------


@route("GET /api/org/products", "Overlay products of the org", tag="org")
def list_products(call: Call) -> service.ProductsOut:
    """`replay_cloud`, `draftpr_repo` and `toolmanifest_org`, each enabled or not; `canEnable`
    is false on the free plan."""
    return service.products(call.session, call.org_id)


@route(
    "PUT /api/org/products/<product>",
    "Enable or disable an overlay product",
    tag="org",
    body=service.ProductIn,
    errors=(403,),
)
def put_product(call: Call) -> service.ProductsOut:
    """Switches one product on or off (audited). A free org cannot enable any: 403
    `plan_required`. An unknown product is 404."""
    return service.set_product(
        call.session, call.principal_required, call.path["product"], call.body.enabled
    )


# -- draft pull requests -------------------------------------------------------------------


@route(
    "POST /v1/draftpr/webhook",
    "Open a draft pull request for a drift event",
    body=service.DraftPrWebhookIn,
    responses={200: service.DraftPrOut, 201: service.DraftPrOut, 202: service.DraftPrAccepted},
    errors=(404, 502),
)
def draftpr_webhook(call: Call) -> Reply:
    """Opens the pull request for `driftEventId` (which must belong to `watchId`: else 404
    `Drift event not found`) in `repoFullName` through the org's App installation: branch
    `driftgate/drift/<eventId>`, changelog `.driftgate/changes/<eventId>.md`, the vendored
    contract at `vendoredPath`, a draft pull request (201). The same event and repository
    again answer the same record (200). Without App credentials the record is a stub with a
    deterministic number, and `installationId` (an integer or its digits) is only recorded:
    no link is needed. With App credentials it must be one of the org's links (404
    `installation_not_linked`). GitHub's refusals are 502 naming the cause; still running
    after the wait: 202 with state `pending`. Product off: 202 with the error envelope
    `{"error": "schemasync_disabled", "message": ...}` (and `code`, the same token)."""
    principal = call.principal_required
    if service.PRODUCT not in principal.products:
        disabled = service.SchemasyncDisabled(
            message=f"the {service.PRODUCT} product is not enabled for this org"
        )
        return Reply(202, service.DraftPrAccepted(disabled))
    row, created = service.request_draft_pr(
        call.session, principal, call.body, call.settings, call.now
    )
    call.session.commit()
    if row.state == "pending":
        row = service.wait_for_draft_pr(call.database, row.id, service.MAX_WAIT)
    if row.state == "failed":
        raise UpstreamError(row.error or "GitHub refused the pull request", code="github_error")
    if row.state == "pending":
        return Reply(202, service.DraftPrAccepted(service.draft_pr_out(row)))
    return Reply(201 if created else 200, service.draft_pr_out(row))


@route(
    "POST /v1/draftpr/remediate",
    "Open the draft pull requests a watch's draft_pr policies ask for",
    body=service.RemediateIn,
    responses={200: service.RemediationOut, 202: service.RemediationOut},
    guards=(requires_product(service.PRODUCT),),
    errors=(404, 422),
)
def remediate(call: Call) -> Reply:
    """What the `draft_pr` policy action does when the watch turns drifted, now: for each
    agent bound to the watch whose policy lists `draft_pr`, the pull request of the drift
    event (`driftEventId`; default: the open incident's, else the latest) in the agent's
    `repoRef` repository. 202 when a pull request was queued now (the controller opens it),
    200 when each one already existed. Another org's watch or event: 404; no drift event: 422
    `no_drift_event`; no agent with a `draft_pr` policy and a GitHub `repoRef`: 422
    `no_remediation_target`."""
    answer, made = service.remediate(call.session, call.principal_required, call.body, call.now)
    return Reply(202 if made else 200, answer)


@route("GET /v1/draftpr/draft-prs", "List draft pull requests")
def list_draft_prs(call: Call) -> service.DraftPrList:
    """The org's pull requests, newest first (at most 500)."""
    return service.list_draft_prs(call.session, call.org_id)


@route("GET /v1/draftpr/draft-prs/<draft_pr_id>", "Show a draft pull request")
def get_draft_pr(call: Call) -> service.DraftPrOut:
    """One pull request record of the org."""
    return service.draft_pr_out(
        service.get_draft_pr(call.session, call.org_id, call.path["draft_pr_id"])
    )


@route(
    "POST /v1/draftpr/draft-pr/merged",
    "Record a merge by hand",
    body=service.MergedIn,
    guards=(PRODUCT,),
    errors=(403, 404),
)
def record_merged(call: Call) -> service.MergedOut:
    """Records the merge of one of the org's pull requests: the event's contract becomes the
    baseline, the incident resolves, the bound agents are unblocked (`agent.unblocked`).
    When an agent bound to the watch declares remediation approval rules, they are judged
    against the pull request's own repository and base branch (as recorded when it was
    opened; `approval`), never against anything sent here: a refusal is 403
    `approval_refused` and nothing is recorded. Recording it twice changes nothing."""
    row = service.get_draft_pr(call.session, call.org_id, call.body.draft_pr_id)
    return service.merge_by_hand(
        call.session, call.principal_required, row, call.secret_box, call.now
    )


# -- installations -----------------------------------------------------------------------


@route("GET /v1/draftpr/installations", "GitHub App installations of the org")
def list_installations(call: Call) -> service.InstallationList:
    """The installations linked to the org, and the install link (when `github_app_slug` is
    set) carrying a signed state that names the org."""
    return service.list_installations(call.session, call.org_id, call.settings, call.secret_box)


@route(
    "POST /v1/draftpr/installations",
    "Link an installation by its id",
    body=service.InstallationLinkIn,
    status=201,
    guards=(PRODUCT,),
    errors=(403, 409, 502),
)
def link_installation(call: Call) -> service.InstallationOut:
    """Links the App installation with this numeric id (an integer or its digits) to the
    org, verified against the App's installations (502 when GitHub does not know it). Only
    an installation on a GitHub account the org has proven (through the install flow, or
    the operator's link) may be linked by id: 403 `installation_not_proven` otherwise; one
    linked to another org is 409 `installation_linked_elsewhere`. Without App credentials it
    is recorded `unverified` (local development): never used for a pull request."""
    with service.app_for(call.settings) as app:
        found = service.verify_installation(app, call.body.installation_id)
    link = service.link_installation(
        call.session,
        call.principal_required,
        call.body.installation_id,
        found,
        call.now,
        how=service.BY_ACCOUNT,
    )
    return service.installation_out(link)


@route(
    "GET /api/account/draftpr/github/callback",
    "Return address of the App install flow",
    auth="none",
    query=service.CallbackQuery,
    errors=(401, 403, 404, 409, 502),
)
def install_callback(call: Call) -> service.InstallationOut:
    """GitHub sends the installer here with `installation_id`, `setup_action` and the `state`
    the install link carried; a valid, unexpired state (401 otherwise) links the
    installation to the org it names and answers the linked installation. An installation
    made before the link was issued is 403 `installation_not_proven` (unless it is the
    org's already), one linked to another org 409 `installation_linked_elsewhere`."""
    query: service.CallbackQuery = call.query
    org_id, issued = service.verify_state(call.secret_box, query.state, call.now)
    installation_id = int(query.installation_id)
    with service.app_for(call.settings) as app:
        found = service.verify_installation(app, installation_id)
    # A GET's request session reads without the write lock: the link is written in a
    # transaction of its own (the request session is never opened).
    with call.database.transaction() as session:
        link = service.link_from_install(session, org_id, issued, installation_id, found, call.now)
        return service.installation_out(link)


@route(
    "POST /v1/draftpr/github/webhook",
    "GitHub App deliveries",
    auth="none",
    status=202,
    errors=(401,),
)
def github_app_webhook(call: Call) -> source_service.HookAccepted:
    """Verifies `X-Hub-Signature-256` with `github_webhook_secret` (401 otherwise), ignores a
    repeated `X-GitHub-Delivery`, queues `pull_request` and `installation` events for the
    controller and answers 202 at once; other events are acknowledged and ignored."""
    payload = github_delivery(call)
    delivery = call.headers.get("X-GitHub-Delivery")
    if source_service.seen_delivery(call.session, delivery, call.now):
        return source_service.HookAccepted(queued=[], duplicate=True)
    queued = service.queue_delivery(
        call.session, delivery, call.headers.get("X-GitHub-Event"), payload, call.now
    )
    return source_service.HookAccepted(queued=["draftpr"] if queued else [])
