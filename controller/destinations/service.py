"""Org destinations as the API and the console see them: create, list, read, replace, delete,
a test message, and each destination's health.

Secrets go in and never come out: they are stored encrypted (`SecretBox`), answered as hints
(a URL's scheme and host, a token's last four characters), kept in no audit record and no log.
A replacement that leaves `secrets` out keeps the stored ones (while the kind is the same).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints, ValidationError
from sqlalchemy import update
from sqlalchemy.orm import Session

from controller.crypto import SecretBox
from controller.destinations import store
from controller.errors import Conflict, NotFound, Unprocessable
from controller.events.channels import ORG_DESTINATION_KINDS as KINDS
from controller.events.channels import Channel, DestinationKind
from controller.events.channels import destination_hint_of as hint_of
from controller.events.channels.mail import mail_channel
from controller.events.channels.slack_bot import slack_bot_channel
from controller.events.outbox import EVENT_TYPES, emit
from controller.model.base import ApiModel, BodyBool, BodyInt, JsonNumber, RequestModel
from controller.model.choice import OneOf
from controller.model.principal import Principal
from controller.model.routing import DIGESTS, Routing
from controller.model.watch import NAME_PATTERN
from controller.settings import Settings
from controller.store import audit
from controller.store.db import Database
from controller.store.models import Destination, OutboxMessage
from controller.summary.service import send_by_relay
from controller.targets import destination_hint, refuse_unsendable

Severity = Literal["breaking", "warning", "info"]
Name = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=NAME_PATTERN)]
# A tag, or a glob over tags (`team:*`).
TagGlob = Annotated[
    str, StringConstraints(pattern=r"^[A-Za-z0-9*?\[][A-Za-z0-9_.:/=@+*?\[\]!-]{0,199}$")
]
Label = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=NAME_PATTERN)]
MAX_FILTER = 50
# A setting's or a secret's name, and its value: text (no control characters), a number or a
# boolean; what each kind takes is its own model's business (422 naming the field).
FieldName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9]{0,63}$")]
FieldValue = (
    Annotated[str, StringConstraints(max_length=2048, pattern=r"^[^\x00-\x1f\x7f]*$")]
    | BodyBool
    | BodyInt
)
MAX_GROUP_SECONDS = 86400


class DestinationRoutingIn(RequestModel):
    """Which events the destination takes; an empty list is no filter."""

    events: Annotated[list[Annotated[str, OneOf(EVENT_TYPES)]], Field(max_length=MAX_FILTER)] = (
        Field(default_factory=list, description="event types (empty: every type its kind takes)")
    )
    severities: Annotated[list[Severity], Field(max_length=3)] = Field(
        default_factory=list, description="severities (empty: the org's alert policy)"
    )
    tags: Annotated[list[TagGlob], Field(max_length=MAX_FILTER)] = Field(
        default_factory=list, description="watch tags, globs allowed (`team:*`); any one matches"
    )
    watch_sets: Annotated[list[Label], Field(max_length=MAX_FILTER)] = Field(
        default_factory=list, description="watch set names"
    )
    environments: Annotated[list[Label], Field(max_length=MAX_FILTER)] = Field(
        default_factory=list, description="environments of the watches' sets"
    )


class NamedDestinationIn(RequestModel):
    name: Name
    kind: Annotated[str, OneOf(KINDS)]
    enabled: BodyBool = True
    settings: Annotated[dict[FieldName, FieldValue], Field(max_length=20)] = Field(
        default_factory=dict, description="the kind's settings (docs/destinations.md)"
    )
    secrets: Annotated[dict[FieldName, FieldValue], Field(max_length=20)] | None = Field(
        default=None,
        description="the kind's secrets, stored encrypted and never answered; omitted on a "
        "replacement: the stored ones are kept",
    )
    routing: DestinationRoutingIn = Field(default_factory=DestinationRoutingIn)
    group_seconds: Annotated[int, Field(ge=0, le=MAX_GROUP_SECONDS), JsonNumber] | None = Field(
        default=None, description="the grouping window (null: the server's delivery_group_seconds)"
    )
    digest: Annotated[str, OneOf(DIGESTS)] = Field(
        default="off", description="off, or collect events and send one message hourly or daily"
    )


class DestinationRoutingOut(ApiModel):
    events: list[str]
    severities: list[str]
    tags: list[str]
    watch_sets: list[str]
    environments: list[str]


class DestinationHealth(ApiModel):
    status: Literal["ok", "failing", "unused"] = Field(
        description="failing from the first failed attempt until one succeeds"
    )
    last_attempt_at: datetime | None
    last_delivered_at: datetime | None
    last_error: str | None
    failed_attempts: int = Field(description="attempts in a row that failed")
    failing_since: datetime | None
    next_retry_at: datetime | None


class NamedDestinationOut(ApiModel):
    id: str
    name: str
    kind: str
    enabled: bool
    address: str = Field(description="where messages go, as a hint (a URL's scheme and host)")
    settings: dict[str, str | int | bool]
    secrets: dict[str, str] = Field(description="each secret's hint; never its value")
    routing: DestinationRoutingOut
    group_seconds: int | None
    digest: str
    health: DestinationHealth
    created_at: datetime
    updated_at: datetime


class NamedDestinationList(ApiModel):
    destinations: list[NamedDestinationOut]
    kinds: list[str] = Field(description="the kinds a destination may have")


class DestinationTestOut(ApiModel):
    queued: int = Field(description="messages queued (1: a disabled destination is tested too)")
    message_ids: list[str]


def list_destinations(session: Session, org_id: str) -> NamedDestinationList:
    rows = store.org_destinations(session, org_id)
    return NamedDestinationList(destinations=[out(row) for row in rows], kinds=kinds())


def kinds() -> list[str]:
    """The kinds a destination may have, in the registry's order."""
    return list(KINDS)


def kind_of(kind: str) -> DestinationKind:
    """The registry entry of a kind (its settings and secrets models, whether it takes a
    digest), for the console's forms; `KeyError` for an unknown kind."""
    return KINDS[kind]


def events_of(kind: str) -> tuple[str, ...]:
    """The event types a destination of `kind` can take: what its routing may choose from."""
    return KINDS[kind].events or EVENT_TYPES


def get(session: Session, org_id: str, destination_id: str) -> NamedDestinationOut:
    return out(_found(session, org_id, destination_id))


def create(
    session: Session, principal: Principal, data: NamedDestinationIn, box: SecretBox
) -> NamedDestinationOut:
    """A new destination (409 when the org has one of that name)."""
    _refuse_taken(session, principal.org_id, data.name, None)
    row = Destination(org_id=principal.org_id, name=data.name, kind=data.kind)
    _apply(row, data, box, stored_secrets=None)
    session.add(row)
    session.flush()
    _audit(session, principal, "org.destination.create", row)
    return out(row)


def replace(
    session: Session,
    principal: Principal,
    destination_id: str,
    data: NamedDestinationIn,
    box: SecretBox,
) -> NamedDestinationOut:
    """Replace a destination; omitted `secrets` keep the stored ones while the kind stays."""
    row = _found(session, principal.org_id, destination_id)
    _refuse_taken(session, principal.org_id, data.name, row.id)
    kept = store.secrets_of(box, row) if data.kind == row.kind else None
    _apply(row, data, box, stored_secrets=kept)
    if data.kind != row.kind:
        # Messages rendered for the old kind cannot go to the new one: they give up.
        _give_up(session, row.id, "gone: the destination's kind changed")
    row.name, row.kind = data.name, data.kind
    session.flush()
    _audit(session, principal, "org.destination.update", row)
    return out(row)


def delete(session: Session, principal: Principal, destination_id: str, now: datetime) -> None:
    """Delete a destination; its messages not yet sent give up."""
    row = _found(session, principal.org_id, destination_id)
    _give_up(session, row.id, "gone: the destination was deleted")
    _audit(session, principal, "org.destination.delete", row)
    session.delete(row)


def send_test(
    session: Session, principal: Principal, destination_id: str, box: SecretBox, now: datetime
) -> DestinationTestOut:
    """Queue a `destination.test` message for this destination alone, due now; the delivery
    lane sends it and its health shows how it went."""
    row = _found(session, principal.org_id, destination_id)
    messages = emit(
        session,
        box,
        org_id=row.org_id,
        event_type="destination.test",
        data={"destinationId": row.id, "destinationName": row.name, "kind": row.kind},
        now=now,
        only_destination=row.id,
    )
    session.flush()
    return DestinationTestOut(queued=len(messages), message_ids=[m.id for m in messages])


def out(row: Destination) -> NamedDestinationOut:
    spec = KINDS.get(row.kind)
    settings = dict(row.settings or {})
    address = hint_of(row.kind, spec.address(settings)) if spec and _addressable(row) else ""
    return NamedDestinationOut(
        id=row.id,
        name=row.name,
        kind=row.kind,
        enabled=row.enabled,
        address=address or "(secret)",
        settings=_aliased(spec.settings, settings) if spec else settings,
        secrets=dict(row.secret_hints or {}),
        routing=DestinationRoutingOut(**Routing.loaded(row.routing).stored()),
        group_seconds=row.group_seconds,
        digest=row.digest,
        health=health_of(row),
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def health_of(row: Destination) -> DestinationHealth:
    status: Literal["ok", "failing", "unused"] = (
        "failing" if row.failing_since is not None else "ok" if row.last_attempt_at else "unused"
    )
    return DestinationHealth(
        status=status,
        last_attempt_at=row.last_attempt_at,
        last_delivered_at=row.last_delivered_at,
        last_error=row.last_error,
        failed_attempts=row.failed_attempts,
        failing_since=row.failing_since,
        next_retry_at=row.next_retry_at,
    )


def failing(session: Session, org_id: str) -> list[NamedDestinationOut]:
    """The org's destinations failing now (the overview's "blocked now")."""
    return [out(row) for row in store.org_destinations(session, org_id) if row.failing_since]


def channels(settings: Settings, database: Database, box: SecretBox) -> list[Channel]:
    """The delivery channels of destinations that need the store or the SMTP relay (a Slack
    bot, e-mail per incident), for `controller.events.channels.delivering`."""

    def by_relay(org_id: str, recipient: str, write: Any) -> int:
        return send_by_relay(settings, database, box, org_id, recipient, write)

    return [slack_bot_channel(database), mail_channel(by_relay)]


def secret_hint(name: str, value: Any) -> str:
    """What people may see of a secret: a URL's scheme and host, a token's last four
    characters when it is long enough that they give nothing away."""
    text = str(value)
    if "://" in text:
        return f"{destination_hint(text)}/…"
    return f"…{text[-4:]}" if len(text) >= 16 else "…"


def _addressable(row: Destination) -> bool:
    """Whether the address comes from settings alone (a URL that is a secret is not shown)."""
    spec = KINDS[row.kind]
    return "url" not in spec.secrets.model_fields


def _give_up(session: Session, destination_id: str, why: str) -> None:
    """Mark the destination's messages not sent yet failed, with `why`."""
    session.execute(
        update(OutboxMessage)
        .where(
            OutboxMessage.destination_id == destination_id,
            OutboxMessage.status.in_(("pending", "retrying")),
        )
        .values(status="failed", last_error=why, lease_expires_at=None)
    )


def _found(session: Session, org_id: str, destination_id: str) -> Destination:
    row = store.find(session, org_id, destination_id)
    if row is None:
        raise NotFound(f"no destination {destination_id} in this org", code="destination_not_found")
    return row


def _refuse_taken(session: Session, org_id: str, name: str, own_id: str | None) -> None:
    taken = next(
        (r for r in store.org_destinations(session, org_id) if r.name == name and r.id != own_id),
        None,
    )
    if taken is not None:
        raise Conflict(f"the org has a destination named {name!r} already", code="name_taken")


def _apply(
    row: Destination,
    data: NamedDestinationIn,
    box: SecretBox,
    *,
    stored_secrets: dict[str, Any] | None,
) -> None:
    """Check everything first (422), then write the row: a refused body changes nothing."""
    spec = KINDS[data.kind]
    if data.digest != "off" and not spec.digests:
        raise Unprocessable(
            f"a {data.kind} destination cannot take a digest: its alerts open and close one "
            "by one (digest: off)",
            code="digest_unsupported",
        )
    settings = _validated(spec.settings, data.settings, "/settings")
    if data.secrets is None and stored_secrets is None:
        if spec.secrets.model_fields and any(
            f.is_required() for f in spec.secrets.model_fields.values()
        ):
            raise Unprocessable(
                f"a {data.kind} destination needs its secrets ({', '.join(_camel(spec.secrets))})",
                code="secrets_required",
            )
    secrets = (
        _validated(spec.secrets, data.secrets, "/secrets")
        if data.secrets is not None
        else stored_secrets or {}
    )
    urls = {f"/settings/{k}": v for k, v in _aliased(spec.settings, settings).items()}
    urls.update({f"/secrets/{k}": v for k, v in _aliased(spec.secrets, secrets).items()})
    refuse_unsendable(urls={pointer: str(v) for pointer, v in urls.items() if "://" in str(v)})
    row.enabled = data.enabled
    row.settings = settings
    row.secrets_ciphertext = box.encrypt_json(secrets) if secrets else None
    row.secret_hints = {
        _camel_name(spec.secrets, key): secret_hint(key, value) for key, value in secrets.items()
    }
    row.routing = Routing(
        events=tuple(data.routing.events),
        severities=tuple(data.routing.severities),
        tags=tuple(data.routing.tags),
        watch_sets=tuple(data.routing.watch_sets),
        environments=tuple(data.routing.environments),
    ).stored()
    row.group_seconds = data.group_seconds
    row.digest = data.digest


def _validated(model: type[BaseModel], value: dict[str, Any], where: str) -> dict[str, Any]:
    """The kind's settings or secrets, checked, as snake_case values with defaults filled in;
    422 naming each field (a JSON pointer) otherwise."""
    try:
        parsed = model.model_validate(value)
    except ValidationError as exc:
        details = [
            {
                "path": where + "".join(f"/{part}" for part in error["loc"]),
                "message": error["msg"],
            }
            for error in exc.errors(include_input=False, include_url=False)
        ]
        raise Unprocessable(
            f"{where[1:]}: " + "; ".join(f"{d['path']}: {d['message']}" for d in details),
            code="invalid_destination",
            details=details,
        ) from None
    return parsed.model_dump()


def _aliased(model: type[BaseModel], values: dict[str, Any]) -> dict[str, Any]:
    return {_camel_name(model, key): value for key, value in values.items()}


def _camel_name(model: type[BaseModel], key: str) -> str:
    field = model.model_fields.get(key)
    return field.alias if field is not None and field.alias else key


def _camel(model: type[BaseModel]) -> list[str]:
    return [_camel_name(model, key) for key in model.model_fields]


def _audit(session: Session, principal: Principal, action: str, row: Destination) -> None:
    audit.on_org(
        session,
        principal.actor,
        principal.org_id,
        action,
        {"id": row.id, "name": row.name, "kind": row.kind, "digest": row.digest},
    )
