"""Watches: what a watch looks like on the wire, and the pure rules about its state.

A watch observes one external contract (an OpenAPI document, a REST endpoint's JSON, or an
MCP server). This module defines the request and response shapes of CONTRACT.md's "Watch"
table and pure helpers: watch type inference from a URL, health bands, and the status a
resumed watch returns to. Nothing here reads a clock; callers pass `now`.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from controller.contracts.kinds import CONTRACT_KINDS
from controller.model.base import ApiModel, JsonNumber, RequestModel
from controller.model.cardkeys import MAX_KEYS as MAX_CARD_KEYS
from controller.model.cardkeys import Jwk, jwk_problem
from controller.model.jsonvalue import JsonValue

DEFAULT_INTERVAL_MINUTES = 15
MAX_TAGS = 50
MAX_INTERVAL_MINUTES = 7 * 24 * 60
REDACTED = "<redacted>"
CURSOR_PATTERN = r"^[0-9]{1,16}\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"


class _KindEnum(StrEnum):
    @classmethod
    def _missing_(cls, value: object) -> Any:
        # An alias (the hosted product's `api` for a REST watch) is read wherever a type is.
        kind = CONTRACT_KINDS.read(value) if isinstance(value, str) else None
        return None if kind is None else cls(kind.name)


# A watch type: one member per contract kind (`controller.contracts.kinds`), in registration
# order; mypy sees a string enum without members, so no code names a kind by member.
if TYPE_CHECKING:

    class WatchType(_KindEnum): ...

else:
    WatchType = _KindEnum(
        "WatchType", [(kind.name.upper(), kind.name) for kind in CONTRACT_KINDS], module=__name__
    )


class DriftStatus(StrEnum):
    OK = "ok"
    DRIFTED = "drifted"
    ERROR = "error"
    NEVER_RUN = "never_run"
    DISABLED = "disabled"


class FailureClass(StrEnum):
    HTTP_ERROR = "http_error"
    TIMEOUT = "timeout"
    CONNECT_ERROR = "connect_error"
    TLS_ERROR = "tls_error"
    INVALID_CONTRACT = "invalid_contract"
    TOO_LARGE = "too_large"
    MCP_HANDSHAKE_FAILED = "mcp_handshake_failed"
    BLOCKED_TARGET = "blocked_target"
    INTERNAL_ERROR = "internal_error"


FAILURE_LABELS: dict[FailureClass, str] = {
    FailureClass.HTTP_ERROR: "The server answered with an HTTP error",
    FailureClass.TIMEOUT: "The server did not answer in time",
    FailureClass.CONNECT_ERROR: "The server could not be reached",
    FailureClass.TLS_ERROR: "The TLS connection failed (certificate or handshake)",
    FailureClass.INVALID_CONTRACT: "The answer is not a readable contract",
    FailureClass.TOO_LARGE: "The contract is larger than the size limit",
    FailureClass.MCP_HANDSHAKE_FAILED: "The MCP server refused or failed the handshake",
    FailureClass.BLOCKED_TARGET: "The address is refused (private or special-purpose)",
    FailureClass.INTERNAL_ERROR: "driftgate failed while checking (a defect; see the log)",
}

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_PORT = r"(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})"
# ASCII host names and IPv4 addresses (RFC 3986 reg-name characters); IDNs go in punycode and
# IPv6 literals are not accepted, because a pattern cannot say which of them are valid.
_HOST = r"[A-Za-z0-9._~%!$&'()*+,;=-]+"
URL_PATTERN = rf"^[hH][tT][tT][pP][sS]?://{_HOST}(?::{_PORT})?(?:[/?#][^\x00-\x20\x7f]*)?$"
NAME_PATTERN = r"^[^ \x00-\x1f\x7f]([^\x00-\x1f\x7f]*[^ \x00-\x1f\x7f])?$"


def explain_bad_url(value: object) -> object:
    """Give the common URL mistakes a clear message; the pattern stays the contract."""
    if not isinstance(value, str):
        return value
    scheme, sep, rest = value.partition("://")
    if not sep or scheme.lower() not in ("http", "https"):
        raise ValueError("must be an absolute http:// or https:// URL")
    if _CONTROL.search(value) or " " in value:
        raise ValueError("must not contain spaces or control characters")
    host = re.split(r"[/?#]", rest, maxsplit=1)[0]
    if "@" in host:
        raise ValueError("must not embed credentials; send them as headers instead")
    if not host or host.startswith(":"):
        raise ValueError("must include a host")
    if not host.isascii():
        raise ValueError("the host must be ASCII: write an internationalized name in punycode")
    return value


def explain_bad_name(value: object) -> object:
    if isinstance(value, str):
        if _CONTROL.search(value):
            raise ValueError("must not contain control characters")
        if value != value.strip(" "):
            raise ValueError("must not start or end with a space")
    return value


# The patterns are published in /openapi.json, so what a client validates is what we accept.
HttpUrl = Annotated[
    str,
    StringConstraints(max_length=2048, pattern=URL_PATTERN),
    BeforeValidator(explain_bad_url),
]
WatchName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=200, pattern=NAME_PATTERN),
    BeforeValidator(explain_bad_name),
]
Tag = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:/=@+-]{0,199}$")]
HeaderName = Annotated[str, StringConstraints(pattern=r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$")]
HeaderValue = Annotated[str, StringConstraints(max_length=8192, pattern=r"^[^\r\n\x00]*$")]
# Free text stored as sent: no NUL or other control characters (Postgres text cannot hold
# NUL), tabs and line breaks allowed in notes. Ids sent by clients are ASCII tokens.
NOTE_PATTERN = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$"
LABEL_PATTERN = r"^[^\x00-\x1f\x7f]+$"
TEXT_PATTERN = r"^[^\x00-\x1f\x7f]*$"  # a label that may be empty (a filter, a file name)
ID_PATTERN = r"^[A-Za-z0-9._:-]{1,64}$"
ObjectId = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
Note = Annotated[str, StringConstraints(max_length=2000, pattern=NOTE_PATTERN)]
Label = Annotated[str, StringConstraints(max_length=200, pattern=LABEL_PATTERN)]
ShortNote = Annotated[str, StringConstraints(min_length=1, max_length=500, pattern=LABEL_PATTERN)]


Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
Interval = Annotated[int, Field(ge=1, le=MAX_INTERVAL_MINUTES), JsonNumber]


def refuse_null(value: object) -> object:
    # Absent means "not given"; an explicit null is refused, as the published schema says.
    if value is None:
        raise ValueError("must not be null")
    return value


def _unique_tags(tags: list[str] | None) -> list[str] | None:
    if tags is None:
        return None
    seen: dict[str, None] = {}
    for tag in tags:
        seen.setdefault(tag, None)
    return list(seen)


class CardKeys(RequestModel):
    """The keys an `a2a_card` watch trusts for its agent card's signatures
    (`controller.model.cardkeys`): the card must carry a signature one of them verifies.
    `jwksUrl` is fetched at each check through the same address guard as the card; a `jku`
    the card names is never fetched nor trusted. That each key is a public signature key is
    `problems()`' to say (the API answers 422, a file names the line)."""

    model_config = ConfigDict(
        json_schema_extra={"anyOf": [{"required": ["jwksUrl"]}, {"required": ["keys"]}]}
    )

    jwks_url: HttpUrl | SkipJsonSchema[None] = Field(
        default=None, description="a JSON Web Key Set of the keys the card may be signed with"
    )
    keys: (
        Annotated[list[Jwk], Field(min_length=1, max_length=MAX_CARD_KEYS)] | SkipJsonSchema[None]
    ) = Field(
        default=None, description="public JSON Web Keys (RFC 7517) the card may be signed with"
    )

    @field_validator("jwks_url", "keys", mode="before")
    @classmethod
    def _not_null(cls, value: object) -> object:
        return refuse_null(value)

    @model_validator(mode="after")
    def _some(self) -> CardKeys:
        if self.jwks_url is None and not self.keys:
            raise ValueError("name jwksUrl or at least one key")
        return self

    def problems(self) -> list[tuple[str, str]]:
        """Each key that is no public signature key: (its JSON pointer below the keys, why)."""
        found = []
        for index, jwk in enumerate(self.keys or []):
            problem = jwk_problem(jwk)
            if problem is not None:
                found.append((f"/keys/{index}", f"key {index}: {problem}"))
        return found

    def stored(self) -> dict[str, Any]:
        """The shape of `watches.card_keys` (as the API writes it)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class CardKeysOut(ApiModel):
    """The keys a card watch trusts, as the API shows them (public keys: nothing to hide)."""

    jwks_url: str | None = None
    keys: list[Jwk] | None = None


# OAuth of a remote MCP watch (controller.mcpauth). Secrets are write-only: a watch shows
# whether each is set, never its value.
OAuthGrant = Literal["client_credentials", "refresh_token"]
OAuthSecret = Annotated[str, StringConstraints(min_length=1, max_length=4096, pattern=TEXT_PATTERN)]
# What `oauth_grant_problem` asks of an `oauth` object, published in its JSON Schema (the API's
# and the files') so that a client can validate it too.
OAUTH_GRANT_SCHEMA: dict[str, Any] = {
    "if": {"properties": {"grant": {"const": "client_credentials"}}},
    "then": {"required": ["clientSecret"], "not": {"required": ["refreshToken"]}},
    "else": {"required": ["refreshToken"]},
}
# RFC 6749 3.3: space-separated scope tokens of printable ASCII without `"` and `\\`.
OAUTH_SCOPE_PATTERN = r"^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$"
OAuthScope = Annotated[str, StringConstraints(max_length=1000, pattern=OAUTH_SCOPE_PATTERN)]
OAuthClientId = Annotated[
    str, StringConstraints(min_length=1, max_length=500, pattern=LABEL_PATTERN)
]


class McpOAuth(RequestModel):
    """`oauth` of a remote MCP watch: OAuth 2.1 against the authorization server the server
    advertises (docs/checks.md, "MCP servers behind OAuth"). `client_credentials` needs
    `clientSecret`; `refresh_token` needs `refreshToken` (and `clientSecret` for a
    confidential client). Secrets are sent whole every time `oauth` is sent."""

    model_config = ConfigDict(json_schema_extra=OAUTH_GRANT_SCHEMA)

    grant: OAuthGrant
    client_id: OAuthClientId
    client_secret: OAuthSecret | SkipJsonSchema[None] = Field(
        default=None, description="write-only"
    )
    refresh_token: OAuthSecret | SkipJsonSchema[None] = Field(
        default=None, description="write-only"
    )
    scope: OAuthScope | SkipJsonSchema[None] = None
    authorization_server: HttpUrl | SkipJsonSchema[None] = Field(
        default=None,
        description="the issuer to trust; default: the first the server's metadata names",
    )

    @model_validator(mode="after")
    def _grant_secrets(self) -> McpOAuth:
        problem = oauth_grant_problem(self.grant, self.client_secret, self.refresh_token)
        if problem is not None:
            raise ValueError(problem)
        return self


def oauth_grant_problem(grant: str, client_secret: object, refresh_token: object) -> str | None:
    """What is wrong with the secrets given for `grant` (the API's and the files' `oauth`)."""
    if grant == "client_credentials":
        if client_secret is None:
            return "grant client_credentials needs clientSecret"
        if refresh_token is not None:
            return "refreshToken is for grant refresh_token"
    elif refresh_token is None:
        return "grant refresh_token needs refreshToken"
    return None


class McpOAuthOut(ApiModel):
    """A watch's OAuth as the API shows it: the secrets redacted, the cached token's expiry."""

    grant: OAuthGrant
    client_id: str
    client_secret: str | None = Field(description="`<redacted>` when set")
    refresh_token: str | None = Field(description="`<redacted>` when set")
    scope: str | None
    authorization_server: str | None
    token_expires_at: datetime | None = Field(
        description="when the cached access token expires; null when none is cached"
    )


class WatchCreate(RequestModel):
    """Body of `POST /api/watches`. `label` is accepted as an alias of `name` (send one)."""

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": ["name"]}, {"required": ["label"]}]}
    )

    name: WatchName | SkipJsonSchema[None] = None
    label: WatchName | SkipJsonSchema[None] = None
    url: HttpUrl
    watch_type: WatchType | None = None
    interval_minutes: Interval | None = None
    tags: Annotated[list[Tag], Field(max_length=MAX_TAGS)] = Field(default_factory=list)
    headers: Annotated[dict[HeaderName, HeaderValue], Field(max_length=50)] | None = None
    webhook_url: HttpUrl | None = None
    method: Method | None = None
    body: JsonValue = None
    card_keys: CardKeys | None = Field(
        default=None, description="a2a_card watches: the keys the card must be signed with"
    )
    oauth: McpOAuth | None = Field(
        default=None, description="OAuth 2.1 of a remote MCP watch (mcp watches only)"
    )

    @model_validator(mode="before")
    @classmethod
    def _hosted_api(cls, data: Any) -> Any:
        # The hosted MCP server's `register_watch` sends `watchType: api` for any HTTP API.
        return read_hosted_api(data, ("watchType", "watch_type"), fetch_later=True)

    @field_validator("tags")
    @classmethod
    def _dedupe(cls, tags: list[str]) -> list[str]:
        return _unique_tags(tags) or []

    @field_validator("name", "label", mode="before")
    @classmethod
    def _not_null(cls, value: object) -> object:
        return refuse_null(value)

    @model_validator(mode="after")
    def _name_or_label(self) -> WatchCreate:
        if (self.name is None) == (self.label is None):
            raise ValueError("send `name` (or its alias `label`), not both")
        return self

    @property
    def effective_name(self) -> str:
        return self.name if self.name is not None else str(self.label)


class WatchUpdate(RequestModel):
    """Body of `PATCH /api/watches/<id>`: only the fields sent change; `headers: null` clears."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    # Not nullable on the wire: these cannot be cleared, only changed.
    name: WatchName | SkipJsonSchema[None] = None
    url: HttpUrl | SkipJsonSchema[None] = None
    interval_minutes: Interval | SkipJsonSchema[None] = None
    tags: Annotated[list[Tag], Field(max_length=MAX_TAGS)] | SkipJsonSchema[None] = None
    headers: Annotated[dict[HeaderName, HeaderValue], Field(max_length=50)] | None = None
    webhook_url: HttpUrl | None = None
    method: Method | None = None
    body: JsonValue = None
    card_keys: CardKeys | None = Field(
        default=None,
        description="a2a_card watches: the keys the card must be signed with; null clears",
    )
    oauth: McpOAuth | None = Field(
        default=None, description="OAuth 2.1 of a remote MCP watch; null removes it"
    )

    @field_validator("tags")
    @classmethod
    def _dedupe(cls, tags: list[str] | None) -> list[str] | None:
        return _unique_tags(tags)

    @field_validator("name", "url", "interval_minutes", "tags", mode="before")
    @classmethod
    def _not_null(cls, value: object) -> object:
        return refuse_null(value)

    @model_validator(mode="after")
    def _something(self) -> WatchUpdate:
        if not self.model_fields_set:
            raise ValueError("send at least one field to change")
        return self


class WatchListQuery(RequestModel):
    tag: list[Tag] = Field(default_factory=list, description="only watches with all these tags")
    drift_status: DriftStatus | None = None
    watch_type: WatchType | None = None
    vendor: Annotated[str, StringConstraints(max_length=253, pattern=LABEL_PATTERN)] | None = Field(
        default=None, description="only watches of this vendor (its `vendor:` tag, else its host)"
    )
    limit: int = Field(default=50, ge=1, le=200)
    cursor: Annotated[str, StringConstraints(pattern=CURSOR_PATTERN)] | None = Field(
        default=None, description="the nextCursor of the previous page"
    )


class Health(ApiModel):
    band: Literal["healthy", "degraded", "unknown"]
    is_stale_check: bool
    minutes_since_last_check: int | None
    expected_interval_minutes: int


class IncidentSummary(ApiModel):
    id: str
    status: Literal["open", "acknowledged", "resolved"]
    opened_at: datetime
    breaking_count: int
    flap_count: int = Field(
        default=0,
        description="times breaking drift came back within the flap window after the vendor "
        "reverted (each time the incident reopened)",
    )


class ChangeCounts(ApiModel):
    breaking: int = 0
    warning: int = 0
    info: int = 0


class Baseline(ApiModel):
    snapshot_id: str | None
    fingerprint: str | None
    accepted_at: datetime | None
    accepted_by: str | None


class ManagedBy(ApiModel):
    source: str
    path: str | None
    revision: str | None


class WatchOut(ApiModel):
    """A watch as the API shows it; header values are never shown."""

    id: str
    name: str
    watch_type: WatchType
    url: str
    drift_status: DriftStatus
    interval_minutes: int
    tags: list[str]
    headers: dict[str, str]
    webhook_url: str | None
    method: str | None
    body: Any = None
    card_keys: CardKeysOut | None = Field(
        default=None, description="the keys the agent card must be signed with (a2a_card)"
    )
    oauth: McpOAuthOut | None = None
    health: Health
    last_checked_at: datetime | None
    last_check_status: str | None
    last_error: str | None
    failure_class: FailureClass | None
    incident: IncidentSummary | None
    open_changes: ChangeCounts
    baseline: Baseline | None
    managed_by: ManagedBy | None
    watch_set_id: str | None = Field(description="the watch set this watch belongs to")
    created_at: datetime
    updated_at: datetime


class WatchList(ApiModel):
    watches: list[WatchOut]
    next_cursor: str | None = Field(
        description="pass as `cursor` for the next page; null at the end"
    )


def infer_watch_type(url: str) -> WatchType | None:
    """Guess the watch type from a URL where it is unambiguous; None when it is not."""
    found = CONTRACT_KINDS.infer(url)
    return None if found is None else WatchType(found[0].name)


HOSTED_API = "api"


def hosted_api_type(url: str) -> WatchType | None:
    """The hosted product's `api` watch type, "an HTTP API: a JSON endpoint or an OpenAPI
    document", read as driftgate's: the kind of that family the URL names (`openapi` where
    it says it serves a spec), None for a `.json` document whose name does not tell (what it
    serves decides, where that can be fetched), else the kind `api` reads as (`rest`)."""
    inferred = infer_watch_type(url)
    if inferred is not None and CONTRACT_KINDS.of(inferred.value).family == HOSTED_API:
        return inferred
    if urlsplit(url).path.lower().endswith(".json"):
        return None
    return WatchType(HOSTED_API)


def read_hosted_api(
    data: Any,
    type_keys: tuple[str, ...],
    *,
    fetch_later: bool,
    url_keys: tuple[str, ...] = ("url",),
) -> Any:
    """`data` (a mapping about to be validated) with a hosted `api` type read as driftgate's
    type for its URL (`hosted_api_type`, the first of `url_keys` present); where the URL does
    not tell, None when the type can be told later from what the URL serves (`fetch_later`),
    else `rest`."""
    if not isinstance(data, dict):
        return data
    url = next((data[k] for k in url_keys if isinstance(data.get(k), str)), None)
    if url is None:
        return data
    for key in type_keys:
        value = data.get(key)
        if isinstance(value, str) and value.lower() == HOSTED_API:
            kind = hosted_api_type(url)
            if kind is None and not fetch_later:
                kind = WatchType(HOSTED_API)
            return {**data, key: kind.value if kind is not None else None}
    return data


# Staleness (issue 40, point 4): a watch's state stops vouching for its contract once its last
# completed check is older than twice its interval (the hosted product's `isStaleCheck`) plus a
# grace that covers the controller's tick, a claim's lease and one check's fetch deadline, so a
# check that is merely late is not stale. One rule for the health field, the console, the
# portfolio's stale tile and the run gate (`controller.agents.policy`).
STALE_FACTOR = 2
STALE_GRACE_SECONDS = 120


def stale_after(interval_minutes: int) -> timedelta:
    """How long after its last completed check a watch's state is stale."""
    return timedelta(seconds=STALE_FACTOR * 60 * interval_minutes + STALE_GRACE_SECONDS)


def stale_from(
    *, status: str, last_checked_at: datetime | None, interval_minutes: int
) -> datetime | None:
    """The moment a watch's checks turn stale, unless one completes first; None when they
    never do: a paused watch is not checked on purpose, and one that never completed a check
    is `never_checked` instead."""
    if last_checked_at is None or status in _NEVER_STALE:
        return None
    return last_checked_at + stale_after(interval_minutes)


def is_stale_check(
    *, status: str, last_checked_at: datetime | None, interval_minutes: int, now: datetime
) -> bool:
    """True when checks stopped vouching for the watch's state at `now` (`stale_from`)."""
    at = stale_from(
        status=status, last_checked_at=last_checked_at, interval_minutes=interval_minutes
    )
    return at is not None and now > at


_NEVER_STALE = frozenset((DriftStatus.DISABLED.value, DriftStatus.NEVER_RUN.value))


def compute_health(
    *,
    status: str,
    last_checked_at: datetime | None,
    interval_minutes: int,
    now: datetime,
) -> Health:
    """Health of the monitoring itself: stale as `is_stale_check` says.

    `unknown` when the watch is paused; `degraded` when it never completed a check, or checks
    are stale or failing (nothing vouches for the contract); `healthy` otherwise (a drifted
    contract is still monitored healthily).
    """
    minutes = None
    if last_checked_at is not None:
        minutes = max(0, int((now - last_checked_at).total_seconds() // 60))
    stale = is_stale_check(
        status=status, last_checked_at=last_checked_at, interval_minutes=interval_minutes, now=now
    )
    if status == DriftStatus.DISABLED:
        band: Literal["healthy", "degraded", "unknown"] = "unknown"
    elif stale or status in (DriftStatus.ERROR, DriftStatus.NEVER_RUN) or last_checked_at is None:
        band = "degraded"
    else:
        band = "healthy"
    return Health(
        band=band,
        is_stale_check=stale,
        minutes_since_last_check=minutes,
        expected_interval_minutes=interval_minutes,
    )


def resumed_status(
    *, has_baseline: bool, last_check_status: str | None, open_breaking: int
) -> DriftStatus:
    """The status a paused watch returns to: recomputed from what its checks last found."""
    if last_check_status == "error":
        return DriftStatus.ERROR
    if not has_baseline:
        return DriftStatus.NEVER_RUN
    return DriftStatus.DRIFTED if open_breaking > 0 else DriftStatus.OK
