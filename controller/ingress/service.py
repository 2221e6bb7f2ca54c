"""Runtime ingress validation: `POST /api/validate`, the hosted profile registry, metering and
the quarantine event. See docs/validate.md.

The request path: who may validate (a key on a paid plan, or a trial session), the burst
limit (in the shell), the profile (inline, or from the registry) compiled once per process
and content, one metering statement (the only write), the validation, and in quarantine
mode one outbox row for the signed `ingress.quarantine` event (delivered by the controller).
The payload is never stored, logged or sent: errors carry paths, codes and fixed messages.
"""

from __future__ import annotations

import ipaddress
import json
import threading
import time
from collections import OrderedDict
from datetime import datetime
from typing import Annotated, Any, Literal, cast
from urllib.parse import urlsplit

from pydantic import ConfigDict, Field, RootModel, StringConstraints, model_validator
from sqlalchemy import Table, bindparam, select
from sqlalchemy.orm import Session

from controller.crypto import SecretBox
from controller.errors import Conflict, NotFound, PayloadTooLarge, RequestError, Unprocessable
from controller.events.outbox import emit
from controller.ingress import metering
from controller.ingress.validator import CompiledProfile, Result, compile_profile, validate
from controller.model.base import ApiModel, RequestModel
from controller.model.gitops import HTTPS_URL_PATTERN
from controller.model.ingress_profiles import (
    MAX_PROFILE_BYTES,
    PROFILE_ID_PATTERN,
    ConsumerProfile,
    ProfileDocument,
    ProfileInvalid,
    check_profile,
    content_hash,
    profile_of,
)
from controller.model.plans import allows
from controller.model.principal import Principal
from controller.orgs import service as orgs
from controller.settings import Settings
from controller.sources.addresses import is_public_address
from controller.store import audit
from controller.store.models import IngressProfile, TrialSession

MAX_BODY_BYTES = 256 * 1024
CACHE_SIZE = 1024
ProfileId = Annotated[str, StringConstraints(pattern=PROFILE_ID_PATTERN)]


class QuotaExceeded(RequestError):
    code = "quota_exceeded"
    status = 402


class ValidationDisabled(RequestError):
    code = "validation_disabled"
    status = 503


# -- wire models ---------------------------------------------------------------------------


class ValidateOptions(RequestModel):
    model_config = ConfigDict(
        json_schema_extra={
            "if": {"required": ["mode"], "properties": {"mode": {"const": "quarantine"}}},
            "then": {"required": ["webhookUrl"], "properties": {"webhookUrl": {"type": "string"}}},
        }
    )

    profile_mode: Literal["cli", "hosted"] = Field(
        default="hosted",
        description="which properties are required when the profile does not say: cli = all "
        "declared, hosted = the schema's `required`",
    )
    mode: Literal["block", "warn", "quarantine"] = Field(
        default="block",
        description="block: 422 when invalid; warn: 200 with ok false; quarantine: 422 and a "
        "signed ingress.quarantine event to webhookUrl",
    )
    webhook_url: (
        Annotated[str, StringConstraints(max_length=2048, pattern=HTTPS_URL_PATTERN)] | None
    ) = Field(
        default=None, description="HTTPS; where quarantine events go (required by quarantine)"
    )

    @model_validator(mode="after")
    def _quarantine_needs_a_webhook(self) -> ValidateOptions:
        if self.mode == "quarantine" and self.webhook_url is None:
            raise ValueError("quarantine mode needs webhookUrl (HTTPS)")
        return self


class ValidateIn(RequestModel):
    """Body of `POST /api/validate`: the payload and a profile (inline, or `profileId`)."""

    # One of them, not null (null reads as not given).
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": ["profile"], "properties": {"profile": {"type": "object"}}},
                {"required": ["profileId"], "properties": {"profileId": {"type": "string"}}},
            ]
        }
    )

    payload: Any = Field(description="the JSON value to check; never stored")
    profile: ProfileDocument | None = Field(
        default=None, description="an inline consumer profile (at most 64 KB)"
    )
    profile_id: ProfileId | None = Field(default=None, description="a profile of the registry")
    options: ValidateOptions = Field(default_factory=ValidateOptions)

    @model_validator(mode="after")
    def _a_profile(self) -> ValidateIn:
        if self.profile is None and self.profile_id is None:
            raise ValueError("give a profile or a profileId (not null)")
        return self


class ProfileIn(RootModel[ProfileDocument]):
    """A consumer profile: {id, version, schema, profileKind?, envelope?, requiredPolicy?,
    normalization?, compatibility?, watchUrl?, watchId?}."""


class IssueOut(ApiModel):
    path: str = Field(description="JSON Pointer into the checked object; `$` for the root")
    code: str
    message: str


class ValidateOut(ApiModel):
    ok: bool
    severity: Literal["breaking", "warning", "info", "none"]
    errors: list[IssueOut]
    truncated: bool = Field(default=False, description="more than 50 errors: the first 50")
    normalized: Any = Field(
        default=None,
        description="the checked object (extracted from its envelope, aliases applied) when "
        "there are no errors, else null",
    )
    correlation_id: str
    validations_remaining: int | None = Field(description="null: no monthly limit")
    latency_ms: float


class ProfileOut(ApiModel):
    id: str
    version: int
    profile: dict[str, Any] = Field(description="the profile as stored")
    managed_by: str | None = Field(description="the git source that owns it, if any")
    created_at: datetime
    updated_at: datetime


class ProfileList(ApiModel):
    profiles: list[ProfileOut]


# -- compiled profiles, per process --------------------------------------------------------


class _Cache:
    """Compiled profiles by (org, id, version, content hash, mode); least recently used out."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, ...], CompiledProfile] = OrderedDict()
        self._lock = threading.Lock()

    def peek(self, key: tuple[str, ...]) -> CompiledProfile | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def get(self, key: tuple[str, ...], build: Any) -> CompiledProfile:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                return found
        compiled: CompiledProfile = build()
        with self._lock:
            self._items[key] = compiled
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return compiled


COMPILED = _Cache()


def compiled_profile(
    org_id: str, profile: ConsumerProfile, digest: str, mode: str
) -> CompiledProfile:
    key = (org_id, profile.id, str(profile.version), digest, mode)
    return COMPILED.get(key, lambda: _compile(profile, mode))


def _compile(profile: ConsumerProfile, mode: str) -> CompiledProfile:
    try:
        return compile_profile(profile, mode)
    except ValueError as exc:  # jsonschema_rs: not a valid JSON Schema
        raise ProfileInvalid(f"the profile's schema is not a valid JSON Schema: {exc}") from None


# -- the validation ------------------------------------------------------------------------


def validate_call(
    session: Session,
    settings: Settings,
    box: SecretBox,
    principal: Principal,
    trial: TrialSession | None,
    data: ValidateIn,
    *,
    correlation_id: str,
    source: str | None,
    started: float,
    now: datetime,
) -> tuple[int, ValidateOut]:
    """Validate one payload; (HTTP status, answer)."""
    if not settings.validate_enabled:
        raise ValidationDisabled("the validation API is disabled on this server")
    if trial is None and not allows(principal.plan, "validate_api"):
        raise orgs.plan_required(
            principal.org_name,
            principal.plan,
            "validate_api",
            "API validation (without a trial session)",
        )
    options = data.options
    _check_webhook(settings, options.webhook_url)
    _, profile_id, compiled = _profile(
        session, principal.org_id, data, options.profile_mode, settings.profile_cache_seconds
    )
    remaining = _meter(session, settings, principal, trial, source, now)
    result = validate(compiled, data.payload)
    answer = _answer(result, correlation_id, remaining, started)
    if not result.ok and options.mode == "quarantine" and options.webhook_url:
        _quarantine(
            session,
            box,
            principal.org_id,
            profile_id,
            result,
            correlation_id,
            source,
            now,
            options.webhook_url,
        )
    status = 200 if result.ok or options.mode == "warn" else 422
    return status, answer


def _profile(
    session: Session, org_id: str, data: ValidateIn, mode: str, ttl: float = 0.0
) -> tuple[ConsumerProfile | None, str, CompiledProfile]:
    """The request's profile compiled: an inline one (checked, then compiled once per content),
    or the registry's (one indexed read of its version and hash; its content is read and
    checked only when this process has not compiled that version yet)."""
    if data.profile is not None:
        raw = data.profile
        if len(_compact(raw)) > MAX_PROFILE_BYTES:
            raise PayloadTooLarge(
                f"the inline profile is larger than {MAX_PROFILE_BYTES // 1024} KB"
            )
        profile = profile_of(raw)  # its shape was checked with the body
        digest = content_hash(raw)
        return profile, profile.id, compiled_profile(org_id, profile, digest, mode)
    assert data.profile_id is not None  # ValidateIn holds one or the other
    version, digest = _registered(session, org_id, data.profile_id, ttl)
    key = (org_id, data.profile_id, str(version), digest, mode)
    compiled = COMPILED.peek(key)
    if compiled is None:
        row = _row(session, org_id, data.profile_id)
        assert row is not None
        profile = profile_of(row.content)
        compiled = COMPILED.get(key, lambda: _compile(profile, mode))
    return compiled.profile, data.profile_id, compiled


# (org, profile id) -> (when the lookup expires, version, content hash), per process.
_LOOKUPS: dict[tuple[str, str], tuple[float, int, str]] = {}
_LOOKUPS_LOCK = threading.Lock()


def _registered(session: Session, org_id: str, profile_id: str, ttl: float) -> tuple[int, str]:
    """A registry profile's version and content hash: from this process's lookups for `ttl`
    seconds, else one indexed read (404 when the org has no such profile)."""
    now = time.monotonic()
    with _LOOKUPS_LOCK:
        cached = _LOOKUPS.get((org_id, profile_id))
    if cached is not None and cached[0] > now:
        return cached[1], cached[2]
    found = (
        session.connection()
        .execute(_REGISTERED, {"org_id": org_id, "profile_id": profile_id})
        .first()
    )
    if found is None:
        raise NotFound(f"no profile {profile_id!r} in this org's registry")
    if ttl > 0:
        with _LOOKUPS_LOCK:
            if len(_LOOKUPS) > CACHE_SIZE:
                _LOOKUPS.clear()
            _LOOKUPS[(org_id, profile_id)] = (now + ttl, found.version, found.content_hash)
    return int(found.version), str(found.content_hash)


def _forget(org_id: str, profile_id: str) -> None:
    with _LOOKUPS_LOCK:
        _LOOKUPS.pop((org_id, profile_id), None)


# The registry read of the hot path, built once, run on the connection (no ORM).
_PROFILES = cast(Table, IngressProfile.__table__)
_REGISTERED = select(_PROFILES.c.version, _PROFILES.c.content_hash).where(
    _PROFILES.c.org_id == bindparam("org_id"),
    _PROFILES.c.profile_id == bindparam("profile_id"),
)


def _compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _meter(
    session: Session,
    settings: Settings,
    principal: Principal,
    trial: TrialSession | None,
    source: str | None,
    now: datetime,
) -> int | None:
    """Count the validation; the validations left this month (None: no limit), or 402."""
    if source:
        metering.count_source(principal.org_id, source, now)
    if trial is not None:
        allowance = settings.trial_validations_per_month
        used = metering.take_trial(session, trial.id, allowance, now)
        if used is None:
            raise QuotaExceeded(
                f"this trial session used its {allowance} validations for {metering.period_of(now)}"
            )
        remaining: int | None = allowance - used
    else:
        quota = quota_of(settings, principal.plan)
        remaining = metering.take_org(session, principal.org_id, quota, now)
        if remaining == -1:
            raise QuotaExceeded(
                f"org {principal.org_name!r} used its {quota} validations for "
                f"{metering.period_of(now)} (plan {principal.plan})"
            )
    return remaining


def quota_of(settings: Settings, plan: str) -> int:
    """A plan's monthly validations (0: unlimited)."""
    return {
        "pro": settings.validate_quota_pro,
        "team": settings.validate_quota_team,
        "enterprise": settings.validate_quota_enterprise,
    }.get(plan, 0)


def _answer(
    result: Result, correlation_id: str, remaining: int | None, started: float
) -> ValidateOut:
    return ValidateOut(
        ok=result.ok,
        severity=result.severity,
        errors=[IssueOut(path=i.path, code=i.code, message=i.message) for i in result.errors],
        truncated=result.truncated,
        normalized=result.normalized,
        correlation_id=correlation_id,
        validations_remaining=remaining,
        latency_ms=round((time.perf_counter() - started) * 1000, 3),
    )


def _check_webhook(settings: Settings, url: str | None) -> None:
    # ValidateOptions holds an https:// URL, and one in quarantine mode (400 otherwise).
    if url is None:
        return
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return  # a name: the delivery's address guard checks what it resolves to
    allowed = f"{host}:{parts.port or 443}" in settings.private_target_allowlist
    if not settings.allow_private_targets and not allowed and not is_public_address(str(address)):
        raise Unprocessable(
            "options.webhookUrl points to a private or special-purpose address",
            details=[{"path": "/options/webhookUrl", "message": "a private address"}],
        )


def _quarantine(
    session: Session,
    box: SecretBox,
    org_id: str,
    profile_id: str,
    result: Result,
    correlation_id: str,
    source: str | None,
    now: datetime,
    url: str,
) -> None:
    """One outbox row: the signed `ingress.quarantine` event for `url` (never the payload)."""
    data: dict[str, Any] = {
        "event": "ingress.quarantine",
        "correlationId": correlation_id,
        "profileId": profile_id,
        "severity": result.severity,
        "errors": [{"path": i.path, "code": i.code, "message": i.message} for i in result.errors],
        "ts": now.isoformat().replace("+00:00", "Z"),
    }
    if source:
        data["source"] = source
    emit(
        session,
        box,
        org_id=org_id,
        event_type="ingress.quarantine",
        data=data,
        now=now,
        extra_destinations=[url],
        org_defaults=False,
    )


# -- the hosted registry -------------------------------------------------------------------


def profile_out(row: IngressProfile) -> ProfileOut:
    return ProfileOut(
        id=row.profile_id,
        version=row.version,
        profile=row.content,
        managed_by=row.managed_source,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def put_profile(
    session: Session, principal: Principal, profile_id: str, raw: dict[str, Any], now: datetime
) -> tuple[IngressProfile, bool]:
    """Store a profile under `profile_id` (its `id` must match); (row, created). A new
    version must be higher; the same version with other content is 409."""
    if len(_compact(raw)) > MAX_PROFILE_BYTES:
        raise PayloadTooLarge(f"the profile is larger than {MAX_PROFILE_BYTES // 1024} KB")
    profile = profile_of(raw)  # its shape was checked with the body
    if profile.id != profile_id:
        # No schema of the body can say that its id is the path's: 422, naming the field.
        raise ProfileInvalid(
            f"the profile's id {profile.id!r} is not the path's {profile_id!r}",
            details=[{"path": "/id", "message": "must be the id in the path"}],
        )
    _compile(profile, "hosted")  # refuse a schema that does not compile, before storing it
    digest = content_hash(raw)
    row = _row(session, principal.org_id, profile_id)
    if row is not None:
        if row.managed_source is not None:
            raise Conflict(
                f"profile {profile_id!r} comes from the git source {row.managed_source!r}; "
                "change it there",
                code="managed_by_source",
            )
        if row.content_hash == digest:
            return row, False
        if profile.version <= row.version:
            raise Conflict(
                f"profile {profile_id!r} is at version {row.version}; a change needs a higher "
                "version",
                code="version_conflict",
            )
    created = row is None
    if row is None:
        row = IngressProfile(org_id=principal.org_id, profile_id=profile_id, created_at=now)
        session.add(row)
    row.version, row.content, row.content_hash = profile.version, raw, digest
    row.watch_id, row.updated_at = profile.watch_id, now
    session.flush()
    _forget(principal.org_id, profile_id)
    audit.by(
        session,
        principal,
        "ingress_profile.put",
        row.id,
        {"profileId": profile_id, "version": profile.version},
    )
    return row, created


def get_profile(session: Session, org_id: str, profile_id: str) -> IngressProfile:
    row = _row(session, org_id, profile_id)
    if row is None:
        raise NotFound(f"no profile {profile_id!r} in this org's registry")
    return row


def delete_profile(session: Session, principal: Principal, profile_id: str) -> None:
    row = get_profile(session, principal.org_id, profile_id)
    if row.managed_source is not None:
        raise Conflict(
            f"profile {profile_id!r} comes from the git source {row.managed_source!r}",
            code="managed_by_source",
        )
    session.delete(row)
    _forget(principal.org_id, profile_id)
    audit.by(session, principal, "ingress_profile.delete", row.id, {"profileId": profile_id})


def list_profiles(session: Session, org_id: str) -> ProfileList:
    rows = session.scalars(
        select(IngressProfile)
        .where(IngressProfile.org_id == org_id)
        .order_by(IngressProfile.profile_id)
    )
    return ProfileList(profiles=[profile_out(r) for r in rows])


def _row(session: Session, org_id: str, profile_id: str) -> IngressProfile | None:
    return session.scalar(
        select(IngressProfile).where(
            IngressProfile.org_id == org_id, IngressProfile.profile_id == profile_id
        )
    )


def validate_offline(raw_profile: Any, payload: Any, profile_mode: str = "cli") -> ValidateOut:
    """`driftgate check-payload`: the same checks as the API, without a server, a key, a
    quota or a webhook (`ProfileInvalid` for a profile that cannot be used)."""
    started = time.perf_counter()
    profile = check_profile(raw_profile)
    result = validate(_compile(profile, profile_mode), payload, quote_values=True)
    return _answer(result, "offline", None, started)
