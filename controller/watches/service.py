"""Watch use cases: create, list, read, update, delete, pause and resume, scoped to one org.

Every function takes the caller's org id; a watch of another org is indistinguishable from
a missing one. Header values are encrypted before they reach the session and never leave
this module in clear text except through `decrypted_headers` for the fetchers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from controller.contracts.base import MCP_SESSION
from controller.contracts.kinds import CONTRACT_KINDS
from controller.crypto import SecretBox
from controller.errors import Conflict, NotFound, Unprocessable
from controller.mcpauth.grants import OAuthSecrets, OAuthSettings
from controller.mcpauth.rows import set_oauth, settings_of, token_expires_at
from controller.model import managed, paging
from controller.model.cardkeys import CARD_WATCH_TYPE
from controller.model.principal import Principal
from controller.model.watch import (
    REDACTED,
    Baseline,
    CardKeys,
    CardKeysOut,
    ChangeCounts,
    DriftStatus,
    FailureClass,
    McpOAuth,
    McpOAuthOut,
    WatchCreate,
    WatchList,
    WatchListQuery,
    WatchOut,
    WatchType,
    WatchUpdate,
    compute_health,
    infer_watch_type,
)
from controller.store import audit
from controller.store.models import Watch, WatchTag
from controller.store.watch_rows import set_contract, set_headers, set_tags
from controller.targets import refuse_unsendable
from controller.watches.status import INITIAL, Paused, Resumed, facts_of, transition

DEFAULT_INTERVAL_MINUTES = 15


def create_watch(
    session: Session,
    principal: Principal,
    data: WatchCreate,
    box: SecretBox,
    *,
    default_interval: int | None = None,
) -> Watch:
    refuse_unsendable(urls=_urls(data), headers=data.headers)
    watch_type = data.watch_type or infer_watch_type(data.url)
    if watch_type is None:
        raise Unprocessable(
            f"cannot infer watchType from the URL; send watchType ({CONTRACT_KINDS.listed()})",
            details=[{"path": "/watchType", "message": "required when the URL does not tell"}],
        )
    _ensure_card_keys_fit(watch_type.value, data.card_keys)
    name = data.effective_name
    _ensure_name_free(session, principal.org_id, name)
    watch = Watch(
        org_id=principal.org_id,
        name=name,
        watch_type=watch_type.value,
        url=data.url,
        interval_minutes=data.interval_minutes or default_interval or DEFAULT_INTERVAL_MINUTES,
        webhook_url=data.webhook_url,
        method=data.method,
        request_body=data.body,
        card_keys=data.card_keys.stored() if data.card_keys is not None else None,
        drift_status=INITIAL.value,
    )
    set_headers(watch, data.headers, box)
    if data.oauth is not None:
        _refuse_misplaced_oauth(watch, data.headers)
        _set_oauth(watch, data.oauth, box)
    set_tags(watch, data.tags)
    session.add(watch)
    _flush_unique(session, name)
    audit.by(
        session,
        principal,
        "watch.create",
        watch.id,
        {"name": name, "watchType": watch.watch_type, "url": watch.url},
    )
    return watch


def get_watch(session: Session, org_id: str, watch_id: str) -> Watch:
    watch = session.scalar(select(Watch).where(Watch.id == watch_id, Watch.org_id == org_id))
    if watch is None:
        raise NotFound("Watch not found")
    return watch


def list_watches(
    session: Session,
    org_id: str,
    query: WatchListQuery,
    where: Sequence[ColumnElement[bool]] = (),
) -> tuple[list[Watch], str | None]:
    """A page of the org's watches, oldest first; `where` narrows further (the console's
    health and incident filters)."""
    stmt = select(Watch).where(Watch.org_id == org_id, *where)
    if query.drift_status is not None:
        stmt = stmt.where(Watch.drift_status == query.drift_status.value)
    if query.watch_type is not None:
        stmt = stmt.where(Watch.watch_type == query.watch_type.value)
    if query.vendor is not None:
        stmt = stmt.where(Watch.vendor == query.vendor.lower())
    for tag in query.tag:
        stmt = stmt.where(
            select(WatchTag.watch_id)
            .where(WatchTag.watch_id == Watch.id, WatchTag.tag == tag)
            .exists()
        )
    return paging.oldest_first(session, stmt, Watch.created_at, Watch.id, query.cursor, query.limit)


def update_watch(
    session: Session, principal: Principal, watch_id: str, data: WatchUpdate, box: SecretBox
) -> Watch:
    watch = get_watch(session, principal.org_id, watch_id)
    ensure_unmanaged(watch)
    fields = data.model_fields_set
    refuse_unsendable(urls=_urls(data), headers=data.headers)
    changed: list[str] = sorted(f for f in fields if f not in ("headers", "oauth"))
    if "name" in fields and data.name is not None and data.name != watch.name:
        _ensure_name_free(session, principal.org_id, data.name)
        watch.name = data.name
    if "url" in fields and data.url is not None:
        set_contract(watch, data.url, watch.watch_type)
    if "interval_minutes" in fields and data.interval_minutes not in (None, watch.interval_minutes):
        watch.interval_minutes = data.interval_minutes
        watch.next_check_at = None  # scheduled again on the new interval, from now
    if "tags" in fields and data.tags is not None:
        set_tags(watch, data.tags)
    if "headers" in fields:
        set_headers(watch, data.headers, box)
        changed.append("headers")
    if "webhook_url" in fields:
        watch.webhook_url = data.webhook_url
    if "method" in fields:
        watch.method = data.method
    if "body" in fields:
        watch.request_body = data.body
    if "card_keys" in fields:
        _ensure_card_keys_fit(watch.watch_type, data.card_keys)
        watch.card_keys = data.card_keys.stored() if data.card_keys is not None else None
    if "oauth" in fields:
        if data.oauth is not None:
            _set_oauth(watch, data.oauth, box)
        else:
            set_oauth(watch, None, None, box)
        changed.append("oauth")  # the field's name only: never its secrets
    if watch.oauth is not None:
        # A later URL or header change must not leave OAuth where it cannot apply.
        headers = data.headers if "headers" in fields else {n: "" for n in watch.header_names}
        _refuse_misplaced_oauth(watch, headers)
    _flush_unique(session, watch.name)
    audit.by(session, principal, "watch.update", watch.id, {"fields": sorted(changed)})
    return watch


def delete_watch(session: Session, principal: Principal, watch_id: str) -> None:
    watch = get_watch(session, principal.org_id, watch_id)
    ensure_unmanaged(watch)
    session.delete(watch)
    audit.by(session, principal, "watch.delete", watch_id, {"name": watch.name})


# A change of a watch's state asked for by a caller (pause, resume).
Move = Callable[[Session, Principal, str], Watch]


def pause_watch(session: Session, principal: Principal, watch_id: str) -> Watch:
    """`disabled`: not checked, and blocking preflight, until resumed."""
    return _move(session, principal, watch_id, Paused(), "watch.pause")


def resume_watch(session: Session, principal: Principal, watch_id: str) -> Watch:
    """The status the last check gave (never_run, ok, drifted or error)."""
    return _move(session, principal, watch_id, Resumed(), "watch.resume")


def _move(
    session: Session, principal: Principal, watch_id: str, event: Paused | Resumed, action: str
) -> Watch:
    """Apply a pause or resume to an API-managed watch of the org, audited when it changed."""
    watch = get_watch(session, principal.org_id, watch_id)
    ensure_unmanaged(watch)
    decided = transition(facts_of(watch), event)
    if decided.changed:
        watch.drift_status = decided.status.value
        audit.by(
            session,
            principal,
            action,
            watch.id,
            {"status": watch.drift_status} if isinstance(event, Resumed) else None,
        )
    return watch


def _set_oauth(watch: Watch, oauth: McpOAuth, box: SecretBox) -> None:
    settings = OAuthSettings(
        grant=oauth.grant,
        client_id=oauth.client_id,
        scope=oauth.scope,
        authorization_server=oauth.authorization_server,
    )
    secrets = OAuthSecrets(client_secret=oauth.client_secret, refresh_token=oauth.refresh_token)
    set_oauth(watch, settings, secrets, box)


def _refuse_misplaced_oauth(watch: Watch, headers: dict[str, str] | None) -> None:
    """OAuth is for remote MCP watches, and it owns the Authorization header (422 else, as
    any well-formed value the watch cannot use)."""
    if CONTRACT_KINDS.of(watch.watch_type).fetch != MCP_SESSION:
        raise Unprocessable(
            f"oauth is for MCP watches; this watch's type is {watch.watch_type}",
            details=[{"path": "/oauth", "message": "only for watchType mcp"}],
        )
    if not watch.url.lower().startswith(("http://", "https://")):
        raise Unprocessable(
            "oauth is for remote (http or https) MCP servers",
            details=[{"path": "/oauth", "message": "only for http(s) URLs"}],
        )
    if any(name.lower() == "authorization" for name in headers or {}):
        raise Unprocessable(
            "oauth sends the Authorization header itself; remove it from headers",
            details=[{"path": "/headers/Authorization", "message": "conflicts with oauth"}],
        )


def oauth_out(watch: Watch) -> McpOAuthOut | None:
    """A watch's OAuth as shown: whether each secret is set, never its value."""
    settings = settings_of(watch)
    if settings is None:
        return None
    stored = set((watch.oauth or {}).get("secrets") or ())
    return McpOAuthOut(
        grant=settings.grant,
        client_id=settings.client_id,
        client_secret=REDACTED if "clientSecret" in stored else None,
        refresh_token=REDACTED if "refreshToken" in stored else None,
        scope=settings.scope,
        authorization_server=settings.authorization_server,
        token_expires_at=token_expires_at(watch),
    )


def ensure_unmanaged(watch: Watch) -> None:
    """Watches declared in git are read-only through the API; git is the source of truth."""
    managed.ensure_unmanaged(watch, "watch", watch.name)


def watch_out(watch: Watch, now: datetime) -> WatchOut:
    """The API view of a watch: header values redacted, health computed for `now`."""
    baseline = None
    if watch.baseline_snapshot_id is not None:
        baseline = Baseline(
            snapshot_id=watch.baseline_snapshot_id,
            fingerprint=watch.baseline_fingerprint,
            accepted_at=watch.baseline_accepted_at,
            accepted_by=watch.baseline_accepted_by,
        )
    return WatchOut(
        id=watch.id,
        name=watch.name,
        watch_type=WatchType(watch.watch_type),
        url=watch.url,
        drift_status=DriftStatus(watch.drift_status),
        interval_minutes=watch.interval_minutes,
        tags=watch.tags,
        headers={name: REDACTED for name in watch.header_names},
        webhook_url=watch.webhook_url,
        method=watch.method,
        body=watch.request_body,
        card_keys=CardKeysOut.model_validate(watch.card_keys) if watch.card_keys else None,
        oauth=oauth_out(watch),
        health=compute_health(
            status=watch.drift_status,
            last_checked_at=watch.last_checked_at,
            interval_minutes=watch.interval_minutes,
            now=now,
        ),
        last_checked_at=watch.last_checked_at,
        last_check_status=watch.last_check_status,
        last_error=watch.last_error,
        failure_class=FailureClass(watch.failure_class) if watch.failure_class else None,
        # Incidents are recorded by the checks of the controller; none exist before a check.
        incident=None,
        open_changes=ChangeCounts(
            breaking=watch.open_breaking, warning=watch.open_warning, info=watch.open_info
        ),
        baseline=baseline,
        managed_by=managed.managed_by(watch),
        watch_set_id=watch.watch_set_id,
        created_at=watch.created_at,
        updated_at=watch.updated_at,
    )


def watch_list_out(watches: list[Watch], next_cursor: str | None, now: datetime) -> WatchList:
    return WatchList(watches=[watch_out(w, now) for w in watches], next_cursor=next_cursor)


def _urls(data: WatchCreate | WatchUpdate) -> dict[str, str | None]:
    """The URLs of a request the fetcher will send to, by JSON pointer."""
    keys = data.card_keys
    return {
        "/url": data.url,
        "/webhookUrl": data.webhook_url,
        "/cardKeys/jwksUrl": keys.jwks_url if keys is not None else None,
    }


def _ensure_card_keys_fit(watch_type: str, card_keys: CardKeys | None) -> None:
    """Trusted keys are for agent cards (no other contract carries A2A signatures), and each
    is a public signature key: what the published schema cannot say, answered 422."""
    if card_keys is None:
        return
    if watch_type != CARD_WATCH_TYPE:
        raise Unprocessable(
            f"cardKeys is for {CARD_WATCH_TYPE} watches (this one is {watch_type}); leave it out",
            details=[{"path": "/cardKeys", "message": f"only for {CARD_WATCH_TYPE} watches"}],
        )
    problems = card_keys.problems()
    if problems:
        raise Unprocessable(
            "cardKeys names keys a watch cannot trust: " + "; ".join(m for _, m in problems),
            details=[{"path": "/cardKeys" + path, "message": m} for path, m in problems],
        )


def _ensure_name_free(session: Session, org_id: str, name: str) -> None:
    if (
        session.scalar(select(Watch.id).where(Watch.org_id == org_id, Watch.name == name))
        is not None
    ):
        raise Conflict(f"a watch named {name!r} already exists", code="duplicate_name")


def _flush_unique(session: Session, name: str) -> None:
    # Two concurrent creates can both pass the pre-check; the unique index decides.
    try:
        session.flush()
    except IntegrityError:
        raise Conflict(f"a watch named {name!r} already exists", code="duplicate_name") from None
