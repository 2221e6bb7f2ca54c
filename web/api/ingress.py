"""Runtime ingress validation (`POST /api/validate`) and the hosted consumer profiles
(`/api/ingress-profiles`). See docs/validate.md."""

from __future__ import annotations

from pydantic import RootModel

from controller.compat import service as compat
from controller.ingress import service
from web.api import REGISTRY
from web.routes import Call, ErrorEnvelope, Reply

route = REGISTRY.tagged("ingress")

REMAINING_HEADER = "X-Service-Validations-Remaining"
SOURCE_HEADER = "X-Service-Source"


class ValidateRefusal(RootModel[service.ValidateOut | ErrorEnvelope]):
    """422: the payload does not fit (the answer, in `block` and `quarantine` modes), or the
    request cannot be acted on (the error envelope: `profile_invalid`, a private webhook)."""


@route(
    "POST /api/validate",
    "Validate a payload against a consumer profile",
    auth="key_or_trial",
    body=service.ValidateIn,
    responses={200: service.ValidateOut, 422: ValidateRefusal},
    errors=(402, 403, 404, 429, 503),
    max_body=service.MAX_BODY_BYTES,
    lane=True,
)
def validate(call: Call) -> Reply:
    """Checks `payload` against the profile (inline, or `profileId` from the registry): 200
    when it fits, or in `warn` mode; 422 with the same answer when it does not (`block`,
    `quarantine`: then a signed `ingress.quarantine` event goes to `options.webhookUrl`).
    400 for a body the schema refuses (an inline profile's shape included); 422
    `profile_invalid` for a profile that cannot be used (a schema that does not compile,
    nests deeper than 32 levels or refers outside itself), or a webhook at a private
    address; 401 without a key or trial; 402 when the month's quota is used up; 403 on the
    free plan; 413 over 256 KB (a profile over 64 KB); 429 over the burst limit
    (`Retry-After`); 503 when validation is off. The payload is never stored or logged."""
    principal = call.principal_required
    client = call.trial.id if call.trial is not None else principal.credential_id
    call.resources.limiter.hit(
        "validate",
        client,
        per_minute=call.settings.validate_per_minute,
        burst=call.settings.validate_burst,
    )
    # fuseguard labels its calls `X-DriftGuard-Source: fuseguard` (the hosted name).
    source = (compat.header(call.headers, SOURCE_HEADER) or "").strip()[:100] or None
    status, answer = service.validate_call(
        call.session,
        call.settings,
        call.secret_box,
        principal,
        call.trial,
        call.body,
        correlation_id=call.correlation_id,
        source=source,
        started=call.started,
        now=call.now,
    )
    headers = {}
    if answer.validations_remaining is not None:
        headers[REMAINING_HEADER] = str(answer.validations_remaining)
    return Reply(status, answer, headers)


@route("GET /api/ingress-profiles", "List consumer profiles")
def list_profiles(call: Call) -> service.ProfileList:
    """The org's consumer profiles, by id."""
    return service.list_profiles(call.session, call.org_id)


@route(
    "PUT /api/ingress-profiles/<profile_id>",
    "Store a consumer profile",
    body=service.ProfileIn,
    responses={200: service.ProfileOut, 201: service.ProfileOut},
    errors=(409, 422),
)
def put_profile(call: Call) -> Reply:
    """Stores the profile under its id (the path's): 201 when new, 200 when replaced by a
    higher version or sent again unchanged. A lower or equal version with other content is
    409 `version_conflict`; a profile from a git source is 409 `managed_by_source`; a body
    the schema refuses is 400; one whose `id` is not the path's, or that the validator
    cannot use, is 422 `profile_invalid`; over 64 KB is 413."""
    row, created = service.put_profile(
        call.session, call.principal_required, call.path["profile_id"], call.body.root, call.now
    )
    return Reply(201 if created else 200, service.profile_out(row))


@route("GET /api/ingress-profiles/<profile_id>", "Show a consumer profile")
def get_profile(call: Call) -> service.ProfileOut:
    """One profile of the org's registry."""
    return service.profile_out(
        service.get_profile(call.session, call.org_id, call.path["profile_id"])
    )


@route("DELETE /api/ingress-profiles/<profile_id>", "Delete a consumer profile", errors=(409,))
def delete_profile(call: Call) -> Reply:
    """Removes a profile (409 `managed_by_source` for one from git)."""
    service.delete_profile(call.session, call.principal_required, call.path["profile_id"])
    return Reply(204)
