"""The files of a repository's `.driftgate/` directory: agents, templates and watch sets.

Git is the source of truth: these pydantic models define what `agents.yaml`,
`templates.yaml` and `watch-sets.yaml` may contain, `config-schema/*.schema.json` is generated
from them, and `controller.gitsources.load` reads the files against both. Keys are spelled as in
SPEC.md (`runtime_webhook`, `repoRef`, `watchType`, `on_breaking`, ...).

Secrets never live in git: a header value for a sensitive header (see `is_sensitive_header`)
must reference the controller's environment as `${env:NAME}`, which the controller resolves.
URLs and header values must also be ones the fetcher can send (`controller.targets`,
shared with the API); what the schema cannot say about them, the models refuse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import SkipJsonSchema

from controller.contracts.base import MCP_SESSION
from controller.contracts.kinds import CONTRACT_KINDS
from controller.model.cardkeys import CARD_WATCH_TYPE
from controller.model.dashboard import PANELS, Panel
from controller.model.waivers import WatchWaiver
from controller.model.watch import (
    LABEL_PATTERN,
    NOTE_PATTERN,
    OAUTH_GRANT_SCHEMA,
    URL_PATTERN,
    CardKeys,
    HeaderName,
    HeaderValue,
    HttpUrl,
    Interval,
    OAuthClientId,
    OAuthGrant,
    OAuthScope,
    Tag,
    WatchName,
    WatchType,
    explain_bad_url,
    oauth_grant_problem,
    read_hosted_api,
)
from controller.targets import check_header_value, check_url, check_url_template

VERSION = 1
POLICY_PRESETS = ("notify-only", "staging-strict", "production-guard")
DEFAULT_POLICY = "notify-only"
# The hosted product's presets that driftgate has no preset of its own for, and the preset it
# reads them as (docs/decisions.md): `dev-flexible` never blocks a run, as `notify-only`.
HOSTED_PRESETS: dict[str, str] = {"dev-flexible": "notify-only"}
ALL_PRESETS = (*POLICY_PRESETS, *HOSTED_PRESETS)

SLUG_PATTERN = r"^[a-z0-9](?:[a-z0-9_-]{0,62}[a-z0-9])?$"
ENVIRONMENT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
REPOSITORY_PATTERN = r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$"
REPO_REF_PATTERN = r"^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+(?:@[^\s@\x00-\x1f\x7f]+)?$"
HTTPS_URL_PATTERN = URL_PATTERN.replace("[sS]?://", "[sS]://", 1)
# A template's URL may hold `{placeholders}` (`https://{host}/openapi.json`) that a watch fills.
URL_TEMPLATE_PATTERN = URL_PATTERN.replace(";=-]+", ";={}-]+", 1)
assert URL_TEMPLATE_PATTERN != URL_PATTERN
HEADER_NAME_PATTERN = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$"
HEADER_VALUE_PATTERN = r"^[^\r\n\x00]*$"
# A header value that the controller reads from its own environment (the whole value).
ENV_VALUE_PATTERN = r"^\$\{env:[A-Z_][A-Z0-9_]*\}$"
ENV_REFERENCE = re.compile(r"^\$\{env:([A-Z_][A-Z0-9_]*)\}$")
SECRET_MESSAGE = "plain secrets in git are refused: use ${env:NAME}"


def _any_case(word: str) -> str:
    # JSON Schema regexes (ECMA-262) have no case-insensitive flag.
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else re.escape(c) for c in word)


_SENSITIVE_WORDS = ("token", "secret", "key", "auth", "password")
_SENSITIVE_EXACT = ("authorization", "proxy-authorization", "cookie", "x-api-key")
SENSITIVE_HEADER_PATTERN = (
    "^(?:"
    + "|".join(_any_case(name) for name in _SENSITIVE_EXACT)
    + "|.*(?:"
    + "|".join(_any_case(word) for word in _SENSITIVE_WORDS)
    + ").*)$"
)


def is_sensitive_header(name: str) -> bool:
    """Whether a header carries credentials, so its value must come from the environment."""
    lowered = name.lower()
    return lowered in _SENSITIVE_EXACT or any(word in lowered for word in _SENSITIVE_WORDS)


def env_reference(value: str) -> str | None:
    """The NAME of a header value `${env:NAME}`, or None for a plain value."""
    match = ENV_REFERENCE.match(value)
    return match.group(1) if match else None


def _refuse_plain_secrets(headers: dict[str, str]) -> dict[str, str]:
    for name, value in headers.items():
        if is_sensitive_header(name) and not re.match(ENV_VALUE_PATTERN, value):
            raise ValueError(f"header {name}: {SECRET_MESSAGE}")
    return headers


def _explain_bad_https_url(value: object) -> object:
    value = explain_bad_url(value)
    if isinstance(value, str) and not value.lower().startswith("https://"):
        raise ValueError("must be an https:// URL")
    return value


def _listify(value: object) -> object:
    return [value] if isinstance(value, str) else value


def _dedupe(items: list[Any]) -> list[Any]:
    return list(dict.fromkeys(items))


def _actions_schema(actions: tuple[str, ...], min_items: int) -> dict[str, Any]:
    one = {"type": "string", "enum": list(actions)}
    return {
        "anyOf": [
            one,
            {"type": "array", "items": one, "uniqueItems": True, "minItems": min_items},
        ]
    }


BreakingAction = Literal["notify", "draft_pr", "block_new_runs", "kill_in_flight"]
WarningAction = Literal["notify"]
PolicyPreset = Literal["notify-only", "staging-strict", "production-guard"]
assert get_args(PolicyPreset) == POLICY_PRESETS

Slug = Annotated[str, StringConstraints(pattern=SLUG_PATTERN)]
SendableUrl = Annotated[HttpUrl, AfterValidator(check_url)]
UrlTemplate = Annotated[
    str,
    StringConstraints(max_length=2048, pattern=URL_TEMPLATE_PATTERN),
    BeforeValidator(explain_bad_url),
]
Environment = Annotated[str, StringConstraints(pattern=ENVIRONMENT_PATTERN)]
RepoRef = Annotated[str, StringConstraints(max_length=300, pattern=REPO_REF_PATTERN)]
# A file inside a repository: relative segments, none of them `.` or `..`, none empty.
_SEGMENT = r"\.?[A-Za-z0-9_@+-][A-Za-z0-9_.@+-]*"
VENDORED_PATH_PATTERN = rf"^{_SEGMENT}(?:/{_SEGMENT})*$"
VendoredPath = Annotated[str, StringConstraints(max_length=500, pattern=VENDORED_PATH_PATTERN)]
HttpsUrl = Annotated[
    str,
    StringConstraints(max_length=2048, pattern=HTTPS_URL_PATTERN),
    BeforeValidator(_explain_bad_https_url),
    AfterValidator(check_url),
]
BreakingActions = Annotated[
    list[BreakingAction],
    BeforeValidator(_listify),
    Field(min_length=1),
    AfterValidator(_dedupe),
    WithJsonSchema(_actions_schema(get_args(BreakingAction), 1)),
]
WarningActions = Annotated[
    list[WarningAction],
    BeforeValidator(_listify),
    AfterValidator(_dedupe),
    WithJsonSchema(_actions_schema(get_args(WarningAction), 0)),
]
Headers = Annotated[
    dict[HeaderName, Annotated[HeaderValue, AfterValidator(check_header_value)]],
    Field(max_length=50),
    AfterValidator(_refuse_plain_secrets),
    WithJsonSchema(
        {
            "type": "object",
            "maxProperties": 50,
            "description": "header name to value; credentials must be ${env:NAME} references",
            "propertyNames": {"pattern": HEADER_NAME_PATTERN},
            "patternProperties": {
                SENSITIVE_HEADER_PATTERN: {"type": "string", "pattern": ENV_VALUE_PATTERN}
            },
            "additionalProperties": {
                "type": "string",
                "maxLength": 8192,
                "pattern": HEADER_VALUE_PATTERN,
            },
        }
    ),
]


def _policy_names(schema: dict[str, Any]) -> None:
    # pydantic renders constrained dict keys as patternProperties, which lets other keys
    # through; propertyNames refuses them, and the preset names with them.
    ((pattern, value),) = schema.pop("patternProperties").items()
    schema["propertyNames"] = {"pattern": pattern, "not": {"enum": list(ALL_PRESETS)}}
    schema["additionalProperties"] = value


def _pattern_keys(schema: dict[str, Any]) -> None:
    # As `_policy_names`: the key pattern in propertyNames, so other keys are refused.
    ((pattern, value),) = schema.pop("patternProperties").items()
    schema["propertyNames"] = {**schema.get("propertyNames", {}), "pattern": pattern}
    schema["additionalProperties"] = value


Tags = Annotated[list[Tag], Field(max_length=50), AfterValidator(_dedupe)]
# A watch type as the files write it: driftgate's, or the hosted product's `api` (an HTTP API:
# read as `openapi` where a watch's URL names a spec, else `rest`; `rest` where no URL is
# beside it), so the schema lets `api` through too.
FileWatchType = Annotated[
    WatchType,
    WithJsonSchema(
        {
            "type": "string",
            "enum": list(CONTRACT_KINDS.spellings()),
            "description": "`api` (the hosted product's name of an HTTP API) is read as "
            "`openapi` where the watch's URL names a spec (openapi, swagger, api-docs, .yaml), "
            "else `rest`",
        }
    ),
]
Label = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=LABEL_PATTERN)]
Description = Annotated[str, StringConstraints(max_length=500, pattern=NOTE_PATTERN)]


class FileModel(BaseModel):
    """A part of a `.driftgate/` file: unknown keys are refused, names are as written."""

    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        field_title_generator=lambda name, info: info.alias or name,
    )


class CamelFileModel(FileModel):
    model_config = ConfigDict(alias_generator=to_camel)


# agents.yaml


def _notify_on_breaking() -> list[BreakingAction]:
    return ["notify"]


def _notify_on_warning() -> list[WarningAction]:
    return ["notify"]


class Policy(FileModel):
    """A custom drift policy declared under `policies:` in agents.yaml."""

    on_breaking: BreakingActions = Field(
        default_factory=_notify_on_breaking, description="actions on breaking drift"
    )
    on_warning: WarningActions = Field(
        default_factory=_notify_on_warning, description="actions on warning drift ([] for none)"
    )
    require_ack_to_unblock: bool = Field(
        default=False, description="a block stays until the incident is acknowledged"
    )
    auto_resolve_incident: bool = Field(
        default=True, description="resolve the incident when the breaking changes disappear"
    )


class ApprovalRule(FileModel):
    """Who may acknowledge an agent's incidents: changes from this repository and branches."""

    repository: Annotated[str, StringConstraints(max_length=300, pattern=REPOSITORY_PATTERN)] = (
        Field(description="owner/name, compared case-insensitively")
    )
    branches: Annotated[
        list[
            Annotated[str, StringConstraints(min_length=1, max_length=255, pattern=LABEL_PATTERN)]
        ],
        Field(min_length=1, max_length=50),
    ] = Field(default_factory=lambda: ["*"], description="glob patterns; default: any branch")


class InlineWatch(CamelFileModel):
    """A watch declared in place in an agent's `watches:` list. Without a `name` (the hosted
    form), the loader names it: the watch these files declare with the same URL and type, else
    a name derived from the URL (`controller.gitsources.load.derived_name`)."""

    name: WatchName | SkipJsonSchema[None] = Field(
        default=None, description="default: the declared watch of that URL, else from the URL"
    )
    url: SendableUrl
    watch_type: FileWatchType = Field(alias="type")

    @model_validator(mode="before")
    @classmethod
    def _hosted_api(cls, data: Any) -> Any:
        return read_hosted_api(data, ("type", "watch_type"), fetch_later=False)


class A2aBinding(CamelFileModel):
    """The hosted `a2a:` of an agent: its A2A agent card, which must also be an `a2a_card`
    watch of the agent (the loader checks it)."""

    card_url: SendableUrl = Field(description="the agent card's URL (/.well-known/agent.json)")


class McpBinding(CamelFileModel):
    """The hosted `mcp:` of an agent. driftgate checks it and acts on none of it (the hosted
    product's card/tool correlation reads it); see docs/gitops-files.md."""

    config_path: Label = Field(description="the agent's MCP client configuration file")
    lock_servers: Annotated[list[Label], Field(max_length=200)] | SkipJsonSchema[None] = None
    skill_tool_map: (
        Annotated[dict[Label, Annotated[list[Label], Field(max_length=200)]], Field(max_length=500)]
        | SkipJsonSchema[None]
    ) = Field(
        default=None,
        description="A2A skill id -> the MCP tools that serve it",
        json_schema_extra=_pattern_keys,
    )


ToolCosts = Annotated[
    dict[Label, Annotated[float, Field(ge=0, allow_inf_nan=False)]], Field(max_length=500)
]


class Agent(FileModel):
    """One agent binding: which watches an agent depends on and what drift does to it."""

    id: Slug = Field(description="agent id (a lowercase slug)")
    slug: Slug = Field(
        default_factory=lambda data: str(data.get("id", "")),
        description="a second route name for the agent; defaults to the id",
    )
    name: WatchName | SkipJsonSchema[None] = Field(default=None, description="display name")
    environment: Environment | SkipJsonSchema[None] = None
    policy: Slug = Field(
        default=DEFAULT_POLICY,
        description="a preset (notify-only, staging-strict, production-guard; the hosted "
        "dev-flexible reads as notify-only) or a name under policies",
    )
    watches: Annotated[list[WatchName | InlineWatch], Field(max_length=200)] = Field(
        default_factory=list, description="watch names, ids or URLs, or inline watches"
    )
    runtime_webhook: HttpsUrl | SkipJsonSchema[None] = Field(
        default=None, description="receives agent.contract.blocked events"
    )
    repo_ref: RepoRef | SkipJsonSchema[None] = Field(
        default=None, alias="repoRef", description="owner/repo@branch"
    )
    vendored_paths: Annotated[dict[WatchName, VendoredPath], Field(max_length=200)] = Field(
        default_factory=dict,
        alias="vendoredPaths",
        description="watch (name, as listed under watches) -> the path of that contract's copy "
        "in repoRef; a draft pull request rewrites it to the new contract",
        json_schema_extra=_pattern_keys,
    )
    approvals: Annotated[list[ApprovalRule], Field(max_length=50)] = Field(
        default_factory=list,
        description="remediation approval rules: an ack (the repository and branch its "
        "caller states, not verified) and a merged draft pull request (its own; verified when "
        "GitHub reports the merge) must match one of them (none: any caller with an org key)",
    )
    a2a: A2aBinding | SkipJsonSchema[None] = Field(
        default=None, description="hosted form: the agent's A2A card (an a2a_card watch too)"
    )
    mcp: McpBinding | SkipJsonSchema[None] = Field(
        default=None, description="hosted form: checked, not acted on"
    )
    tool_costs: ToolCosts | SkipJsonSchema[None] = Field(
        default=None,
        description="hosted form: tool -> USD per blocked call; ignored",
        json_schema_extra=_pattern_keys,
    )


class AgentsFile(FileModel):
    """`.driftgate/agents.yaml`."""

    model_config = ConfigDict(title="agents.yaml")

    version: Literal[1]
    org: Label | SkipJsonSchema[None] = Field(
        default=None, description="hosted form: the org (name or id) the source applies to"
    )
    policies: dict[Slug, Policy] = Field(
        default_factory=dict,
        description="custom policies by name (a lowercase slug, not a preset name)",
        json_schema_extra=_policy_names,
    )
    agents: list[Agent]

    @model_validator(mode="after")
    def _no_shadowed_presets(self) -> AgentsFile:
        for name in self.policies:
            if name in ALL_PRESETS:
                raise ValueError(f"policy {name!r} shadows the built-in preset")
        return self


# templates.yaml


class Template(CamelFileModel):
    """A reusable watch configuration; its values are defaults, not locks."""

    name: WatchName
    watch_type: FileWatchType
    url_pattern: Annotated[UrlTemplate, AfterValidator(check_url_template)] = Field(
        description="URL of watches made from the template; `{placeholders}` make url required"
    )
    policy_preset: PolicyPreset | SkipJsonSchema[None] = Field(
        default=None, description="default policy of agent bindings made from the template"
    )
    headers: Headers = Field(default_factory=dict)
    tags: Tags = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _hosted_api(cls, data: Any) -> Any:
        return read_hosted_api(
            data,
            ("watchType", "watch_type"),
            fetch_later=False,
            url_keys=("urlPattern", "url_pattern"),
        )


class TemplatesFile(CamelFileModel):
    """`.driftgate/templates.yaml`."""

    model_config = ConfigDict(title="templates.yaml")

    version: Literal[1]
    templates: list[Template]


# watch-sets.yaml


def _env_secret(value: object) -> object:
    if isinstance(value, str) and not re.match(ENV_VALUE_PATTERN, value):
        raise ValueError(SECRET_MESSAGE)
    return value


EnvSecret = Annotated[
    str,
    BeforeValidator(_env_secret),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": ENV_VALUE_PATTERN,
            "description": "a ${env:NAME} reference: secrets never live in git",
        }
    ),
]


class FileMcpOAuth(CamelFileModel):
    """`oauth` of a remote MCP watch (docs/checks.md, "MCP servers behind OAuth"): the
    grant and client, its secrets as `${env:NAME}` references the controller resolves."""

    model_config = ConfigDict(json_schema_extra=OAUTH_GRANT_SCHEMA)

    grant: OAuthGrant
    client_id: OAuthClientId
    client_secret: EnvSecret | SkipJsonSchema[None] = None
    refresh_token: EnvSecret | SkipJsonSchema[None] = None
    scope: OAuthScope | SkipJsonSchema[None] = None
    authorization_server: SendableUrl | SkipJsonSchema[None] = Field(
        default=None,
        description="the issuer to trust; default: the first the server's metadata names",
    )

    @model_validator(mode="after")
    def _grant_secrets(self) -> FileMcpOAuth:
        problem = oauth_grant_problem(self.grant, self.client_secret, self.refresh_token)
        if problem is not None:
            raise ValueError(problem)
        return self


class WatchSetEntry(CamelFileModel):
    """A watch in a watch set: from a `template` (with overrides) or from `url` + `watchType`."""

    model_config = ConfigDict(
        json_schema_extra={
            "if": {"required": ["template"]},
            "then": {"not": {"required": ["watchType"]}},
            "else": {"required": ["url", "watchType"]},
        }
    )

    name: WatchName
    template: WatchName | SkipJsonSchema[None] = None
    url: SendableUrl | SkipJsonSchema[None] = None
    watch_type: FileWatchType | SkipJsonSchema[None] = None
    headers: Headers | SkipJsonSchema[None] = Field(
        default=None, description="merged over the template's headers"
    )

    @model_validator(mode="before")
    @classmethod
    def _hosted_api(cls, data: Any) -> Any:
        return read_hosted_api(data, ("watchType", "watch_type"), fetch_later=False)

    tags: Tags | SkipJsonSchema[None] = Field(
        default=None, description="added to the template's tags"
    )
    interval_minutes: Interval | SkipJsonSchema[None] = None
    card_keys: CardKeys | SkipJsonSchema[None] = Field(
        default=None,
        description="a2a_card watches: the keys the agent card must be signed with (a JWKS "
        "URL and/or public JWKs); a jku inside the card is never trusted by itself",
    )

    @field_validator("card_keys")
    @classmethod
    def _trusted_keys(cls, keys: CardKeys | None, info: ValidationInfo) -> CardKeys | None:
        watch_type = info.data.get("watch_type")
        if keys is not None and watch_type is not None and watch_type != CARD_WATCH_TYPE:
            raise ValueError(f"only for {CARD_WATCH_TYPE} watches (this one is {watch_type})")
        problems = keys.problems() if keys is not None else []
        if problems:
            raise ValueError("; ".join(message for _, message in problems))
        return keys

    oauth: FileMcpOAuth | SkipJsonSchema[None] = Field(
        default=None, description="OAuth 2.1 of a remote MCP watch (watchType mcp)"
    )

    @model_validator(mode="after")
    def _template_or_url(self) -> WatchSetEntry:
        if self.template is not None:
            if self.watch_type is not None:
                raise ValueError("watchType comes from the template; remove it")
        elif self.url is None or self.watch_type is None:
            raise ValueError("give template, or url and watchType")
        if self.oauth is not None and self.watch_type is not None:
            if CONTRACT_KINDS.of(self.watch_type).fetch != MCP_SESSION:
                raise ValueError("oauth is for MCP watches (watchType mcp)")
        if self.oauth is not None and any(
            name.lower() == "authorization" for name in self.headers or {}
        ):
            raise ValueError("oauth sends the Authorization header itself; remove it from headers")
        return self


class WatchSet(CamelFileModel):
    """A named set of watches, such as staging versus production."""

    name: WatchName
    environment: Environment | SkipJsonSchema[None] = None
    description: Description | SkipJsonSchema[None] = None
    watches: Annotated[list[WatchSetEntry], Field(max_length=500)] = Field(default_factory=list)


class WatchSetsFile(CamelFileModel):
    """`.driftgate/watch-sets.yaml`, and each `.driftgate/watch-sets/*.yaml`: their watch
    sets and watches are one namespace (a name is unique across all of them)."""

    model_config = ConfigDict(title="watch-sets.yaml")

    version: Literal[1]
    watch_sets: list[WatchSet]


# dashboards.yaml


class DashboardFilterSpec(CamelFileModel):
    """Which watches a dashboard shows (all of the org's when empty)."""

    tag: Tag | SkipJsonSchema[None] = None
    vendor: WatchName | SkipJsonSchema[None] = Field(
        default=None, description="a `vendor:` tag's value, or a host"
    )
    watch_type: FileWatchType | SkipJsonSchema[None] = None
    environment: Environment | SkipJsonSchema[None] = Field(
        default=None, description="the watches an agent of this environment depends on"
    )


class DashboardSpec(CamelFileModel):
    """A dashboard template: a named view of the portfolio."""

    name: WatchName
    description: Description | SkipJsonSchema[None] = None
    filters: DashboardFilterSpec = Field(default_factory=DashboardFilterSpec)
    panels: Annotated[list[Panel], Field(min_length=1, max_length=len(PANELS))]


class DashboardsFile(CamelFileModel):
    """`.driftgate/dashboards.yaml`."""

    model_config = ConfigDict(title="dashboards.yaml")

    version: Literal[1]
    dashboards: list[DashboardSpec]


class WaiversFile(FileModel):
    """`.driftgate/waivers.yaml`: accepted findings (`controller.model.waivers`)."""

    model_config = ConfigDict(title="waivers.yaml")

    version: Literal[1]
    waivers: list[WatchWaiver] = Field(default_factory=list)


# Paths that cannot be read: each is a problem at its path, so a revision with one applies
# nothing (a symbolic link skipped in silence would prune everything its file declared).

MAX_FILE_BYTES = 1_048_576
"""Default limit of one `.driftgate/` file (setting `git_max_file_bytes`); real files are a few
KiB."""

MAX_REVISION_BYTES = 16 * 1_048_576
"""Default limit of all the files read from one revision (setting `git_max_revision_bytes`)."""

UnreadableKind = Literal[
    "symlink", "submodule", "directory", "file", "special", "too_large", "over_total"
]


@dataclass(frozen=True)
class Unreadable:
    """Why a path that driftgate reads in a `.driftgate/` directory was not read.

    `kind`: a symbolic link, a submodule (gitlink), a directory where a file belongs, a file
    where a directory belongs (`profiles`), another special file (a FIFO, a socket or a device
    in a working directory), a file over the per-file limit (`size`, `limit`), or a file that
    would take the revision past its total limit (`limit`).
    """

    kind: UnreadableKind
    size: int = 0
    limit: int = 0

    @property
    def message(self) -> str:
        if self.kind == "symlink":
            return (
                "cannot read: it is a symbolic link; driftgate reads only files committed in "
                "place (replace the link with the file itself)"
            )
        if self.kind == "submodule":
            return (
                "cannot read: it is a submodule, not a file or directory of this repository "
                "(commit the file itself in this repository)"
            )
        if self.kind == "directory":
            return (
                "cannot read: it is a directory, not a file (commit the file itself under "
                "this name)"
            )
        if self.kind == "file":
            return "cannot read: it is a file, not a directory (make it a directory of files)"
        if self.kind == "special":
            return (
                "cannot read: it is not a regular file (a FIFO, socket or device); replace "
                "it with the file itself"
            )
        if self.kind == "too_large":
            return (
                f"the file has {self.size:,} bytes ({describe_size(self.size)}), more than "
                f"the limit of {describe_size(self.limit)} per file (git_max_file_bytes); "
                "driftgate did not read it (split it, or raise the limit)"
            )
        return (
            f"not read: the files of this revision would take more than "
            f"{describe_size(self.limit)} in all (git_max_revision_bytes); make them smaller "
            "or raise the limit"
        )


def describe_size(size: int) -> str:
    """`512` -> `512 bytes`, `1536` -> `1.5 KiB`, `1048576` -> `1 MiB`: bytes as people read
    them (rounded to a tenth)."""
    units = ("bytes", "KiB", "MiB", "GiB", "TiB")
    value, index = float(size), 0
    while value >= 1024 and index < len(units) - 1:
        value /= 1024
        index += 1
    if index == 0:
        return f"{size} bytes"
    return f"{value:.1f}".removesuffix(".0") + f" {units[index]}"
