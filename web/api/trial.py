"""`POST /api/trial/session`: mint a trial session (a sandbox org, 500 validations a month)."""

from __future__ import annotations

from datetime import datetime

from controller.model.base import ApiModel
from controller.services import auth as auth_service
from web.api import REGISTRY
from web.routes import Call, Reply


class TrialOut(ApiModel):
    token: str
    header: str
    expires_at: datetime
    validations_per_month: int
    validations_remaining: int


@REGISTRY.route(
    "POST",
    "/api/trial/session",
    summary="Start a trial session",
    tag="auth",
    auth="none",
    responses={201: TrialOut},
    errors=(429,),
)
def create_trial_session(call: Call) -> Reply:
    """Returns a token for the `X-Service-Trial` header; it is shown once and expires."""
    call.rate_limit("trial", per_minute=6, burst=10)
    trial, token = auth_service.create_trial(call.session, call.now, call.settings.trial_days)
    allowance = call.settings.trial_validations_per_month
    return Reply(
        201,
        TrialOut(
            token=token,
            header="X-Service-Trial",
            expires_at=trial.expires_at,
            validations_per_month=allowance,
            validations_remaining=auth_service.trial_validations_remaining(
                trial, allowance, call.now
            ),
        ),
    )
