"""A2A coverage for CI: `POST /api/a2a/coverage/assert` (the hosted CLI's
`assert-a2a-coverage` and the MCP server's `assert_a2a_coverage` call it).

Read-only: it reads the caller's org's watches and creates nothing. A manifest that fails the
checks of `.driftguard/agents.yaml` is 400 with each problem's pointer and message.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, PlainValidator, StringConstraints, TypeAdapter
from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.agentmanifest.coverage import (
    AgentCoverage,
    OrgWatch,
    is_well_formed,
    load_manifest,
    match,
    missing_urls,
    pointer,
)
from controller.errors import Unprocessable, ValidationFailed
from controller.model.base import ApiModel, RequestModel
from controller.model.gitops import AgentsFile
from controller.model.jsonvalue import JsonValue
from controller.model.watch import TEXT_PATTERN
from controller.store.models import Watch

# The hosted CLI names the repository in this header as well as in the body.
REPO_HEADER = "X-DriftGuard-CI-Repo"
Repo = Annotated[str, StringConstraints(max_length=300, pattern=TEXT_PATTERN)]
_JSON_OBJECT = TypeAdapter(dict[str, JsonValue])


def _json_object(value: Any) -> dict[str, Any]:
    return _JSON_OBJECT.validate_python(value)


# Published as the agents.yaml schema; taken as any JSON object, then checked by the loader of
# the git files, so that its problems are the files' problems (with pointers).
Manifest = Annotated[
    dict[str, Any], PlainValidator(_json_object, json_schema_input_type=AgentsFile)
]


class A2aCoverageIn(RequestModel):
    """The hosted agents manifest (`agents.yaml` as JSON) and, for the log, its repository."""

    manifest: Manifest = Field(
        description="the hosted agents.yaml as JSON: {version: 1, org?, policies?, agents}"
    )
    repo: Repo | None = Field(
        default=None, description=f"owner/name; else the {REPO_HEADER} header; echoed only"
    )


class WatchMatch(ApiModel):
    type: str | None = Field(description="the watch type (null for a reference by name)")
    url: str = Field(description="the URL, or the reference as written")
    watch_id: str | None = Field(description="the org's watch, null when missing")


class MissingWatch(ApiModel):
    type: str | None
    url: str


class AgentOut(ApiModel):
    id: str
    slug: str
    watches: list[WatchMatch]
    missing_watches: list[MissingWatch]


class A2aCoverageOk(ApiModel):
    ok: Literal[True] = True
    message: str
    missing_watch_urls: list[str] = Field(description="always empty here")
    agents: list[AgentOut]
    repo: str | None


class A2aCoverageMissing(ApiModel):
    ok: Literal[False] = False
    error: Literal["missing_watches"] = "missing_watches"
    message: str
    missing_watch_urls: list[str]
    agents: list[AgentOut]
    repo: str | None


def assert_a2a_coverage(
    session: Session, org_id: str, data: A2aCoverageIn, repo_header: str | None = None
) -> A2aCoverageOk | A2aCoverageMissing:
    """Whether every watch of the manifest is a watch of the org (by URL and type family)."""
    bundle = load_manifest(data.manifest)
    if bundle.problems:
        details = [{"path": pointer(p), "message": p.message} for p in bundle.problems]
        summary = "; ".join(f"{d['path']}: {d['message']}" for d in details[:5])
        message = f"the agents manifest is invalid: {summary}"
        if is_well_formed(data.manifest):  # what no schema can say: 422, as elsewhere
            raise Unprocessable(message, details=details)
        raise ValidationFailed(message, details=details)
    rows = session.execute(
        select(Watch.id, Watch.name, Watch.url, Watch.watch_type).where(Watch.org_id == org_id)
    ).all()
    agents = match(bundle, (OrgWatch(*row) for row in rows))
    missing = missing_urls(agents)
    repo = data.repo or _repo(repo_header)
    out = [_agent_out(agent) for agent in agents]
    if not missing:
        count = sum(len(agent.watches) for agent in agents)
        return A2aCoverageOk(
            message=f"All {count} manifest watch(es) are registered.",
            missing_watch_urls=[],
            agents=out,
            repo=repo,
        )
    return A2aCoverageMissing(
        message=f"{len(missing)} manifest watch URL(s) are not registered watches of the org",
        missing_watch_urls=missing,
        agents=out,
        repo=repo,
    )


def _agent_out(agent: AgentCoverage) -> AgentOut:
    return AgentOut(
        id=agent.id,
        slug=agent.slug,
        watches=[WatchMatch(type=k, url=u, watch_id=found) for k, u, found in agent.watches],
        missing_watches=[MissingWatch(type=k, url=u) for k, u in agent.missing],
    )


def _repo(header: str | None) -> str | None:
    """The header's repository when it is one line of at most 300 characters, else none."""
    if header is None or len(header) > 300 or any(ord(c) < 32 or ord(c) == 127 for c in header):
        return None
    return header
