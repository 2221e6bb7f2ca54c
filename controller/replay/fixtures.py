"""Replay fixtures: a structural template of one drift, for testing an agent against a
contract before it ships. Pure: contracts and changes in, files out, the same bytes every time.

The layout (docs/replay.md):

    before.schema.json      the contract before the drift
    after.schema.json       the contract after it
    mock-responses/         one JSON file per operation (OpenAPI) or tool (MCP), shaped by the
                            after contract: the spec's response example where it has one, else
                            values generated deterministically from the schema
    cloud-meta.json         {fixtureId, watchId?, driftEventId?, contentKind, source, createdAt,
                            contractFingerprints: {before, after}, changes, incident?, disclaimer}

Fixtures are structural examples, not certification or endorsement (SPEC.md).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from controller.contracts.base import MCP_SESSION
from controller.contracts.kinds import CONTRACT_KINDS

DISCLAIMER = (
    "Replay fixtures are structural examples derived from contract documents: not a "
    "certification of the vendor's behaviour and not an endorsement."
)
CONTENT_KINDS = ("oss-curated", "hosted-curated", "hosted-stub")
MAX_DEPTH = 6
HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")


@dataclass(frozen=True)
class Fixture:
    id: str
    files: dict[str, str]  # path -> content, sorted by path
    mock_responses: dict[str, Any]  # key (file stem) -> the mock
    meta: dict[str, Any]

    @property
    def digest(self) -> str:
        return digest_of(self.files)


def digest_of(files: dict[str, str]) -> str:
    """sha256 over the files' paths and contents, in path order."""
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(path.encode() + b"\0" + files[path].encode() + b"\0")
    return h.hexdigest()


def dump(value: Any) -> str:
    """The one JSON form of every fixture file: sorted keys, two-space indent, a final newline."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def fingerprint(document: Any) -> str:
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def build_fixture(
    *,
    fixture_id: str,
    watch_type: str,
    before: Any,
    after: Any,
    changes: list[dict[str, Any]],
    content_kind: str,
    source: str,
    created_at: str,
    watch_id: str | None = None,
    drift_event_id: str | None = None,
    incident: dict[str, Any] | None = None,
) -> Fixture:
    # A contract is replayed the way it is fetched: an MCP session's as an MCP server.
    kind = CONTRACT_KINDS.read(watch_type)
    is_session = kind is not None and kind.fetch == MCP_SESSION
    mocks = mcp_mocks(after) if is_session else openapi_mocks(after)
    meta: dict[str, Any] = {
        "fixtureId": fixture_id,
        "contentKind": content_kind,
        "source": source,
        "createdAt": created_at,
        "contractFingerprints": {"before": fingerprint(before), "after": fingerprint(after)},
        "changes": changes,
        "disclaimer": DISCLAIMER,
    }
    if watch_id is not None:
        meta["watchId"] = watch_id
    if drift_event_id is not None:
        meta["driftEventId"] = drift_event_id
    if incident is not None:
        meta["incident"] = incident
    files = {
        "before.schema.json": dump(before),
        "after.schema.json": dump(after),
        "cloud-meta.json": dump(meta),
        **{f"mock-responses/{key}.json": dump(mock) for key, mock in mocks.items()},
    }
    return Fixture(fixture_id, dict(sorted(files.items())), mocks, meta)


# -- OpenAPI ----------------------------------------------------------------------------------


def operation_key(method: str, path: str) -> str:
    """A file stem for an operation: `GET /v1/charges/{id}` -> `get_v1_charges_id`."""
    slug = re.sub(r"[^A-Za-z0-9]+", "_", path).strip("_") or "root"
    return f"{method.lower()}_{slug}"


def openapi_mocks(document: Any) -> dict[str, Any]:
    """One mock per operation: its first success response's example, else one generated from
    its schema (`null` body when it has none)."""
    mocks: dict[str, Any] = {}
    paths = document.get("paths") if isinstance(document, dict) else None
    for path, item in sorted((paths or {}).items()):
        if not isinstance(item, dict):
            continue
        for method in HTTP_METHODS:
            operation = item.get(method)
            if not isinstance(operation, dict):
                continue
            status, media, body = _success(document, operation)
            mocks[operation_key(method, str(path))] = {
                "operationId": operation.get("operationId"),
                "method": method.upper(),
                "path": str(path),
                "status": status,
                "contentType": media,
                "body": body,
            }
    return mocks


def _success(document: Any, operation: dict[str, Any]) -> tuple[int, str | None, Any]:
    responses = operation.get("responses") or {}
    codes = sorted(str(c) for c in responses if str(c).startswith("2")) or ["200"]
    code = codes[0]
    response = _resolve(document, responses.get(code) or responses.get(int(code)) or {})
    content = response.get("content") if isinstance(response, dict) else None
    if not isinstance(content, dict) or not content:
        schema = response.get("schema") if isinstance(response, dict) else None  # Swagger 2
        return (
            int(code),
            "application/json" if schema else None,
            (generate(document, schema) if schema else None),
        )
    media = "application/json" if "application/json" in content else sorted(content)[0]
    entry = _resolve(document, content[media]) or {}
    if "example" in entry:
        return int(code), media, entry["example"]
    examples = entry.get("examples")
    if isinstance(examples, dict) and examples:
        first = _resolve(document, examples[sorted(examples)[0]])
        if isinstance(first, dict) and "value" in first:
            return int(code), media, first["value"]
    schema = entry.get("schema")
    return int(code), media, generate(document, schema) if schema is not None else None


# -- MCP ----------------------------------------------------------------------------------------


def mcp_mocks(snapshot: Any) -> dict[str, Any]:
    """One mock per tool of the after surface: a `tools/call` result whose structured content
    fits the tool's output schema (text otherwise)."""
    tools = snapshot.get("tools") if isinstance(snapshot, dict) else None
    if isinstance(tools, dict):
        tools = [{"name": name, **t} for name, t in tools.items() if isinstance(t, dict)]
    mocks: dict[str, Any] = {}
    for tool in sorted(
        (t for t in tools or [] if isinstance(t, dict)), key=lambda t: str(t.get("name"))
    ):
        name = str(tool.get("name", ""))
        output = tool.get("outputSchema", tool.get("output_schema"))
        result: dict[str, Any] = {"isError": False}
        if isinstance(output, dict):
            structured = generate(output, output)
            result["structuredContent"] = structured
            result["content"] = [{"type": "text", "text": json.dumps(structured, sort_keys=True)}]
        else:
            result["content"] = [{"type": "text", "text": f"mock result of {name}"}]
        key = re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "tool"
        mocks[key] = {"tool": name, "result": result}
    return mocks


# -- values from schemas --------------------------------------------------------------------------

_FORMATS = {
    "date-time": "2026-01-01T00:00:00Z",
    "date": "2026-01-01",
    "time": "00:00:00Z",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
}


def generate(root: Any, schema: Any, depth: int = 0) -> Any:
    """A deterministic value that fits `schema` (local `$ref`s resolved in `root`)."""
    schema = _resolve(root, schema)
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return None
    if "example" in schema:
        return schema["example"]
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return generate(root, schema[key][0], depth + 1)
    if isinstance(schema.get("allOf"), list):
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            value = generate(root, part, depth + 1)
            if isinstance(value, dict):
                merged.update(value)
        return merged
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else None
    if kind == "object":
        properties = schema.get("properties") or {}
        return {
            str(name): generate(root, sub, depth + 1) for name, sub in sorted(properties.items())
        }
    if kind == "array":
        count = max(1, min(3, int(schema.get("minItems") or 1)))
        return [generate(root, schema.get("items") or {}, depth + 1) for _ in range(count)]
    if kind == "string":
        text = _FORMATS.get(str(schema.get("format")), "string")
        length = schema.get("minLength")
        return text + "x" * max(0, int(length) - len(text)) if isinstance(length, int) else text
    if kind in ("integer", "number"):
        low = _number(schema.get("minimum"))
        exclusive = _number(schema.get("exclusiveMinimum"))
        value = low if low is not None else (exclusive + 1 if exclusive is not None else 0)
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return None


def _number(value: Any) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _resolve(root: Any, node: Any) -> Any:
    seen = 0
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and seen < 32:
        ref = node["$ref"]
        if not ref.startswith("#"):
            return {}
        target: Any = root
        for part in ref.lstrip("#/").split("/") if ref != "#" else []:
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, dict) else None
        node = target if target is not None else {}
        seen += 1
    return node
