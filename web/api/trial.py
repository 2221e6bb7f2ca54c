"""`POST /api/trial/session`: mint a trial session (a sandbox org, 500 validations a month)."""

from __future__ import annotations

from controller.orgs import auth_service
from web.api import REGISTRY
from web.routes import TRIAL_SESSIONS, Call, Reply

route = REGISTRY.tagged("auth")


@route(
    "POST /api/trial/session",
    "Start a trial session",
    auth="none",
    out=auth_service.TrialOut,
    status=201,
    errors=(429,),
    switch=TRIAL_SESSIONS,
)
def create_trial_session(call: Call) -> Reply:
    """Returns a token for the `X-Service-Trial` header; it is shown once and expires. Each
    trial session owns a sandbox org of its own (plan `free`, never listed as a real org)."""
    call.rate_limit("trial", per_minute=6, burst=10)
    return Reply(
        201,
        auth_service.start_trial(
            call.session,
            call.now,
            call.settings.trial_days,
            call.settings.trial_validations_per_month,
        ),
    )
