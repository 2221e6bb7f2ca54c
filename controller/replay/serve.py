"""Serve a replay fixture on 127.0.0.1: the after contract, answering with the mock responses,
so an agent's tests run against tomorrow's contract today (`driftgate replay serve DIR`, the
`driftgate_replay` pytest fixture). See docs/replay.md.

- An MCP fixture becomes an MCP server (the official `mcp` SDK) whose tools are the after
  tools: `tools/list` lists them as the vendor declared them, `tools/call` checks the
  arguments against the tool's input schema (an `isError` result listing what does not fit)
  and answers with the tool's mock result. Streamable HTTP at `/mcp`, or stdio.
- An OpenAPI fixture becomes an HTTP server with the after document's operations: each answers
  with its mock status and body, after `openapi-core` has checked the request (path and query
  parameters, headers, body) against the after document: 400 with the errors when it does not
  fit, 401 when it lacks the credentials the contract asks for (any value is accepted), 404
  for a path and 405 for a method the contract does not have. Paths are served with
  and without the document's server base path (`/v1/charges` and `/charges` for a server
  `https://api.example.com/v1`). Swagger 2.0 documents are answered without request checks
  (openapi-core reads OpenAPI 3.x); the `X-Driftgate-Replay-Validation: off` header says so.

This is an adapter (files in, a loopback server out); the CLI and the pytest plugin are its
shells.
"""

from __future__ import annotations

import copy
import json
import logging
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import jsonschema_rs
from mcp import types
from mcp.server.lowlevel import Server
from openapi_core import Config, OpenAPI
from openapi_core.contrib.starlette import StarletteOpenAPIRequest
from openapi_core.deserializing.exceptions import DeserializeError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from controller import __version__
from controller.errors import ConfigError
from controller.loopback import ThreadedServer
from controller.replay.fixtures import HTTP_METHODS

log = logging.getLogger("driftgate.replay")

Kind = Literal["openapi", "mcp"]
MCP_PATH = "/mcp"
VALIDATION_HEADER = "X-Driftgate-Replay-Validation"


@dataclass(frozen=True)
class Served:
    """A fixture directory, read and checked: what `replay serve` answers with."""

    directory: Path
    kind: Kind
    after: dict[str, Any]
    mocks: dict[str, dict[str, Any]]  # file stem -> mock
    fixture_id: str


def load(directory: Path | str) -> Served:
    """Read a fixture directory (the layout of docs/replay.md); ConfigError naming the file
    when something is missing or not JSON."""
    root = Path(directory)
    if not root.is_dir():
        raise ConfigError(f"{root}: not a directory (write one with `driftgate replay pull`)")
    after = _read_json(root / "after.schema.json")
    if not isinstance(after, dict):
        raise ConfigError(f"{root / 'after.schema.json'}: the after contract is not an object")
    meta_path = root / "cloud-meta.json"
    meta = _read_json(meta_path) if meta_path.exists() else {}
    mocks: dict[str, dict[str, Any]] = {}
    for path in sorted((root / "mock-responses").glob("*.json")):
        mock = _read_json(path)
        if not isinstance(mock, dict):
            raise ConfigError(f"{path}: a mock response is a JSON object")
        mocks[path.stem] = mock
    kind = kind_of(after)
    if kind is None:
        raise ConfigError(
            f"{root / 'after.schema.json'}: neither an OpenAPI document (`paths`) nor an MCP "
            "surface (`tools`): nothing to serve"
        )
    fixture_id = str(meta.get("fixtureId") or root.name) if isinstance(meta, dict) else root.name
    return Served(root, kind, after, mocks, fixture_id)


def kind_of(document: dict[str, Any]) -> Kind | None:
    if any(key in document for key in ("openapi", "swagger", "paths")):
        return "openapi"
    if "tools" in document:
        return "mcp"
    return None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: missing (a fixture directory holds after.schema.json)"
        ) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        raise ConfigError(f"{path}{f':{line}' if line else ''}: not JSON ({exc})") from None


def describe(served: Served) -> str:
    """`openapi, 12 operations` / `mcp, 5 tools`."""
    if served.kind == "mcp":
        return f"mcp, {len(tools_of(served.after))} tools"
    paths = served.after.get("paths") or {}
    count = sum(
        1
        for item in paths.values()
        if isinstance(item, dict)
        for method in HTTP_METHODS
        if isinstance(item.get(method), dict)
    )
    return f"openapi, {count} operations"


def app_for(served: Served) -> Starlette:
    """The ASGI app that serves the fixture over HTTP."""
    return mcp_app(served) if served.kind == "mcp" else openapi_app(served)


# -- MCP ------------------------------------------------------------------------------------------


def tools_of(after: dict[str, Any]) -> list[dict[str, Any]]:
    tools = after.get("tools")
    if isinstance(tools, dict):
        tools = [{"name": name, **t} for name, t in tools.items() if isinstance(t, dict)]
    return [t for t in tools or [] if isinstance(t, dict) and isinstance(t.get("name"), str)]


def _tool(raw: dict[str, Any]) -> types.Tool:
    """The tool as the vendor declared it; the bare name, description and schemas when a
    field of the snapshot does not fit the SDK's model."""
    try:
        return types.Tool.model_validate(raw)
    except ValueError:
        bare = {k: raw[k] for k in ("name", "description", "inputSchema") if k in raw}
        bare.setdefault("inputSchema", {"type": "object"})
        return types.Tool.model_validate(bare)


def mcp_server(served: Served) -> Server[Any]:
    tools = [_tool(raw) for raw in tools_of(served.after)]
    by_name = {tool.name: tool for tool in tools}
    results = {
        str(mock.get("tool")): mock.get("result")
        for mock in served.mocks.values()
        if isinstance(mock.get("result"), dict)
    }
    validators: dict[str, Any] = {}

    def arguments_errors(name: str, arguments: dict[str, Any]) -> list[str]:
        if name not in validators:
            try:
                validators[name] = jsonschema_rs.validator_for(by_name[name].input_schema)
            except (ValueError, jsonschema_rs.ValidationError):
                validators[name] = None  # a schema the validator cannot read: not checked
        validator = validators[name]
        if validator is None:
            return []
        return [
            f"{'/' + '/'.join(map(str, e.instance_path)) if e.instance_path else '/'}: {e.message}"
            for e in validator.iter_errors(arguments)
        ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in by_name:
            return _tool_error(f"unknown tool {params.name!r}: the after contract has no such tool")
        errors = arguments_errors(params.name, dict(params.arguments or {}))
        if errors:
            return _tool_error(
                f"the arguments do not fit {params.name}'s input schema: " + "; ".join(errors)
            )
        result = results.get(params.name) or {
            "content": [{"type": "text", "text": f"mock result of {params.name}"}]
        }
        return types.CallToolResult.model_validate(result)

    return Server(
        f"driftgate replay: {served.fixture_id}",
        version=__version__,
        instructions="A driftgate replay fixture: the after contract, answering with mock results.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _tool_error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def mcp_app(served: Served) -> Starlette:
    return mcp_server(served).streamable_http_app(
        streamable_http_path=MCP_PATH, json_response=True, stateless_http=True
    )


def serve_stdio(served: Served) -> None:
    """Serve an MCP fixture over stdin/stdout until the client closes them."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = mcp_server(served)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


# -- OpenAPI --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    method: str
    template: str
    pattern: re.Pattern[str]
    specificity: tuple[int, int]  # (literal segments, length): the most specific match wins
    mock: dict[str, Any]


@dataclass
class OpenAPIReplay:
    """The operations of an after document, their mocks, and the request checker."""

    operations: list[Operation]
    prefixes: tuple[str, ...]
    checker: Any = None  # openapi_core.OpenAPI, or None (Swagger 2.0 / unreadable)
    why_unchecked: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def find(self, method: str, path: str) -> tuple[Operation | None, list[str]]:
        """The operation for a request, or None and the methods the path has (empty: no path)."""
        for candidate in self._candidates(path):
            matching = [op for op in self.operations if op.pattern.fullmatch(candidate)]
            if not matching:
                continue
            matching.sort(key=lambda op: op.specificity, reverse=True)
            best = [op for op in matching if op.template == matching[0].template]
            for op in best:
                if op.method == method:
                    return op, []
            return None, sorted(op.method for op in best)
        return None, []

    def _candidates(self, path: str) -> Iterable[str]:
        yield path
        for prefix in self.prefixes:
            if path == prefix or path.startswith(prefix + "/"):
                yield path[len(prefix) :] or "/"


def openapi_replay(served: Served) -> OpenAPIReplay:
    document = served.after
    mocks = {
        (str(m.get("method", "")).upper(), str(m.get("path", ""))): m for m in served.mocks.values()
    }
    operations = []
    for template, item in (document.get("paths") or {}).items():
        if not isinstance(item, dict):
            continue
        for method in HTTP_METHODS:
            if not isinstance(item.get(method), dict):
                continue
            mock = mocks.get((method.upper(), str(template))) or {"status": 200, "body": None}
            operations.append(_operation(method.upper(), str(template), mock))
    prefixes = _base_paths(document)
    checker, why = _checker(document, prefixes)
    return OpenAPIReplay(operations, prefixes, checker, why)


def _operation(method: str, template: str, mock: dict[str, Any]) -> Operation:
    parts = re.split(r"(\{[^{}/]+\})", template)
    regex = "".join("[^/]+" if part.startswith("{") else re.escape(part) for part in parts)
    literal = sum(1 for seg in template.split("/") if seg and "{" not in seg)
    return Operation(method, template, re.compile(regex), (literal, len(template)), mock)


def _base_paths(document: dict[str, Any]) -> tuple[str, ...]:
    paths = []
    if isinstance(document.get("basePath"), str):  # Swagger 2.0
        paths.append(document["basePath"])
    for server in document.get("servers") or []:
        if isinstance(server, dict) and isinstance(server.get("url"), str):
            paths.append(urlsplit(server["url"]).path)
    cleaned = {p.rstrip("/") for p in paths if "{" not in p}
    return tuple(sorted((p for p in cleaned if p), key=len, reverse=True))


def _checker(document: dict[str, Any], prefixes: tuple[str, ...]) -> tuple[Any, str | None]:
    """openapi-core's view of the document, its servers made relative (the fixture is served
    on 127.0.0.1, with and without the base path)."""
    if not str(document.get("openapi", "")).startswith("3."):
        return None, "request checks need an OpenAPI 3.x document"

    relative = copy.copy(document)
    relative["servers"] = [{"url": p} for p in prefixes] + [{"url": "/"}]
    try:
        # The vendor's document is served as it is: no spec validation, only request checks.
        return OpenAPI.from_dict(relative, config=Config(spec_validator_cls=None)), None
    except Exception as exc:  # noqa: BLE001 - any unreadable document: served unchecked
        return None, f"openapi-core cannot read the document ({type(exc).__name__})"


def request_errors(replay: OpenAPIReplay, request: Request, body: bytes) -> list[dict[str, Any]]:
    """What in the request does not fit the after document (openapi-core's findings)."""

    with replay._lock:  # the checker caches lazily; one request at a time through it
        result = replay.checker.unmarshal_request(StarletteOpenAPIRequest(request, body))
    return [
        item for error in result.errors if not _unreadable_style(error) for item in _flatten(error)
    ]


def _unreadable_style(error: BaseException) -> bool:
    """A `deepObject` parameter openapi-core cannot deserialize: OpenAPI defines that style
    for objects only, and vendors use it for arrays too (Stripe's `expand[]`). Not checked,
    rather than refusing every request to the operation."""
    cause = error.__cause__
    return isinstance(cause, DeserializeError) and cause.args[:1] == ("deepObject",)


def _flatten(error: BaseException) -> list[dict[str, Any]]:
    where = _where(error)
    cause: BaseException | None = error
    while cause is not None:
        schema_errors = getattr(cause, "schema_errors", None)
        if schema_errors:
            return [
                {
                    "in": where,
                    "path": "/" + "/".join(str(p) for p in e.absolute_path),
                    "message": e.message,
                }
                for e in schema_errors
            ]
        cause = cause.__cause__
    detail = f": {error.__cause__}" if error.__cause__ is not None else ""
    return [{"in": where, "path": "/", "message": f"{error}{detail}"}]


def _where(error: BaseException) -> str:
    name = type(error).__name__
    if "Body" in name or "MediaType" in name:
        return "body"
    if "Security" in name:
        return "security"
    text = str(error).lower()
    for place in ("query", "header", "path", "cookie"):
        if text.startswith(place) or f"{place} parameter" in text:
            return place
    return "request"


def security_schemes(document: dict[str, Any], operation: Operation) -> list[str]:
    """The names of the security schemes an operation accepts (its own, else the document's)."""
    item = (document.get("paths") or {}).get(operation.template) or {}
    declared = (item.get(operation.method.lower()) or {}).get("security")
    if declared is None:
        declared = document.get("security") or []
    return sorted({name for option in declared if isinstance(option, dict) for name in option})


def openapi_app(served: Served) -> Starlette:
    replay = openapi_replay(served)
    if replay.checker is None:
        log.warning(
            "replay.unchecked", extra={"fixture": served.fixture_id, "why": replay.why_unchecked}
        )

    async def handle(request: Request) -> Response:
        body = await request.body()
        operation, allowed = replay.find(request.method, request.url.path)
        if operation is None:
            if allowed:
                return _problem(
                    405,
                    "method_not_allowed",
                    f"{request.url.path} has no {request.method} operation in the after "
                    f"contract (it has {', '.join(allowed)})",
                    headers={"Allow": ", ".join(allowed)},
                )
            return _problem(
                404, "not_found", f"no operation of the after contract matches {request.url.path}"
            )
        headers = {"X-Driftgate-Replay": served.fixture_id}
        if replay.checker is None:
            headers[VALIDATION_HEADER] = "off"
        else:
            errors = request_errors(replay, request, body)
            if any(e["in"] == "security" for e in errors):
                schemes = security_schemes(served.after, operation)
                return _problem(
                    401,
                    "unauthorized",
                    f"{operation.method} {operation.template} needs credentials "
                    f"({' or '.join(schemes) or 'see the contract'}); the replay server "
                    "accepts any value",
                    headers=headers,
                )
            if errors:
                return _problem(
                    400,
                    "validation_error",
                    f"the request does not fit {operation.method} {operation.template} of "
                    "the after contract",
                    details=errors,
                    headers=headers,
                )
        return _mock_response(operation.mock, headers)

    methods = sorted({m.upper() for m in HTTP_METHODS} - {"HEAD"})
    return Starlette(routes=[Route("/{path:path}", handle, methods=methods)])


def _problem(
    status: int,
    code: str,
    message: str,
    *,
    details: Any = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body: dict[str, Any] = {"error": code, "message": message}
    if details is not None:
        body["details"] = details
    return JSONResponse(body, status, headers=headers)


def _mock_response(mock: dict[str, Any], headers: dict[str, str]) -> Response:
    status = int(mock.get("status") or 200)
    media = mock.get("contentType")
    body = mock.get("body")
    if body is None or status in (204, 304):
        return Response(b"", status, headers=headers)
    media = str(media or "application/json")
    if media.endswith("json"):
        content = json.dumps(body, ensure_ascii=False).encode()
    else:
        content = (body if isinstance(body, str) else json.dumps(body)).encode()
    return Response(content, status, headers=headers, media_type=media)


# -- the loopback server ---------------------------------------------------------------------


class ReplayServer(ThreadedServer):
    """Serves a fixture on 127.0.0.1 (`port` 0: any free one) from a daemon thread."""

    def __init__(self, served: Served, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(app_for(served), host, port, name=f"replay server for {served.directory}")
        self.served = served

    @property
    def url(self) -> str:
        """The base URL clients use: the MCP endpoint, or the HTTP API's root."""
        base = f"http://{self.host}:{self.port}"
        return base + MCP_PATH if self.served.kind == "mcp" else base

    def __enter__(self) -> ReplayServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
