"""The contract kinds driftgate watches, registered in the order of the API's enums.

A kind's engine functions import their diff engine when first called (`controller.diffs`):
what reads only the names (the CLI's help, the files' schema) loads no engine. Adding a kind
is one entry here, its engine under `controller/diffs/`, and a fetch adapter in
`controller.checks.engine` only if it is fetched in a new way (docs/architecture.md).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from controller.contracts.base import (
    HTTP_DOCUMENT,
    MCP_SESSION,
    ContractKind,
    ContractKinds,
    DiffContext,
)

if TYPE_CHECKING:
    from controller.diffs.overlap import Overlap
    from controller.diffs.surface import Item
    from controller.model.change import Change


def _grouped(changes: list[Change], context: DiffContext) -> list[Change]:
    from controller.diffs.grouping import group_changes

    return group_changes(changes) if context.grouped else changes


# -- openapi: an OpenAPI (or Swagger) document ---------------------------------------------

# Paths that are a spec document by their own name (discovery's strongest reason).
_SPEC_PATH = re.compile(
    r"(openapi|swagger)[^/]*\.(json|ya?ml)$|/v[23]/api-docs(/|$)|/api-docs(\.json|\.ya?ml)?$|"
    r"/openapi$|/swagger$"
)
_OPENAPI_HINT = re.compile(r"(openapi|swagger|api-docs)")
_SPEC_SUFFIX = (".json", ".yaml", ".yml")


def _openapi_url(path: str, host: str) -> str | None:
    if _SPEC_PATH.search(path):
        return "the path names an OpenAPI or Swagger document"
    if (
        _OPENAPI_HINT.search(path)
        or (path.endswith(_SPEC_SUFFIX) and _OPENAPI_HINT.search(path + host))
        # A YAML document is a spec; REST endpoints answer JSON.
        or path.endswith((".yaml", ".yml"))
    ):
        return "the path names an OpenAPI, Swagger or API-docs document"
    return None


def _is_openapi(document: Any) -> bool:
    return isinstance(document, dict) and ("openapi" in document or "swagger" in document)


def _load_openapi(data: bytes, where: str | None) -> Any:
    from controller.diffs.loader import load_document

    return load_document(data, where, kind="openapi")


def _diff_openapi(base: Any, revision: Any, context: DiffContext) -> list[Change]:
    # The engine groups as it goes (without materialising every per-operation change).
    from controller.diffs.openapi import DiffOptions, diff_openapi

    return diff_openapi(
        base,
        revision,
        resolver=context.resolver,
        base_uri=context.base_uri,
        revision_uri=context.revision_uri,
        options=DiffOptions(
            today=context.today, grouped=context.grouped, check_version=context.check_version
        ),
    )


def _operations(document: Any) -> list[Item]:
    from controller.diffs.surface import operation_items

    return operation_items(document)


def _operations_overlap(base: Any, revision: Any) -> Overlap:
    from controller.diffs.overlap import operations_overlap

    return operations_overlap(base, revision)


OPENAPI = ContractKind(
    name="openapi",
    fetch=HTTP_DOCUMENT,
    load=_load_openapi,
    diff=_diff_openapi,
    noun="operations",
    surface=_operations,
    overlap=_operations_overlap,
    url_hint=_openapi_url,
    looks_like=_is_openapi,
    family="api",
    display_rank=0,
)


# -- rest: a JSON endpoint's answer, one sample per check ----------------------------------


def _load_rest(data: bytes, where: str | None) -> Any:
    # A REST endpoint answers JSON: an HTML page with status 200 is not a sample of it.
    from controller.diffs.loader import load_json

    return load_json(data, where)


def _load_json_file(data: bytes, where: str | None) -> Any:
    from controller.diffs.loader import load_document

    return load_document(data, where, kind="json")


def _diff_rest(base: Any, revision: Any, context: DiffContext) -> list[Change]:
    # A watch sees one sample per check: an optional field absent from one answer is a
    # warning (the lenient `hosted` profile), not breaking.
    from controller.diffs.infer import diff_json_samples

    return _grouped(diff_json_samples(base, revision, profile=context.profile), context)


REST = ContractKind(
    name="rest",
    fetch=HTTP_DOCUMENT,
    load=_load_rest,
    diff=_diff_rest,
    load_file=_load_json_file,
    diff_type="json",
    # The hosted product's `api`: an HTTP API (read as `openapi` where a URL names a spec,
    # `controller.model.watch.hosted_api_type`).
    aliases=("api",),
    family="api",
    words=("json",),
    display_rank=2,
)


# -- mcp: an MCP server's tools, resources and prompts --------------------------------------


def _mcp_url(path: str, host: str) -> str | None:
    if path.endswith(("/mcp", "/sse")):
        return "the path is an MCP endpoint (/mcp, /sse)"
    if host.startswith("mcp."):
        return "the host or path names an MCP server"
    return None


def _is_mcp_snapshot(document: Any) -> bool:
    # A snapshot, a `tools/list` result or its JSON-RPC answer (`controller.diffs.mcp`).
    from controller.diffs.mcp import looks_like_mcp_snapshot

    return looks_like_mcp_snapshot(document)


def _load_mcp(data: bytes, where: str | None) -> Any:
    # A snapshot in a file; a watch's fetch (an MCP session) answers the document itself.
    from controller.diffs.loader import load_document

    return load_document(data, where, kind="mcp")


def _diff_mcp(base: Any, revision: Any, context: DiffContext) -> list[Change]:
    from controller.diffs.mcp import diff_mcp

    return _grouped(diff_mcp(base, revision), context)


def _tools(document: Any) -> list[Item]:
    from controller.diffs.surface import tool_items

    return tool_items(document)


def _tools_overlap(base: Any, revision: Any) -> Overlap:
    from controller.diffs.overlap import tools_overlap

    return tools_overlap(base, revision)


MCP = ContractKind(
    name="mcp",
    fetch=MCP_SESSION,
    load=_load_mcp,
    diff=_diff_mcp,
    noun="tools",
    surface=_tools,
    overlap=_tools_overlap,
    url_hint=_mcp_url,
    looks_like=_is_mcp_snapshot,
    served_as=("text/event-stream",),  # an SSE stream: a server on the SSE transport
    lints_tools=True,
    display_rank=1,
)


# -- a2a_card: an A2A agent's card --------------------------------------------------------

# Where an A2A agent serves its Agent Card (`agent-card.json` since A2A 0.3).
AGENT_CARD_PATHS = ("/.well-known/agent.json", "/.well-known/agent-card.json")


def _card_url(path: str, host: str) -> str | None:
    if path.endswith(AGENT_CARD_PATHS):
        return "the path is an A2A agent card (/.well-known/agent-card.json)"
    return None


def _is_card(document: Any) -> bool:
    from controller.diffs.a2a import looks_like_agent_card

    return looks_like_agent_card(document)


def _load_card(data: bytes, where: str | None) -> Any:
    from controller.diffs.a2a import load_agent_card

    return load_agent_card(data, where)


def _diff_card(base: Any, revision: Any, context: DiffContext) -> list[Change]:
    from controller.diffs.a2a import diff_agent_card

    return _grouped(diff_agent_card(base, revision), context)


def _skills(document: Any) -> list[Item]:
    from controller.diffs.surface import skill_items

    return skill_items(document)


def _skills_overlap(base: Any, revision: Any) -> Overlap:
    from controller.diffs.overlap import skills_overlap

    return skills_overlap(base, revision)


A2A_CARD = ContractKind(
    name="a2a_card",
    fetch=HTTP_DOCUMENT,
    load=_load_card,
    diff=_diff_card,
    noun="skills",
    surface=_skills,
    overlap=_skills_overlap,
    url_hint=_card_url,
    looks_like=_is_card,
    words=("a2a",),
    display_rank=3,
)


CONTRACT_KINDS = ContractKinds([OPENAPI, REST, MCP, A2A_CARD])
