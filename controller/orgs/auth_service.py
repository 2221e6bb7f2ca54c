"""Credentials: org API keys and trial sessions, and the principal they resolve to.

API keys (`dg_...`) and trial tokens (`dgt_...`) are shown once and stored as SHA-256
hashes with a 4-character hint. A trial session owns a private sandbox org, so a trial can
never see anything of a real org.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from pydantic import Field
from sqlalchemy import bindparam, event, select, update
from sqlalchemy.orm import Session

from controller.crypto import hash_token, new_token
from controller.errors import NotFound, Unauthorized
from controller.model.base import ApiModel
from controller.model.plans import TRIAL_PLAN
from controller.model.principal import Principal
from controller.store import audit, ids
from controller.store.models import ApiKey, Org, TrialSession, new_id

API_KEY_PREFIX = "dg_"
TRIAL_PREFIX = "dgt_"
# Touching last_used_at on every request would turn each read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True)
class IssuedKey:
    key: ApiKey
    secret: str


def create_api_key(session: Session, org: Org, name: str = "", *, actor: str) -> IssuedKey:
    secret = new_token(API_KEY_PREFIX)
    key = ApiKey(org_id=org.id, name=name[:100], key_hash=hash_token(secret), hint=secret[-4:])
    session.add(key)
    session.flush()
    audit.record(
        session,
        actor=actor,
        action="api_key.create",
        target_type="api_key",
        target_id=key.id,
        org_id=org.id,
        details={"name": key.name, "hint": key.hint},
    )
    return IssuedKey(key, secret)


def list_api_keys(session: Session, org: Org) -> list[ApiKey]:
    return list(
        session.scalars(select(ApiKey).where(ApiKey.org_id == org.id).order_by(ApiKey.created_at))
    )


def find_api_key(session: Session, ref: str, org_id: str | None = None) -> str:
    """The id of the API key `ref` names: its id or a unique prefix of it, among the keys of
    `org_id` when given (else every org's: the operator's `driftgate keys revoke`)."""
    scope = [ApiKey.org_id == org_id] if org_id else []
    exact = session.scalar(select(ApiKey.id).where(ApiKey.id == ref, *scope))
    found = exact or ids.by_prefix(session, ApiKey.id, ApiKey.name, ref, kind="keys", where=scope)
    if found is None:
        raise NotFound(f"no API key with id {ref!r}" + (" in this org" if org_id else ""))
    return found


def revoke_api_key(session: Session, key_id: str, now: datetime, *, actor: str) -> ApiKey:
    key = session.scalar(select(ApiKey).where(ApiKey.id == key_id))
    if key is None:
        raise NotFound(f"no API key with id {key_id!r}")
    if key.revoked_at is None:
        key.revoked_at = now
        forget_cached_keys(session)
        audit.record(
            session,
            actor=actor,
            action="api_key.revoke",
            target_type="api_key",
            target_id=key.id,
            org_id=key.org_id,
            details={"hint": key.hint},
        )
    return key


# Every authenticated request runs this: one indexed row, as plain columns (no ORM objects).
_KEY_LOOKUP = (
    select(
        ApiKey.id,
        ApiKey.revoked_at,
        ApiKey.last_used_at,
        Org.id,
        Org.name,
        Org.plan,
        Org.products,
    )
    .join(Org, Org.id == ApiKey.org_id)
    .where(ApiKey.key_hash == bindparam("key_hash"))
)


class KeyCache:
    """The principals of recently used API keys in this process, each for `ttl` seconds.

    Every authenticated request needs its key's org, plan and products; reading them once per
    key every `ttl` seconds instead of once per request takes a query (and, on SQLite, a read
    transaction) off every call. Keys are held by their hash, never in clear. Revoking a key or
    changing an org in this process forgets at once (`clear`); another process (the CLI, another
    worker) is seen within `ttl`. At most `size` keys are held, the least recently used go first.
    """

    def __init__(self, size: int = 1024) -> None:
        self.ttl = 0.0
        self.size = size
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[float, Principal]] = OrderedDict()

    def get(self, key_hash: str) -> Principal | None:
        if self.ttl <= 0:
            return None
        with self._lock:
            entry = self._entries.get(key_hash)
            if entry is None:
                return None
            if entry[0] <= time.monotonic():
                del self._entries[key_hash]
                return None
            self._entries.move_to_end(key_hash)
            return entry[1]

    def put(self, key_hash: str, principal: Principal) -> None:
        if self.ttl <= 0:
            return
        with self._lock:
            self._entries[key_hash] = (time.monotonic() + self.ttl, principal)
            self._entries.move_to_end(key_hash)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


KEY_CACHE = KeyCache()


def forget_cached_keys(session: Session) -> None:
    """Forget every cached key now and when `session` commits (a change of a key or an org:
    a request between the two could cache the state before the commit)."""
    KEY_CACHE.clear()
    event.listen(session, "after_commit", lambda _session: KEY_CACHE.clear(), once=True)


def authenticate_api_key(session: Session, secret: str, now: datetime) -> Principal:
    key_hash = hash_token(secret)
    cached = KEY_CACHE.get(key_hash)
    if cached is not None:
        return cached
    row = session.connection().execute(_KEY_LOOKUP, {"key_hash": key_hash}).first()
    if row is None or row[1] is not None:
        raise Unauthorized("the API key is invalid or revoked", code="invalid_api_key")
    key_id, _revoked, last_used, org_id, org_name, plan, products = row
    stale = last_used is None or now - last_used >= LAST_USED_RESOLUTION
    principal = Principal(org_id, org_name, plan, frozenset(products or ()), "api_key", key_id)
    KEY_CACHE.put(key_hash, principal)
    return replace(principal, touch=stale) if stale else principal


def touch_api_key(session: Session, key_id: str, now: datetime) -> None:
    """Record that a key was used (callers do it at most once a minute per key)."""
    session.execute(update(ApiKey).where(ApiKey.id == key_id).values(last_used_at=now))


def create_trial(session: Session, now: datetime, days: int) -> tuple[TrialSession, str]:
    org = Org(name=f"trial-{new_id()[:8]}", plan=TRIAL_PLAN, products=[], is_trial=True)
    session.add(org)
    session.flush()
    secret = new_token(TRIAL_PREFIX)
    trial = TrialSession(
        org_id=org.id,
        token_hash=hash_token(secret),
        hint=secret[-4:],
        expires_at=now + timedelta(days=days),
        validations_period=now.strftime("%Y-%m"),
        validations_used=0,
    )
    session.add(trial)
    session.flush()
    return trial, secret


def authenticate_trial(
    session: Session, secret: str, now: datetime
) -> tuple[Principal, TrialSession]:
    trial = session.scalar(
        select(TrialSession).where(TrialSession.token_hash == hash_token(secret))
    )
    if trial is None or trial.expires_at <= now:
        raise Unauthorized("the trial session is invalid or expired", code="invalid_trial")
    org = trial.org
    principal = Principal(org.id, org.name, org.plan, frozenset(org.products), "trial", trial.id)
    return principal, trial


def trial_validations_remaining(trial: TrialSession, allowance: int, now: datetime) -> int:
    """Validations left this calendar month (the counter restarts with each month)."""
    used = trial.validations_used if trial.validations_period == now.strftime("%Y-%m") else 0
    return max(0, allowance - used)


class TrialOut(ApiModel):
    token: str
    header: str
    expires_at: datetime
    validations_per_month: int
    validations_remaining: int


def start_trial(session: Session, now: datetime, days: int, allowance: int) -> TrialOut:
    """A new trial session (its token shown once) with `allowance` validations a month."""
    trial, token = create_trial(session, now, days)
    return TrialOut(
        token=token,
        header="X-Service-Trial",
        expires_at=trial.expires_at,
        validations_per_month=allowance,
        validations_remaining=trial_validations_remaining(trial, allowance, now),
    )


class CredentialOut(ApiModel):
    kind: str = Field(description="`api_key` or `trial`")
    id: str = Field(description="the key's or trial session's id (never its secret)")


class MeOut(ApiModel):
    """Who a credential is: its org, plan and products."""

    org_id: str
    org: str = Field(description="the org's name")
    plan: str
    products: list[str]
    credential: CredentialOut
    customer_id: str = Field(
        description="the hosted product's name of `orgId` (its CLI's `login` prints it)"
    )


def whoami(principal: Principal) -> MeOut:
    """The caller as `GET /api/me` shows it."""
    return MeOut(
        org_id=principal.org_id,
        org=principal.org_name,
        plan=principal.plan,
        products=sorted(principal.products),
        credential=CredentialOut(kind=principal.kind, id=principal.credential_id),
        customer_id=principal.org_id,
    )
