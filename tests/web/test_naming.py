"""One naming style in every JSON answer: every route's response model (and request model)
serialises camelCase keys, and no answer hides untyped keys in a free-form object."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

import web.app  # noqa: F401 - registers every route
from web.api import REGISTRY

# Objects whose keys are the caller's own data, stored and served back as sent.
FREE_FORM = {
    "TripIn.metadata",
    "TripOut.metadata",
    # A guard's own trip record (fuseguard's trip log), kept as sent (docs/fleet-guard.md).
    "TripIn.calls",
    "TripIn.evalTrace",
    "TripEventIn.metadata",
    "TripEventIn.calls",
    "TripEventIn.evalTrace",
    "TripOut.guardFields",
    "ProfileIn.schema",  # a consumer profile's JSON Schema: the caller's data
    "ProfileOut.profile",
    "ValidateIn.profile",
    "AskOut.data",  # the figures of an answer, shaped by its intent (docs/portfolio.md)
    "FixtureBody.metadata",  # cloud-meta.json and the mocks: documents, as the files hold them
    "FixtureBody.mockResponses",
    "WatchCreate.body",  # a `rest` watch's request body, as the caller writes it
    # An MCP client configuration as its JSON object (the hosted MCP server sends it so).
    "SuggestIn.mcpJson",
    "SuggestIn.config",
    "CoverageIn.mcpJson",
    "CoverageIn.config",
    "WatchUpdate.body",
    # The hosted agents.yaml sent as JSON: published with the agents.yaml schema (its
    # validation form), read by the same loader as the file in git.
    "A2aCoverageIn.manifest",
}
# Names another service chose: GitHub's install flow appends `installation_id` and
# `setup_action` to the App's setup URL.
FOREIGN = {"CallbackQuery.installation_id", "CallbackQuery.setup_action"}
# The keys of `.driftgate/agents.yaml` (and the hosted `.driftguard/agents.yaml`), which the
# A2A coverage route takes as JSON: the file format's snake_case names (docs/gitops-files.md).
FOREIGN |= {
    "Agent.runtime_webhook",
    "Agent.tool_costs",
    "Policy.auto_resolve_incident",
    "Policy.on_breaking",
    "Policy.on_warning",
    "Policy.require_ack_to_unblock",
}


def _models() -> dict[str, type[BaseModel]]:
    found: dict[str, type[BaseModel]] = {}
    for route in REGISTRY.routes:
        for model in (*route.responses.values(), route.body, route.query):
            if model is not None:
                found[model.__name__] = model
    return found


def _walk(schema: Any, where: str, defs: dict[str, Any], seen: set[str]) -> list[str]:
    """Snake_case property names and untyped objects below `schema`."""
    if not isinstance(schema, dict):
        return []
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name in seen:
            return []
        seen.add(name)
        return _walk(defs[name], name, defs, seen)
    problems = []
    properties = schema.get("properties") or {}
    for key, value in properties.items():
        if "_" in key and f"{where}.{key}" not in FOREIGN:
            problems.append(f"{where}.{key}: not camelCase")
        problems += _walk(value, f"{where}.{key}", defs, seen)
    untyped = schema.get("additionalProperties") in (None, True, {}) and not schema.get(
        "patternProperties"  # keys the caller names (header names), values typed
    )
    free = where.split("[")[0] in FREE_FORM
    if schema.get("type") == "object" and not properties and untyped and not free:
        problems.append(f"{where}: an object with untyped keys")
    for key in ("items", "additionalProperties"):
        problems += _walk(schema.get(key), f"{where}[]", defs, seen)
    for key in ("anyOf", "oneOf", "allOf"):
        for option in schema.get(key) or []:
            problems += _walk(option, where, defs, seen)
    return problems


def test_every_route_model_is_camel_case_and_typed() -> None:
    models = _models()
    assert len(models) > 40  # the walk sees the registry
    problems = []
    for name, model in sorted(models.items()):
        for mode in ("serialization", "validation"):
            schema = model.model_json_schema(by_alias=True, mode=mode)  # type: ignore[arg-type]
            problems += _walk(schema, name, schema.get("$defs", {}), set())
    assert sorted(set(problems)) == []


def test_the_walk_finds_snake_case_and_untyped_objects() -> None:
    class Leaky(BaseModel):
        watch_id: str
        result: dict[str, Any]

    schema = Leaky.model_json_schema(by_alias=True)
    assert _walk(schema, "Leaky", {}, set()) == [
        "Leaky.watch_id: not camelCase",
        "Leaky.result: an object with untyped keys",
    ]
