"""Console accounts: users of an org, one-time set-password links, sign-in, sessions.

- A user belongs to one org, with role `admin` (may change things) or `viewer` (reads).
  E-mail addresses are unique across the instance, so a sign-in needs only address and
  password. `driftgate users create` makes a user without a password and prints a link that
  sets it once (valid `SETUP_TTL`).
- Sign-in verifies the argon2id hash. Failures are counted in `WINDOW` three ways, and none
  of them lets one client lock others out of an account that is not itself under attack:
  `PAIR_FAILURES` for one account from one client locks that account from that client (a
  guesser stops; its owner elsewhere signs in); `ACCOUNT_FAILURES` for one account from any
  clients locks the account (guessing spread over many addresses); `ADDRESS_FAILURES` from
  one client over any accounts (made-up ones included) turns that client's wrong passwords
  into 429s but never refuses a right one (behind a NAT or a misconfigured proxy, one
  address is many people). `GLOBAL_FAILURES` over the whole instance (a guesser spread over
  many clients and accounts) does the same for every client: wrong passwords answer 429, a
  right one still signs in. A locked account or pair answers 429 without checking the
  password. Attempts are rows, so every replica counts them; a client is its
  `controller.model.clients.client_key` (an IPv6 client by its /64).
- A session is a random token in a cookie; the store keeps its SHA-256 only, with the user,
  a CSRF token, the time it ends (`SESSION_TTL` after sign-in, or `IDLE_TTL` after its last
  use) and the address. Every sign-in makes a new session (the token a browser held before
  is never promoted: no session fixation). Sign-out ends one session; sign-out everywhere
  ends all of the user's, as does setting a new password.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from controller.accounts import oidc, passwords
from controller.crypto import hash_token
from controller.errors import (
    Conflict,
    Forbidden,
    NotFound,
    TooManyRequests,
    Unauthorized,
    Unprocessable,
)
from controller.model.clients import client_key
from controller.model.principal import Principal
from controller.settings import Settings
from controller.store import audit
from controller.store.models import ConsoleSession, Org, SignInAttempt, User

ROLES = ("admin", "viewer")
SETUP_TTL = timedelta(hours=72)
SESSION_TTL = timedelta(hours=12)
IDLE_TTL = timedelta(hours=2)
WINDOW = timedelta(minutes=15)
PAIR_FAILURES = 5
ACCOUNT_FAILURES = 10
ADDRESS_FAILURES = 20
GLOBAL_FAILURES = 500
SESSION_TOUCH = timedelta(minutes=1)
SETUP_PATH = "/console/set-password"


@dataclass(frozen=True)
class SignedIn:
    """A live console session: who, in which org, and the CSRF token of its forms."""

    session_id: str
    user_id: str
    email: str
    role: str
    org_id: str
    org_name: str
    plan: str
    products: frozenset[str]
    csrf_token: str

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    @property
    def actor(self) -> str:
        return f"user:{self.email}"

    def principal(self) -> Principal:
        """The session as an API caller (the routes that take a console session)."""
        return Principal(
            self.org_id, self.org_name, self.plan, self.products, "console", self.email
        )


def _audit(
    session: Session, actor: str, action: str, user: User, details: dict[str, object] | None = None
) -> None:
    """An audit entry about a user account, in its org."""
    audit.record(
        session,
        actor=actor,
        action=action,
        target_type="user",
        target_id=user.id,
        org_id=user.org_id,
        details=details,
    )


def normalized(email: str) -> str:
    return email.strip().lower()


def create_user(
    session: Session, org: Org, email: str, role: str, *, actor: str, now: datetime
) -> tuple[User, str]:
    """A user without a password, and the one-time token that sets it."""
    if role not in ROLES:
        raise Unprocessable(f"role must be one of {', '.join(ROLES)}", code="invalid_role")
    address = normalized(email)
    if "@" not in address or len(address) > 254 or any(c.isspace() for c in address):
        raise Unprocessable(f"{email!r} is not an e-mail address", code="invalid_email")
    if session.scalar(select(User.id).where(User.email == address)) is not None:
        raise Conflict(f"a user with e-mail {address} exists", code="user_exists")
    user = User(org_id=org.id, email=address, role=role, created_at=now)
    session.add(user)
    session.flush()
    token = _new_setup(user, now)
    _audit(session, actor, "user.create", user, {"email": address, "role": role})
    return user, token


def reset_link(session: Session, user: User, *, actor: str, now: datetime) -> str:
    """A new one-time set-password token for `user` (the old one stops working)."""
    token = _new_setup(user, now)
    _audit(session, actor, "user.reset", user)
    return token


def _new_setup(user: User, now: datetime) -> str:
    token = secrets.token_urlsafe(32)
    user.setup_token_hash = hash_token(token)
    user.setup_expires_at = now + SETUP_TTL
    return token


def setup_link(base_url: str, token: str) -> str:
    return f"{base_url.rstrip('/')}{SETUP_PATH}?token={token}"


def user_for_setup(session: Session, token: str, now: datetime) -> User:
    user = session.scalar(select(User).where(User.setup_token_hash == hash_token(token)))
    if user is None or user.setup_expires_at is None or user.setup_expires_at < now:
        raise NotFound(
            "this link is not valid or has expired; ask an admin for a new one "
            "(`driftgate users reset`)",
            code="invalid_setup_link",
        )
    return user


def set_password(session: Session, token: str, password: str, now: datetime) -> User:
    """Set the password of the link's user; the link is spent and every session ends."""
    user = user_for_setup(session, token, now)
    problem = passwords.password_problem(password)
    if problem is not None:
        raise Unprocessable(problem, code="weak_password")
    user.password_hash = passwords.hash_password(password)
    user.setup_token_hash = None
    user.setup_expires_at = None
    session.execute(delete(ConsoleSession).where(ConsoleSession.user_id == user.id))
    _audit(session, f"user:{user.email}", "user.password", user)
    return user


def _failures(session: Session, now: datetime, *conditions: ColumnElement[bool]) -> int:
    return int(
        session.scalar(
            select(func.count())
            .select_from(SignInAttempt)
            .where(
                *conditions,
                SignInAttempt.success.is_(False),
                SignInAttempt.at >= now - WINDOW,
            )
        )
        or 0
    )


def sign_in(
    session: Session, email: str, password: str, address: str, now: datetime
) -> tuple[str, SignedIn]:
    """A new session for the address and password, or 401 (which of the two was wrong is not
    said), or 429 while the account has too many recent failures (from this client, or from
    all), or for a wrong password from a client (or an instance) with too many recent
    failures."""
    account = normalized(email)[:254]
    client = client_key(address)
    by_account = SignInAttempt.email == account
    if (
        _failures(session, now, by_account) >= ACCOUNT_FAILURES
        or _failures(session, now, by_account, SignInAttempt.address == client) >= PAIR_FAILURES
    ):
        raise TooManyRequests(
            "too many failed sign-ins; try again in a few minutes",
            details={"retryAfter": int(WINDOW.total_seconds())},
        )
    user = session.scalar(select(User).where(User.email == account))
    ok = passwords.verify(user.password_hash if user else None, password)
    # Counted before this attempt's row, as the two above.
    slowed = None if ok and user is not None else _slowed(session, client, now)
    session.add(SignInAttempt(email=account, address=client, at=now, success=ok))
    if slowed is not None:
        raise slowed
    if not ok or user is None:
        raise Unauthorized("the e-mail address or the password is wrong", code="sign_in_failed")
    if user.password_hash and passwords.needs_rehash(user.password_hash):
        user.password_hash = passwords.hash_password(password)
    return _new_session(session, user, address, now)


def _slowed(session: Session, client: str, now: datetime) -> TooManyRequests | None:
    """The 429 a wrong password gets instead of a 401 past a ceiling: of its client, or of
    the whole instance."""
    if _failures(session, now, SignInAttempt.address == client) >= ADDRESS_FAILURES:
        return TooManyRequests(
            "too many failed sign-ins from this address; try again in a few minutes",
            details={"retryAfter": int(WINDOW.total_seconds())},
        )
    if _failures(session, now) >= GLOBAL_FAILURES:
        return TooManyRequests(
            "too many failed sign-ins on this server; try again in a minute",
            details={"retryAfter": 60},
        )
    return None


def sign_in_verified(
    session: Session, email: str, address: str, now: datetime, *, via: str
) -> tuple[str, SignedIn]:
    """A new session for an address a provider verified (single sign-on); 403 when no
    account has that address (accounts are made by admins, never by signing in)."""
    user = session.scalar(select(User).where(User.email == normalized(email)))
    if user is None:
        raise Forbidden(
            f"no console account has the address {normalized(email)}; ask an admin to create "
            "one (`driftgate users create`)",
            code="no_account",
        )
    _audit(session, f"user:{user.email}", "user.sign_in_sso", user, {"via": via})
    return _new_session(session, user, address, now)


def _new_session(session: Session, user: User, address: str, now: datetime) -> tuple[str, SignedIn]:
    user.last_sign_in_at = now
    token = secrets.token_urlsafe(32)
    row = ConsoleSession(
        id=hash_token(token),
        user_id=user.id,
        org_id=user.org_id,
        csrf_token=secrets.token_urlsafe(32),
        created_at=now,
        last_seen_at=now,
        expires_at=now + SESSION_TTL,
        address=address[:64],
    )
    session.add(row)
    session.flush()
    signed = _signed_in(session, row, user)
    assert signed is not None
    return token, signed


def authenticate(session: Session, token: str, now: datetime) -> SignedIn | None:
    """The live session of a cookie's token, or None (unknown, expired or idle too long)."""
    if not token:
        return None
    row = session.get(ConsoleSession, hash_token(token))
    if row is None:
        return None
    if row.expires_at <= now or row.last_seen_at + IDLE_TTL <= now:
        session.delete(row)
        return None
    if now - row.last_seen_at >= SESSION_TOUCH:
        row.last_seen_at = now
    user = session.get(User, row.user_id)
    return _signed_in(session, row, user) if user is not None else None


def _signed_in(session: Session, row: ConsoleSession, user: User) -> SignedIn | None:
    org = session.get(Org, user.org_id)
    if org is None:
        return None
    return SignedIn(
        session_id=row.id,
        user_id=user.id,
        email=user.email,
        role=user.role,
        org_id=org.id,
        org_name=org.name,
        plan=org.plan,
        products=frozenset(org.products or ()),
        csrf_token=row.csrf_token,
    )


def sign_out(session: Session, signed: SignedIn) -> None:
    session.execute(delete(ConsoleSession).where(ConsoleSession.id == signed.session_id))


def sign_out_everywhere(session: Session, signed: SignedIn) -> int:
    ended = session.execute(delete(ConsoleSession).where(ConsoleSession.user_id == signed.user_id))
    user = session.get(User, signed.user_id)
    if user is not None:
        _audit(session, signed.actor, "user.sign_out_everywhere", user)
    return int(getattr(ended, "rowcount", 0) or 0)


def members(session: Session, org_id: str) -> list[User]:
    return list(session.scalars(select(User).where(User.org_id == org_id).order_by(User.email)))


def member(session: Session, org_id: str, user_id: str) -> User:
    """A user of `org_id`; another org's user (or none) is 404."""
    user = session.scalar(select(User).where(User.id == user_id, User.org_id == org_id))
    if user is None:
        raise NotFound("no such member in this org", code="member_not_found")
    return user


def change_role(session: Session, user: User, role: str, *, actor: str) -> None:
    """Give `user` another role; the org's last admin stays an admin (409)."""
    if role not in ROLES:
        raise Unprocessable(f"role must be one of {', '.join(ROLES)}", code="invalid_role")
    user = _with_admins_locked(session, user)
    if role == user.role:
        return
    if user.role == "admin":
        _refuse_last_admin(session, user, "demoted to viewer")
    previous, user.role = user.role, role
    _audit(session, actor, "user.role", user, {"from": previous, "to": role})


def remove_user(session: Session, user: User, *, actor: str) -> None:
    """Remove `user` from the org with their sessions; the org's last admin stays (409)."""
    user = _with_admins_locked(session, user)
    if user.role == "admin":
        _refuse_last_admin(session, user, "removed")
    _audit(session, actor, "user.remove", user, {"email": user.email})
    session.execute(delete(ConsoleSession).where(ConsoleSession.user_id == user.id))
    session.delete(user)


def _with_admins_locked(session: Session, user: User) -> User:
    """`user` as it is once this transaction holds the org's admin set: every change that
    could leave an org without an admin goes through here before it counts the admins.

    Two admins demoting or removing each other at once would each count the other and both
    succeed. On Postgres the org's row is locked (`FOR NO KEY UPDATE`: rows that merely
    reference the org, such as audit entries, are not held up), so the second waits for the
    first to commit; its statements after the lock then read what the first committed (READ
    COMMITTED takes a snapshot per statement), the user included. On SQLite the writing
    transaction holds the write lock from its start (`BEGIN IMMEDIATE`), which serializes
    the same way; a deferred one would fail at its first write instead of counting stale rows.
    """
    session.execute(select(Org.id).where(Org.id == user.org_id).with_for_update(key_share=True))
    current = session.scalar(
        select(User).where(User.id == user.id).execution_options(populate_existing=True)
    )
    if current is None or current.org_id != user.org_id:
        raise NotFound("no such member in this org", code="member_not_found")
    return current


def _refuse_last_admin(session: Session, user: User, what: str) -> None:
    admins = session.scalar(
        select(func.count())
        .select_from(User)
        .where(User.org_id == user.org_id, User.role == "admin", User.id != user.id)
    )
    if not admins:
        raise Conflict(
            f"{user.email} is the org's last admin and cannot be {what}: "
            "make another member an admin first",
            code="last_admin",
        )


def find_user(session: Session, email: str) -> User:
    user = session.scalar(select(User).where(User.email == normalized(email)))
    if user is None:
        raise NotFound(f"no user with e-mail {normalized(email)}")
    return user


def prune(session: Session, now: datetime) -> int:
    """Ended sessions and sign-in attempts older than a day: what the hourly prune drops."""
    ended = session.execute(
        delete(ConsoleSession).where(
            (ConsoleSession.expires_at <= now) | (ConsoleSession.last_seen_at <= now - IDLE_TTL)
        )
    )
    old = session.execute(delete(SignInAttempt).where(SignInAttempt.at < now - timedelta(days=1)))
    return int(getattr(ended, "rowcount", 0) or 0) + int(getattr(old, "rowcount", 0) or 0)


# Single sign-on (`controller.accounts.oidc`), for the shells.
SsoProvider = oidc.Provider
SSO_FLOW_TTL = oidc.FLOW_TTL
SSO_CALLBACK_PATH = oidc.CALLBACK_PATH


def sso_configured(settings: Settings) -> bool:
    return oidc.configured(settings)
