"""Process settings: the only place that reads `DRIFTGATE_*` environment variables.

Settings come from three layers, later ones winning: built-in defaults, an optional YAML
file (`--config FILE` or `DRIFTGATE_CONFIG`, keys in snake_case), and the environment. They
are validated once at start by pydantic; a bad value raises `ConfigError` naming the
variable (or file:line) and what is wrong. The result is frozen and passed explicitly.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from controller.errors import ConfigError

ENV_PREFIX = "DRIFTGATE_"
SOURCE_NAME_PATTERN = r"^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$"
_DURATION = re.compile(r"^\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s)?\s*$")


def parse_duration(value: Any) -> int:
    """Seconds from an integer or a duration such as `90s`, `5m`, `1h30m`."""
    if isinstance(value, bool):
        raise ValueError("must be seconds or a duration such as 5m")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.isdigit():
        return int(text)
    match = _DURATION.match(text)
    if not text or match is None or not any(match.groups()):
        raise ValueError(f"{text!r} is not a duration (use e.g. 30s, 5m, 1h)")
    hours, minutes, seconds = (int(part or 0) for part in match.groups())
    return hours * 3600 + minutes * 60 + seconds


class SourceSpec(BaseModel):
    """A git repository whose `.driftgate/` files the controller applies to one org."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    name: str = Field(pattern=SOURCE_NAME_PATTERN, description="unique name of the source")
    org: str = Field(min_length=1, description="org name or id the objects belong to")
    url: str = Field(
        min_length=1,
        description="local path, file://, git://, https:// (token_env) or ssh (ssh_key_file)",
    )
    branch: str = Field(default="main", min_length=1)
    path: str = Field(default=".driftgate", description="directory of the files in the repo")
    interval: Annotated[
        int,
        WithJsonSchema(
            {
                "description": "seconds between polls, or a duration such as 30s, 5m, 1h",
                "anyOf": [
                    {"type": "integer", "minimum": 10, "maximum": 86400},
                    {"type": "string", "pattern": r"^\s*(\d+h)?\s*(\d+m)?\s*(\d+s)?\s*$"},
                ],
                "default": 300,
            }
        ),
    ] = Field(default=300, ge=10, le=86400)
    suspend: bool = Field(default=False, description="keep the applied state, stop reconciling")
    allow_empty: bool = Field(
        default=False,
        alias="allowEmpty",
        description="allow a revision that prunes every object this source owns",
    )
    token_env: str | None = Field(
        default=None,
        pattern=r"^[A-Z_][A-Z0-9_]*$",
        description="https: environment variable holding an access token",
    )
    ssh_key_file: str | None = Field(default=None, description="ssh: private key file")

    @field_validator("interval", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> int:
        return parse_duration(value)


@dataclass(frozen=True)
class Target:
    """An IP address and a TCP port (`127.0.0.1:8090`, `[::1]:8090`)."""

    address: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"{host}:{self.port}"


def split_target(entry: Any) -> Target:
    """`address:port` with a literal IP address, else ValueError."""
    text = str(entry).strip()
    host, sep, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    try:
        address = ipaddress.ip_address(host)
        number = int(port)
    except ValueError:
        raise ValueError(f"{text!r} is not an IP-address:port pair (127.0.0.1:8090)") from None
    if not sep or not 1 <= number <= 65535:
        raise ValueError(f"{text!r} is not an IP-address:port pair (127.0.0.1:8090)")
    return Target(str(address), number)


class Settings(BaseModel):
    """Validated, immutable settings of one driftgate process."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    data_dir: Path = Field(
        default=Path("driftgate-data"),
        description="where the SQLite file and the generated secret key live",
    )
    database_url: str | None = Field(
        default=None, description="SQLAlchemy URL; default: SQLite file in data_dir"
    )
    database_connect_timeout_seconds: int = Field(
        default=5,
        ge=2,
        le=300,
        description="Postgres: a new connection must be made within this time (psycopg's "
        "connect_timeout; 2 at least), else the store counts as unreachable",
    )
    database_statement_timeout_seconds: float = Field(
        default=4.0,
        gt=0,
        le=3600,
        description="Postgres: the longest a statement of a web request may run (the server's "
        "statement_timeout, lock waits included); driftgate stops waiting for an answer 1 s "
        "later, so a frozen server cannot hold a request: it answers 503 store_unavailable",
    )
    database_controller_statement_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="Postgres: the same bound for the controller's statements (its batched "
        "enqueue, claims, retention deletes and reconcile writes)",
    )
    secret_key: tuple[SecretStr, ...] = Field(
        default=(), description="comma-separated keys; the first encrypts, all decrypt (rotation)"
    )
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    workers: int = Field(default=2, ge=1, le=64)
    threads: int = Field(default=8, ge=1, le=256)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["json", "text"] = "json"
    max_body_bytes: int = Field(default=1_048_576, ge=1024, le=64 * 1_048_576)
    header_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="a request's line and headers must arrive within this time (else 408)",
    )
    body_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="a request's body must arrive within this time after its headers (else 408)",
    )
    request_deadline_seconds: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="the longest a request may wait from its arrival (for a thread, then on the "
        "database: SQLite's write lock included); past it the answer is 503 with Retry-After",
    )
    fetch_deadline_seconds: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="a check's whole fetch (connect, every redirect, the whole body; an MCP "
        "server's whole session) must end within this time, else the check fails as timeout",
    )
    fetch_max_bytes: int = Field(
        default=25 * 1_048_576,
        ge=1024,
        le=1024 * 1_048_576,
        description="most bytes a check's fetch reads (the whole body; every answer of an MCP "
        "server's session), else the check fails as too_large",
    )
    delivery_deadline_seconds: float = Field(
        default=15.0,
        gt=0,
        le=300,
        description="one delivery attempt (webhook, Slack, e-mail through the relay) and each "
        "call to GitHub or the single sign-on provider must end within this time, else it "
        "fails as timeout (a delivery is retried with backoff)",
    )
    allow_private_targets: bool = False
    private_target_allowlist: tuple[str, ...] = Field(
        default=(),
        description="comma-separated address:port pairs (127.0.0.1:8090, [::1]:8090) that "
        "checks and webhooks may reach although they are private or loopback; every other "
        "private address stays refused (the demo's vendor simulator and webhook receiver)",
    )
    ca_bundle: Path | None = Field(
        default=None,
        description="PEM file of extra CA certificates trusted for outbound HTTPS (fetches, "
        "webhooks), beside the public ones: for internal CAs",
    )
    allow_stdio_mcp: bool = False
    api_key_cache_seconds: float = Field(
        default=2.0,
        ge=0,
        le=60,
        description="how long a process reuses an API key's lookup (0: look up on every "
        "request); a key revoked elsewhere stops working within this time",
    )
    queue_poll_seconds: float = Field(
        default=0.1,
        gt=0,
        le=10,
        description="how often an idle controller looks for work asked for now (a check or "
        "reconcile queued through the API or a push webhook), between its ticks",
    )
    controller_restart_delay_seconds: float = Field(
        default=1.0,
        gt=0,
        le=60,
        description="`driftgate up`: seconds before a controller process that died is started "
        "again; doubled after each death within a minute of its start, up to 30 s",
    )
    controller_restart_limit: int = Field(
        default=5,
        ge=1,
        le=100,
        description="`driftgate up`: deaths of its controller in a row, each within a minute "
        "of its start, after which `up` gives up and exits with status 3",
    )
    retention_job_days: float | None = Field(
        default=2,
        gt=0,
        description="days a finished job (a check, a reconcile, a draft PR) is kept; "
        "null: kept for ever",
    )
    retention_decision_days: float | None = Field(
        default=90,
        gt=0,
        description="days a preflight decision is kept for the audit export; null: for ever",
    )
    retention_delivery_days: float | None = Field(
        default=30,
        gt=0,
        description="days a delivered, failed or suppressed outbox message and its attempts "
        "are kept (the alert statistics read them); null: for ever",
    )
    retention_diff_run_days: float | None = Field(
        default=30,
        gt=0,
        description="days a diff run (`POST /api/openapi/diffs`) is kept; its link is a 404 "
        "after; null: for ever",
    )
    retention_drift_event_days: float | None = Field(
        default=None,
        gt=0,
        description="days a drift event is kept (never one an open incident points to); "
        "null (the default): kept for ever",
    )
    retention_incident_days: float | None = Field(
        default=None,
        gt=0,
        description="days a resolved incident is kept; null (the default): kept for ever",
    )
    delivery_concurrency: int = Field(
        default=4,
        ge=1,
        le=64,
        description="threads of each controller that deliver outbox messages (webhooks, "
        "Slack, e-mail), apart from the checks: a slow receiver holds at most these",
    )
    flap_window_seconds: float = Field(
        default=3600,
        ge=0,
        le=7 * 86400,
        description="flap damping: breaking drift that comes back within this time after "
        "its incident was resolved as reverted reopens that incident (its flapCount grows) "
        "instead of opening a new one, and a baseline that advanced by itself (info-only "
        "changes) within this time is restored when the contract returns to it (0: off)",
    )
    waiver_max_days: int = Field(
        default=180,
        ge=1,
        le=731,
        description="how far ahead a waiver's `expires` may be (`.driftgate/waivers.yaml`): "
        "an accepted finding is looked at again at least this often",
    )
    delivery_group_seconds: float = Field(
        default=3600,
        ge=0,
        le=7 * 86400,
        description="deliveries about one watch and incident to one destination: a repeat of "
        "an event type already delivered within this time is held until it ends, and only "
        "the newest held message goes out, with how many it stood for (suppressedCount); "
        "check failures and agent events are never held (0: off)",
    )
    decision_synchronous_commit: bool = Field(
        default=False,
        description="Postgres: wait for the WAL flush of each preflight decision before "
        "answering (off: a decision is visible at once and durable within about 0.6 s)",
    )
    refuse_default_user_agents: bool = False
    metrics_token: SecretStr | None = Field(
        default=None,
        description="GET /metrics asks for this bearer token (Authorization: Bearer ...), "
        "else 401; unset: /metrics answers without credentials (never logged)",
    )
    metrics_org_label: bool = Field(
        default=False,
        description="the checks, preflight and delivery metrics and the store's gauges carry "
        "an org label (each org's own series: as many series as orgs); off by default",
    )
    metrics_host: str = Field(
        default="127.0.0.1",
        description="`driftgate controller --metrics-port`: the address its own /metrics binds",
    )
    trial_sessions_enabled: bool = Field(
        default=False,
        description="hosted-product route: serve POST /api/trial/session (anonymous callers "
        "mint a trial session, each with a sandbox org) and accept X-Service-Trial; off: 404 "
        "not_found and the header is not read",
    )
    funnel_events_enabled: bool = Field(
        default=False,
        description="hosted-product route: serve POST /api/funnel/events (anonymous usage "
        "counters per event name and day); off: 404 not_found",
    )
    coverage_preview_enabled: bool = Field(
        default=False,
        description="hosted-product route: serve POST /api/coverage/preview (coverage without "
        "a key); off: 404 not_found",
    )
    # The names of controller.model.plans.PLANS (a test holds them equal: this base module
    # cannot import the domain's).
    default_plan: Literal["free", "pro", "team", "enterprise"] = Field(
        default="enterprise",
        description="the plan of an org created without one (driftgate orgs create); "
        "docs/plans.md says what each plan unlocks",
    )
    trial_validations_per_month: int = Field(default=500, ge=0)
    validate_enabled: bool = Field(
        default=True, description="serve POST /api/validate (off: 503 validation_disabled)"
    )
    validate_quota_pro: int = Field(
        default=100_000, ge=0, description="validations a month for a pro org (0: unlimited)"
    )
    validate_quota_team: int = Field(
        default=1_000_000, ge=0, description="validations a month for a team org (0: unlimited)"
    )
    validate_quota_enterprise: int = Field(
        default=0, ge=0, description="validations a month for an enterprise org (0: unlimited)"
    )
    validate_per_minute: int = Field(
        default=6000, ge=1, description="sustained validations a minute per API key or trial"
    )
    profile_cache_seconds: float = Field(
        default=2.0,
        ge=0,
        le=60,
        description="how long a process reuses a registry profile's version lookup (0: look up "
        "on every validation); a profile changed through another process applies within it",
    )
    coverage_preview_per_minute: int = Field(
        default=30, ge=1, description="POST /api/coverage/preview calls a minute per client address"
    )
    validate_burst: int = Field(
        default=600, ge=1, description="validations a key may send at once above that rate"
    )
    trial_days: int = Field(default=30, ge=1, le=365)
    public_base_url: str | None = None
    trusted_proxy_hops: int = Field(
        default=0,
        ge=0,
        le=10,
        description="reverse proxies in front of driftgate that each set X-Forwarded-For, "
        "-Proto, -Host and -Port (werkzeug's ProxyFix takes the value that many hops from the "
        "right): 1 behind one TLS proxy. 0: no forwarding header is trusted, the client's "
        "address is the connection's",
    )
    oidc_issuer: str | None = Field(
        default=None,
        description="single sign-on to the console: the OpenID Connect provider's issuer URL "
        "(its /.well-known/openid-configuration is read); off when unset",
    )
    oidc_client_id: str | None = Field(default=None, description="the console's client id there")
    oidc_client_secret: SecretStr | None = Field(
        default=None, description="the console's client secret there (never logged)"
    )
    oidc_scopes: str = Field(
        default="openid email profile", description="scopes asked for at sign-in"
    )
    oidc_label: str = Field(
        default="Sign in with single sign-on", description="the sign-in page's SSO button"
    )
    github_webhook_secret: SecretStr | None = Field(
        default=None,
        description="verifies X-Hub-Signature-256 on POST /hooks/github (push) and on POST "
        "/v1/draftpr/github/webhook (the GitHub App's pull request and installation events)",
    )
    github_app_id: int | None = Field(
        default=None, ge=1, description="the GitHub App that opens draft pull requests"
    )
    github_app_private_key: SecretStr | None = Field(
        default=None,
        description="the App's private key (PEM text), never logged; or use "
        "github_app_private_key_file",
    )
    github_app_private_key_file: Path | None = Field(
        default=None, description="a file holding the App's private key (PEM)"
    )
    github_api_url: str = Field(
        default="https://api.github.com",
        description="the GitHub REST API (GitHub Enterprise Server: https://HOST/api/v3)",
    )
    github_app_slug: str | None = Field(
        default=None,
        description="the App's URL name, for the install link "
        "(<github>/apps/<slug>/installations/new)",
    )
    smtp_host: str | None = Field(
        default=None,
        description="the server's SMTP relay, for every org without its own (PUT "
        "/api/org/smtp): the weekly summary e-mail goes through it; off when unset",
    )
    smtp_port: int = Field(default=587, ge=1, le=65535, description="the relay's port")
    smtp_security: Literal["starttls", "tls", "none"] = Field(
        default="starttls",
        description="starttls (port 587), tls (implicit TLS, port 465) or none (in clear, "
        "for a relay on a trusted network)",
    )
    smtp_username: str | None = Field(default=None, description="the relay's user, if any")
    smtp_password: SecretStr | None = Field(
        default=None, description="the relay's password (never logged or shown)"
    )
    smtp_from_address: str | None = Field(
        default=None, description="the From address of e-mail sent through the server's relay"
    )
    sources: tuple[SourceSpec, ...] = Field(
        default=(), description="git repositories to reconcile (config file only)"
    )
    git_max_file_bytes: int = Field(
        default=1_048_576,
        ge=1024,
        le=64 * 1_048_576,
        description="largest file read from a git source's .driftgate/ directory; a larger "
        "one is not read and stalls its revision with a problem at its path (the console "
        "shows files up to this size, their first 256 KiB)",
    )
    git_max_revision_bytes: int = Field(
        default=16 * 1_048_576,
        ge=1024,
        le=1024 * 1_048_576,
        description="most bytes read from the .driftgate/ directory of one revision, all "
        "files together; a file that would go past it is a problem at its path",
    )
    config: Path | None = Field(
        default=None, description="the YAML file these settings were read from"
    )
    _app_key: str | None = PrivateAttr(default=None)

    @field_validator("secret_key", mode="before")
    @classmethod
    def _split_keys(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("private_target_allowlist", mode="before")
    @classmethod
    def _split_targets(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        return tuple(str(split_target(entry)) for entry in value or ())

    @field_validator("database_url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        if not value.startswith(("sqlite", "postgresql")):
            raise ValueError("must be a sqlite:// or postgresql+psycopg:// URL")
        return value

    @field_validator("sources")
    @classmethod
    def _unique_sources(cls, value: tuple[SourceSpec, ...]) -> tuple[SourceSpec, ...]:
        names = [source.name for source in value]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"duplicate source name(s): {', '.join(duplicates)}")
        return value

    def source(self, name: str) -> SourceSpec | None:
        return next((s for s in self.sources if s.name == name), None)

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @field_validator("github_app_private_key")
    @classmethod
    def _app_key_text(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            check_app_key(value.get_secret_value())
        return value

    @field_validator("github_app_private_key_file")
    @classmethod
    def _app_key_file(cls, value: Path | None) -> Path | None:
        if value is not None:
            check_app_key(_read_app_key(value))
        return value

    @field_validator("smtp_host", "smtp_username", "smtp_from_address", mode="before")
    @classmethod
    def _unset_when_empty(cls, value: Any) -> Any:
        # `DRIFTGATE_SMTP_HOST=` (empty) means "no relay", as an unset variable does.
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("smtp_host")
    @classmethod
    def _smtp_host(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from controller.targets import host_problem

        problem = host_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value.lower()

    @field_validator("smtp_from_address")
    @classmethod
    def _smtp_from_address(cls, value: str | None) -> str | None:
        from controller.targets import EMAIL_PATTERN

        if value is not None and not re.fullmatch(EMAIL_PATTERN, value):
            raise ValueError("must be an e-mail address such as driftgate@example.com")
        return value

    @model_validator(mode="after")
    def _smtp_relay(self) -> Settings:
        # Half a relay would fail every e-mail later: say so at start instead.
        others = ("smtp_username", "smtp_password", "smtp_from_address")
        if self.smtp_host is None:
            given = [name for name in others if getattr(self, name) is not None]
            if given:
                raise ValueError(
                    f"{_named(given[0])} is set without {_named('smtp_host')}: set the "
                    "relay's host too (or neither)"
                )
            return self
        if self.smtp_from_address is None:
            raise ValueError(
                f"{_named('smtp_host')} is set without {_named('smtp_from_address')}: "
                "e-mail through the server's relay needs a From address"
            )
        if self.smtp_password is not None and self.smtp_username is None:
            raise ValueError(
                f"{_named('smtp_password')} is set without {_named('smtp_username')}: "
                "the relay's login needs both"
            )
        return self

    @model_validator(mode="after")
    def _app_credentials(self) -> Settings:
        # Half a configuration would quietly run in stub mode: say so at start instead.
        key_set = [
            name
            for name in ("github_app_private_key", "github_app_private_key_file")
            if getattr(self, name) is not None
        ]
        if len(key_set) == 2:
            raise ValueError(
                f"{_named('github_app_private_key')} and "
                f"{_named('github_app_private_key_file')} are both set: set one"
            )
        if key_set and self.github_app_id is None:
            raise ValueError(
                f"{_named(key_set[0])} is set but {_named('github_app_id')} is not: "
                "set both (or neither, for stub pull requests)"
            )
        if self.github_app_id is not None and not key_set:
            raise ValueError(
                f"{_named('github_app_id')} is set without {_named('github_app_private_key')} "
                "or its _file: set both (or neither, for stub pull requests)"
            )
        return self

    def model_post_init(self, context: Any, /) -> None:
        # The key file is read once, at start (it was checked above): a file changed or
        # removed later cannot fail a request.
        if self.github_app_private_key_file is not None:
            self._app_key = _read_app_key(self.github_app_private_key_file)

    @property
    def effective_database_url(self) -> str:
        """The URL the store connects to: the configured one, or a SQLite file in data_dir."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'driftgate.db').resolve()}"

    def github_app_key(self) -> str | None:
        """The GitHub App's private key (PEM, checked at start): the setting, else the file's
        text as read at start, else None."""
        if self.github_app_private_key is not None:
            return self.github_app_private_key.get_secret_value()
        return self._app_key

    @property
    def secret_key_file(self) -> Path:
        return self.data_dir / "secret.key"


def check_app_key(text: str) -> None:
    """Refuse (ValueError) a GitHub App private key that is not an RSA private key in PEM:
    GitHub signs App JWTs with RS256. cryptography (PyJWT's own backend) parses it; the
    message never quotes the key."""
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(text.encode("utf-8"), password=None)
    except TypeError:
        raise ValueError(
            "the GitHub App private key is encrypted: use GitHub's key as downloaded"
        ) from None
    except (ValueError, UnicodeEncodeError):
        raise ValueError(
            "not a PEM private key (GitHub's .pem as downloaded: -----BEGIN RSA PRIVATE KEY-----)"
        ) from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ValueError("not an RSA private key: GitHub App keys are RSA (RS256)")


def _named(field: str) -> str:
    return f"{field} ({env_name(field)})"


def _read_app_key(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not a PEM text file") from None


FIELDS = tuple(Settings.model_fields)
FILE_ONLY = ("sources",)  # structured settings: the config file only, no environment variable


def env_name(field: str) -> str:
    return ENV_PREFIX + field.upper()


METRICS_DIRECTORY_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


def metrics_directory() -> Path | None:
    """The directory where the processes of one `driftgate serve` or `up` write their metrics
    (prometheus_client's multiprocess mode, `controller.metrics`), set by `cli.server` for
    the processes it starts; None in any other process."""
    value = os.environ.get(METRICS_DIRECTORY_VARIABLE)
    return Path(value) if value else None


def process_environment() -> dict[str, str]:
    """A copy of the process environment, for `${env:NAME}` header references in git sources
    (resolved by the controller, never stored in clear)."""
    return dict(os.environ)


def load_settings(
    env: Mapping[str, str] | None = None,
    config_file: str | Path | None = None,
    **overrides: Any,
) -> Settings:
    """Build settings from defaults, the YAML file, the environment, then explicit overrides."""
    environ = os.environ if env is None else env
    values: dict[str, Any] = {}
    origin: dict[str, str] = {}

    path_text = config_file or environ.get(env_name("config"))
    lines: dict[str, int] = {}
    node_of_file: Any = None
    if path_text:
        path = Path(path_text)
        file_values, lines, node_of_file = _read_config_file(path)
        for key, value in file_values.items():
            values[key] = value
            origin[key] = f"{path}:{lines.get(key, 1)}: {key}"
        values["config"] = path
    for field in FIELDS:
        name = env_name(field)
        if name in environ and field != "config" and field not in FILE_ONLY:
            values[field] = environ[name]
            origin[field] = name
    for field, value in overrides.items():
        if value is not None:
            values[field] = value
            origin[field] = f"--{field.replace('_', '-')}"

    try:
        return Settings(**values)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            if not error["loc"]:  # a rule across settings: its message names them
                problems.append(error["msg"].removeprefix("Value error, "))
                continue
            field = str(error["loc"][0])
            where = origin.get(field, env_name(field))
            if field == "sources" and path_text and len(error["loc"]) > 1:
                nested = ".".join(str(part) for part in error["loc"])
                where = f"{path_text}:{yaml_line(node_of_file, error['loc'])}: {nested}"
            problems.append(f"{where}: {error['msg']}")
        raise ConfigError("invalid settings: " + "; ".join(problems)) from None


def yaml_line(node: Any, loc: tuple[Any, ...]) -> int:
    """The 1-based line of the YAML node at `loc` (as deep as the file goes): where a
    validation error's location points in a composed YAML file (settings, acknowledgements)."""
    line = node.start_mark.line + 1 if node is not None else 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if getattr(k, "value", None) == part), None)
            if match is None:
                break
            node = match
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                break
            node = node.value[part]
        else:
            break
        line = node.start_mark.line + 1
    return line


def _read_config_file(path: Path) -> tuple[dict[str, Any], dict[str, int], Any]:
    """Read a driftgate.yaml; return its values and the line of each top-level key."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror}") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{path}{line}: invalid YAML: {problem}") from None
    if data is None:
        return {}, {}, None
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        raise ConfigError(f"{path}:1: the config file must be a mapping of setting names")
    lines = {str(k.value): k.start_mark.line + 1 for k, _ in node.value if hasattr(k, "value")}
    for key in data:
        if key not in FIELDS or key == "config":
            known = ", ".join(f for f in FIELDS if f != "config")
            raise ConfigError(
                f"{path}:{lines.get(str(key), 1)}: unknown setting {key!r} (known: {known})"
            )
    return dict(data), lines, node
