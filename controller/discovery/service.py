"""Discovery use cases: suggest watches from pasted URLs, text and MCP client configurations
(and create them), and assert that everything found is watched (coverage, for CI), or preview
that without a key. See docs/discovery.md.

The extraction is `controller.discovery.extract` (pure); this module matches candidates with
the org's watches and creates the new ones. The preview never reads any org's data.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, ClassVar, Literal, Self

from pydantic import ConfigDict, Field, JsonValue, StringConstraints, model_validator
from pydantic.alias_generators import to_snake
from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.contracts.kinds import CONTRACT_KINDS
from controller.crypto import SecretBox
from controller.discovery.acknowledgements import acknowledged
from controller.discovery.extract import Candidate, from_mcp_config, from_text, from_urls
from controller.discovery.scan import MAX_FILES, MAX_TOTAL_BYTES, ScanResult, scan_files
from controller.errors import PayloadTooLarge, Unprocessable
from controller.model.base import ApiModel, BodyBool, BodyFloat, RequestModel
from controller.model.choice import OneOf
from controller.model.coverage import ACK_FILE
from controller.model.principal import Principal
from controller.model.problems import compose
from controller.model.watch import TEXT_PATTERN, WatchCreate
from controller.notifications.service import default_interval
from controller.store.models import Watch
from controller.watches import service as watch_service

MAX_TEXT = 256 * 1024
MAX_URLS = 200
DEFAULT_CONFIDENCE = 0.7
Text = Annotated[str, StringConstraints(max_length=MAX_TEXT)]
# No white space and no control character, C1 included: `\s` is Unicode's White_Space to the
# validator and ECMA-262's to a client that reads the published pattern, and only U+0085 (a
# C1 control) is one and not the other.
Url = Annotated[
    str, StringConstraints(max_length=2048, pattern=r"^https?://[^\s\x00-\x1f\x7f-\x9f]+$")
]
FileName = Annotated[str, StringConstraints(max_length=500, pattern=TEXT_PATTERN)]


class SourceOut(ApiModel):
    file: str | None
    line: int | None


class CandidateOut(ApiModel):
    name: str
    # In the order people pick from, as published since discovery began.
    watch_type: Annotated[str, OneOf(kind.name for kind in CONTRACT_KINDS.shown())]
    url: str | None = None
    command: str | None = Field(default=None, description="a stdio server's command (redacted)")
    transport: str | None = Field(default=None, description="stdio, http or sse (MCP)")
    source: SourceOut
    confidence: float
    reasons: list[str]
    package: str | None = None
    floating_version: bool | None = Field(
        default=None,
        description="the stdio package runs its newest version: a drift risk",
    )
    headers: dict[str, str] = Field(
        default_factory=dict, description="header names with placeholders or <redacted>"
    )
    disabled: bool = False
    acknowledged: bool = Field(
        default=False,
        description=f"a local (stdio) server acknowledged in {ACK_FILE}: the coverage gate "
        "accepts it unwatched",
    )
    existing_watch_id: str | None = Field(default=None, description="the org's watch of it")


def _one_of(inputs: dict[str, JsonValue]) -> list[JsonValue]:
    """The published rule "at least one of these, not null" (null reads as not given)."""
    return [{"required": [name], "properties": {name: {"type": t}}} for name, t in inputs.items()]


# `mcpJson` and `config` also as the parsed object: the hosted MCP server's `suggest_watches`
# and `assert_coverage` send it so (docs/compat.md).
_INPUTS: dict[str, JsonValue] = {
    "urls": "array",
    "text": "string",
    "mcpJson": ["string", "object"],
    "config": ["string", "object"],
}
McpConfig = Text | dict[str, JsonValue]


class DiscoveryIn(RequestModel):
    """What to look in: URLs, free text with URLs, an MCP client configuration file's text."""

    model_config = ConfigDict(populate_by_name=True, json_schema_extra={"anyOf": _one_of(_INPUTS)})
    inputs: ClassVar[tuple[str, ...]] = tuple(_INPUTS)

    urls: list[Url] | None = Field(default=None, max_length=MAX_URLS)
    text: Text | None = None
    mcp_json: McpConfig | None = Field(
        default=None,
        alias="mcpJson",
        description="an MCP client configuration file's text, or its JSON object",
    )
    config: McpConfig | None = Field(default=None, description="an alias of mcpJson")
    file_name: FileName | None = Field(
        default=None, description="the configuration's file name: picks its client format"
    )

    @model_validator(mode="after")
    def _something_to_look_in(self) -> Self:
        if all(getattr(self, to_snake(name)) is None for name in self.inputs):
            *first, last = self.inputs
            raise ValueError(f"give {', '.join(first)} or {last} (not null)")
        return self


class SuggestIn(DiscoveryIn):
    create: BodyBool = Field(default=False, description="create watches for the new ones")


class SuggestOut(ApiModel):
    candidates: list[CandidateOut]
    created: list[str] = Field(description="ids of the watches created (create: true)")
    not_created: list[str] = Field(
        description="candidates that were not created: stdio servers (they need a command and "
        "secrets you confirm) and disabled ones"
    )


class RepoFile(RequestModel):
    path: Annotated[str, StringConstraints(min_length=1, max_length=1000, pattern=r"^[^\x00]+$")]
    content: str


class CoverageIn(DiscoveryIn):
    model_config = ConfigDict(
        populate_by_name=True, json_schema_extra={"anyOf": _one_of({**_INPUTS, "files": "array"})}
    )
    inputs: ClassVar[tuple[str, ...]] = (*_INPUTS, "files")

    files: list[RepoFile] | None = Field(
        default=None,
        description="a repository's files: [{path, content}] (see POST /api/repo/scan)",
    )
    repo: Annotated[str, StringConstraints(max_length=300, pattern=TEXT_PATTERN)] | None = None
    run_id: Annotated[str, StringConstraints(max_length=200, pattern=TEXT_PATTERN)] | None = Field(
        default=None, alias="runId"
    )
    min_confidence: BodyFloat = Field(
        default=DEFAULT_CONFIDENCE, ge=0, le=1, description="candidates below it are not asserted"
    )


class MissingOut(ApiModel):
    url: str | None
    command: str | None = None
    transport: str | None = Field(
        default=None,
        description=f"stdio: a local server, covered by an acknowledgement in {ACK_FILE} "
        "(a watch needs a URL)",
    )
    watch_type: str
    name: str
    source: SourceOut


_ACKNOWLEDGED = f"local (stdio) servers accepted unwatched by {ACK_FILE}"


class CoverageOk(ApiModel):
    covered: Literal[True] = True
    discovered: list[CandidateOut]
    watched: list[CandidateOut]
    acknowledged: list[CandidateOut] = Field(description=_ACKNOWLEDGED)


class CoverageMissing(ApiModel):
    error: Literal["missing_watches"] = "missing_watches"
    message: str
    missing: list[MissingOut]
    missing_count: int
    discovered: list[CandidateOut]
    covered: list[CandidateOut]
    acknowledged: list[CandidateOut] = Field(description=_ACKNOWLEDGED)


class PreviewOut(ApiModel):
    candidates: list[CandidateOut]
    asserted: int = Field(
        description="candidates at or above the confidence threshold that are not "
        "acknowledged local servers"
    )
    # The gate's names for the same analysis (the hosted CLI's fail-on-missing reads them).
    # The preview reads no org's data, so every asserted candidate counts as missing.
    message: str
    missing: list[MissingOut] = Field(description="the asserted candidates: the gate's ask")
    missing_count: int = Field(description="equal to `asserted`")
    discovered: list[CandidateOut] = Field(description="equal to `candidates`")


# -- extraction --------------------------------------------------------------------------------


def candidates_of(data: DiscoveryIn, files: list[Candidate] | None = None) -> list[Candidate]:
    """Every candidate of the request's inputs, each contract once (the first place wins)."""
    found: list[Candidate] = list(files or [])
    for index, url in enumerate(data.urls or []):
        found += _at(f"/urls/{index}", from_urls([url]))
    if data.text:
        found += _at("/text", from_text(data.text))
    config = data.mcp_json if data.mcp_json is not None else data.config
    if isinstance(config, dict):
        # Sent as an object: read as its JSON text, so problems name lines of that text.
        config = json.dumps(config, indent=2, ensure_ascii=False)
    if config:
        found += _at(
            "/mcpJson" if data.mcp_json is not None else "/config",
            from_mcp_config(config, data.file_name),
        )
    unique: dict[str, Candidate] = {}
    for candidate in found:
        unique.setdefault(candidate.key, candidate)
    return list(unique.values())


def _at(origin: str, candidates: list[Candidate]) -> list[Candidate]:
    for candidate in candidates:
        candidate.origin = origin
    return candidates


def candidate_out(candidate: Candidate, existing: str | None = None) -> CandidateOut:
    return CandidateOut(
        name=candidate.name,
        watch_type=candidate.watch_type,
        url=candidate.url,
        command=candidate.command,
        transport=candidate.transport,
        source=SourceOut(file=candidate.file, line=candidate.line),
        confidence=candidate.confidence,
        reasons=candidate.reasons,
        package=candidate.package,
        floating_version=candidate.floating_version,
        headers=candidate.headers,
        disabled=candidate.disabled,
        acknowledged=candidate.acknowledged,
        existing_watch_id=existing,
    )


def _watched(session: Session, org_id: str) -> dict[str, str]:
    """The org's watches by normalized URL."""
    return {
        url.rstrip("/").lower(): watch_id
        for watch_id, url in session.execute(
            select(Watch.id, Watch.url).where(Watch.org_id == org_id)
        ).all()
    }


# -- suggest ---------------------------------------------------------------------------------


def suggest(session: Session, principal: Principal, data: SuggestIn, box: SecretBox) -> SuggestOut:
    candidates = candidates_of(data)
    watched = _watched(session, principal.org_id)
    created: list[str] = []
    not_created: list[str] = []
    answers = []
    taken = set(session.scalars(select(Watch.name).where(Watch.org_id == principal.org_id)))
    interval = default_interval(session, principal.org_id) if data.create else None
    for candidate in candidates:
        existing = watched.get(candidate.key) if candidate.url else None
        if data.create and existing is None:
            if candidate.url is None or candidate.disabled:
                not_created.append(candidate.name)
            else:
                name = _free_name(candidate.name, taken)
                watch = _create(session, principal, box, candidate, name, interval)
                taken.add(name)
                created.append(watch.id)
                existing = watch.id
        answers.append(candidate_out(candidate, existing))
    return SuggestOut(candidates=answers, created=created, not_created=not_created)


def _create(
    session: Session,
    principal: Principal,
    box: SecretBox,
    candidate: Candidate,
    name: str,
    interval: int | None,
) -> Watch:
    """The candidate's watch, or 422 naming where the request held a candidate that cannot be
    one (a host that is not ASCII, a server name a watch cannot have): nothing is created."""
    values = {"name": name, "url": candidate.url, "watchType": candidate.watch_type}
    try:
        create = compose(WatchCreate, values, what=f"a watch of {candidate.name!r}")
        return watch_service.create_watch(
            session, principal, create, box, default_interval=interval
        )
    except Unprocessable as exc:
        line = f" (line {candidate.line})" if candidate.line else ""
        details = [
            {"path": candidate.origin, "message": f"{d['path'].lstrip('/')}: {d['message']}"}
            for d in (exc.details or [{"path": "/", "message": exc.message}])
        ]
        reasons = "; ".join(d["message"] for d in details)
        raise Unprocessable(
            f"{candidate.name!r} at {candidate.origin}{line} cannot be watched: {reasons}",
            details=details,
        ) from None


def _free_name(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    index = 2
    while f"{name}-{index}" in taken:
        index += 1
    return f"{name}-{index}"


# -- coverage ------------------------------------------------------------------------------------


def assert_coverage(
    session: Session, principal: Principal, data: CoverageIn, files: ScanResult | None
) -> tuple[bool, CoverageOk | CoverageMissing]:
    """Whether every candidate at or above the confidence threshold is watched, or is a
    local (stdio) server acknowledged in the files' `.driftgate/coverage.yaml`."""
    candidates = _coverage_candidates(data, files)
    watched = _watched(session, principal.org_id)
    asserted = _asserted(data, candidates)
    covered = [c for c in asserted if c.url and c.key in watched]
    accepted = [c for c in asserted if c.acknowledged]
    missing = [c for c in asserted if not (c.url and c.key in watched) and not c.acknowledged]
    discovered = [candidate_out(c, watched.get(c.key) if c.url else None) for c in candidates]
    acknowledged_out = [candidate_out(c) for c in accepted]
    if not missing:
        return True, CoverageOk(
            discovered=discovered,
            watched=[candidate_out(c, watched[c.key]) for c in covered],
            acknowledged=acknowledged_out,
        )
    return False, CoverageMissing(
        message=f"{len(missing)} contract(s) found are not watched",
        missing=[_missing_out(c) for c in missing],
        missing_count=len(missing),
        discovered=discovered,
        covered=[candidate_out(c, watched[c.key]) for c in covered],
        acknowledged=acknowledged_out,
    )


def preview(data: CoverageIn, files: ScanResult | None) -> PreviewOut:
    """The same analysis, touching no org's data: nothing says whether a watch exists."""
    candidates = _coverage_candidates(data, files)
    asserted = [c for c in _asserted(data, candidates) if not c.acknowledged]
    found = [candidate_out(c) for c in candidates]
    return PreviewOut(
        candidates=found,
        asserted=len(asserted),
        message=f"{len(asserted)} contract(s) found need a watch for the coverage gate",
        missing=[_missing_out(c) for c in asserted],
        missing_count=len(asserted),
        discovered=found,
    )


def _missing_out(candidate: Candidate) -> MissingOut:
    return MissingOut(
        url=candidate.url,
        command=candidate.command,
        transport=candidate.transport,
        watch_type=candidate.watch_type,
        name=candidate.name,
        source=SourceOut(file=candidate.file, line=candidate.line),
    )


def _coverage_candidates(data: CoverageIn, files: ScanResult | None) -> list[Candidate]:
    """The candidates of a coverage request, marked when acknowledged. An acknowledgements
    file that cannot be read is 422 `config_invalid` (file:line): the gate never guesses."""
    if files is None:
        return candidates_of(data)
    if files.acknowledgements_invalid is not None:
        raise files.acknowledgements_invalid
    return acknowledged(candidates_of(data, files.candidates), files.acknowledgements)


def _asserted(data: CoverageIn, candidates: list[Candidate]) -> list[Candidate]:
    return [c for c in candidates if c.confidence >= data.min_confidence and not c.disabled]


# -- repository scan -------------------------------------------------------------------------------


class ScanIn(RequestModel):
    files: list[RepoFile] = Field(max_length=MAX_FILES)


class ScanOut(ApiModel):
    candidates: list[CandidateOut]
    files_read: int
    skipped_binary: int
    skipped_large: int
    problems: list[str] = Field(description="files that could not be read, with file:line")


def files_of(raw: list[RepoFile] | None) -> list[tuple[str, str]] | None:
    """[(path, content)] of a request's files, bounded (413 beyond 5,000 files or 20 MB)."""
    if raw is None:
        return None
    pairs = []
    total = 0
    for item in raw:
        total += len(item.content)
        pairs.append((item.path, item.content))
    if len(pairs) > MAX_FILES or total > MAX_TOTAL_BYTES:
        raise PayloadTooLarge(
            f"at most {MAX_FILES} files and {MAX_TOTAL_BYTES // 1_048_576} MB a request"
        )
    return pairs


def scan(data: ScanIn) -> ScanOut:
    return scan_files_out(files_of(data.files) or [])


def scan_files_out(pairs: Sequence[tuple[str, bytes | str]]) -> ScanOut:
    """`POST /api/repo/scan`'s answer for files at hand (`driftgate scan`: the same code)."""
    result = scan_files(pairs)
    return ScanOut(
        candidates=[candidate_out(c) for c in result.candidates],
        files_read=result.files_read,
        skipped_binary=result.skipped_binary,
        skipped_large=result.skipped_large,
        problems=result.problems,
    )


def scanned(raw: list[RepoFile] | None) -> ScanResult | None:
    """The scan of a coverage request's `files` (candidates and acknowledgements), or None
    without files."""
    pairs = files_of(raw)
    return None if pairs is None else scan_files(pairs)
