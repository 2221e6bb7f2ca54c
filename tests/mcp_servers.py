"""Real MCP servers for tests: SDK servers in child processes, and a raw JSON-RPC server.

`SdkServer` runs `python -m tests.mcp_servers <mode> <surface.json>` in a child process: a
low-level server of the official `mcp` SDK on a free 127.0.0.1 port (Streamable HTTP,
stateless JSON-response Streamable HTTP, or the legacy HTTP+SSE transport), or over stdio.
The child reads the surface file (server name, tools, prompts, resources, templates, page
size) on every list call, so a test changes what the server advertises by rewriting it;
which lists exist is fixed when the child starts, because that decides its capabilities.

Mode `oauth` is the Streamable HTTP server behind OAuth, as the SDK builds one (`AuthSettings`,
a `TokenVerifier`): it answers 401 with a `resource_metadata` challenge, serves its RFC 9728
metadata, and verifies each bearer token by RFC 7662 introspection at the `OAuthServer` the
surface file names (`"oauth": {"issuer": ..., "introspection": ...}`), accepting only tokens
issued for its own URL (RFC 8707). `OAuthServer` is that authorization server: a small
http.server in a thread with RFC 8414 metadata, client credentials and refresh token grants
(refresh tokens rotate), short-lived tokens a test can revoke or cut off after a number of
uses (a token that expires mid-way), and a record of every token request.

`RawMcpServer` is a small JSON-RPC server on http.server, in a thread, for what the SDK will
not do: send fields outside the schema, paginate without end, choose an unknown protocol
version, answer garbage. It records every request it sees. It speaks Streamable HTTP with the
initialize handshake, the stateless 2026-07-28 revision (`modern`), or the legacy HTTP+SSE
transport (`legacy_sse`); `raw_stdio_command` runs the same replies over stdio in a child.
`misbehave` makes one JSON-RPC method answer with an `Answer` instead (a body, a stall, a
crash, a redirect loop, a templated reply): the misbehaving vendors of
tests/checks/test_misbehaving_vendors.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
MODES = ("streamable", "stateless-json", "sse", "stdio", "oauth")


def write_surface(path: Path, **surface: Any) -> Path:
    """Write a surface file: name, version, instructions, tools, prompts, resources,
    resource_templates (a key that is absent means the list is not served), page_size."""
    path.write_text(json.dumps(surface), encoding="utf-8")
    return path


# A catalog server with every list: three tools (one destructive), a prompt, a resource and a
# template, two tools a page.

SEARCH = {
    "name": "search",
    "description": "Search the catalog",
    "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    "_meta": {"vendor/flag": True},
}
DELETE = {
    "name": "delete_item",
    "description": "Delete one item",
    "inputSchema": {"type": "object", "properties": {"id": {"type": "integer"}}},
    "annotations": {"destructiveHint": True, "readOnlyHint": False},
}
COUNT = {"name": "count", "inputSchema": {"type": "object"}}


def full_surface(path: Path, **overrides: Any) -> Path:
    """The catalog's surface file at `path`, with `overrides`."""
    surface: dict[str, Any] = {
        "name": "catalog",
        "version": "1.4.0",
        "instructions": "Use search before delete_item.",
        "tools": [SEARCH, DELETE, COUNT],
        "prompts": [{"name": "summarise", "arguments": [{"name": "topic", "required": True}]}],
        "resources": [{"uri": "file:///catalog.json", "name": "catalog"}],
        "resource_templates": [{"uriTemplate": "file:///items/{id}", "name": "item"}],
        "page_size": 2,  # three tools: the fetcher must follow nextCursor
    }
    surface.update(overrides)
    return write_surface(path, **surface)


def stdio_command(surface: Path) -> list[str]:
    """The argv that runs the SDK test server over stdio."""
    # The script path, not `-m`: the fetcher starts it from whatever directory pytest runs in.
    return [sys.executable, str(Path(__file__).resolve()), "stdio", str(surface)]


class SdkServer:
    """`with SdkServer("streamable", surface) as server:` serves `server.url` until exit."""

    def __init__(self, mode: str, surface: Path) -> None:
        assert mode in MODES and mode != "stdio"
        self.mode = mode
        self.surface = surface
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        path = "/sse" if self.mode == "sse" else "/mcp"
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> SdkServer:
        self._log = open(self.surface.with_suffix(f".{self.mode}.log"), "wb")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.mcp_servers", self.mode, str(self.surface)],
            stdout=subprocess.PIPE,
            stderr=self._log,
            cwd=ROOT,
            env=env,
            start_new_session=True,  # stopped with whatever it starts
        )
        try:
            # Generous: a Python process importing the MCP SDK, on a machine that may be busy.
            self.port = self._read_port(timeout=120.0)
        except BaseException:
            self.__exit__()
            raise
        return self

    def _read_port(self, timeout: float) -> int:
        assert self._process is not None and self._process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._process.stdout, selectors.EVENT_READ)
            if not selector.select(timeout):
                raise RuntimeError(f"the {self.mode} test server did not start")
        line = self._process.stdout.readline().decode()
        if not line.startswith("PORT "):
            raise RuntimeError(f"the {self.mode} test server failed: {self.log_text()}")
        return int(line.split()[1])

    def log_text(self) -> str:
        path = self.surface.with_suffix(f".{self.mode}.log")
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def __exit__(self, *exc_info: object) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            if process.stdout is not None:
                process.stdout.close()
        if self._log is not None:
            self._log.close()
            self._log = None


MODERN_VERSION = "2026-07-28"


@dataclass
class Answer:
    """How a misbehaving server answers one JSON-RPC method.

    `kind`: `body` (status, content type and these bytes, whatever was asked), `reply` (a
    JSON-RPC message with the request's id and `message`'s fields), `stall` (headers, then a
    byte every `trickle` seconds, or nothing at all with 0), `crash` (the connection closes,
    or a stdio server exits, without an answer), `redirect` (to the same URL, for ever).
    """

    kind: str
    body: str = ""
    status: int = 200
    content_type: str = "application/json"
    message: dict[str, Any] = field(default_factory=dict)
    trickle: float = 0.0


class RawReplies:
    """The replies of the raw server, whatever carries them (HTTP, SSE, stdio)."""

    def __init__(self) -> None:
        self.protocol_version = "2025-06-18"
        self.capabilities: dict[str, Any] = {"tools": {}}
        self.server_info: dict[str, Any] = {"name": "raw", "version": "1.0.0"}
        self.tools: list[dict[str, Any]] = []
        self.page_size = 0  # 0: one page
        self.endless_cursor = False
        self.initialize_error: dict[str, Any] | None = None
        self.discover_error: dict[str, Any] = {"code": -32601, "message": "Method not found"}
        # Answer `server/discover` at 2026-07-28: the stateless revision, no handshake.
        self.modern = False
        self.misbehave: dict[str, Answer] = {}

    def reply(self, message: dict[str, Any]) -> dict[str, Any]:
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        answer = self.misbehave.get(str(method))
        if answer is not None and answer.kind == "reply":
            return {"jsonrpc": "2.0", "id": request_id, **answer.message}
        if method == "server/discover":
            if self.modern:
                discovered = {
                    "supportedVersions": [MODERN_VERSION],
                    "capabilities": self.capabilities,
                    "serverInfo": self.server_info,
                }
                return {"jsonrpc": "2.0", "id": request_id, "result": discovered}
            return {"jsonrpc": "2.0", "id": request_id, "error": self.discover_error}
        if method == "initialize":
            if self.initialize_error is not None:
                return {"jsonrpc": "2.0", "id": request_id, "error": self.initialize_error}
            result: dict[str, Any] = {
                "protocolVersion": self.protocol_version,
                "capabilities": self.capabilities,
                "serverInfo": self.server_info,
            }
        elif method == "tools/list":
            cursor = int(params.get("cursor") or 0)
            size = self.page_size or len(self.tools) or 1
            result = {"tools": self.tools[cursor : cursor + size]}
            if self.endless_cursor:
                result["nextCursor"] = str(cursor + 1)
            elif cursor + size < len(self.tools):
                result["nextCursor"] = str(cursor + size)
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            return {"jsonrpc": "2.0", "id": request_id, "error": error}
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def config(self) -> dict[str, Any]:
        """The replies' settings as JSON, for a stdio child (`raw_stdio_command`)."""
        names = ("protocol_version", "capabilities", "server_info", "tools", "page_size")
        names += ("endless_cursor", "initialize_error", "discover_error", "modern")
        settings: dict[str, Any] = {name: getattr(self, name) for name in names}
        settings["misbehave"] = {m: asdict(a) for m, a in self.misbehave.items()}
        return settings

    def configure(self, settings: dict[str, Any]) -> None:
        for name, value in settings.items():
            setattr(self, name, value)
        self.misbehave = {m: Answer(**a) for m, a in settings.get("misbehave", {}).items()}


def raw_stdio_command(replies: RawReplies, config: Path) -> list[str]:
    """The argv of a stdio server giving `replies` (written to `config` now)."""
    config.write_text(json.dumps(replies.config()), encoding="utf-8")
    # Isolated and without `site`: the child needs the standard library only, and starts
    # faster (a check starts it twice).
    return [sys.executable, "-I", "-S", str(Path(__file__).resolve()), "raw-stdio", str(config)]


class RawMcpServer(RawReplies):
    """A hand-written Streamable HTTP MCP server (JSON responses) on 127.0.0.1, or with
    `legacy_sse` the 2024-11-05 HTTP+SSE transport (the initialize POST is refused with 405,
    the GET stream names `/messages` where replies are POSTed for the stream).

    `requests` holds (HTTP method, JSON-RPC method or None, headers) for every request.
    Set attributes before fetching to change behaviour.
    """

    def __init__(self, *, legacy_sse: bool = False) -> None:
        super().__init__()
        self.legacy_sse = legacy_sse
        self.answer_every_post: tuple[int, str, bytes] | None = None
        self.delay = 0.0
        # A JSON-RPC method the server stalls in: says nothing (`stall_trickle` 0) or sends
        # headers and then a byte every `stall_trickle` seconds, until the client goes.
        self.stall_method: str | None = None
        self.stall_trickle = 0.0
        self.stopping = threading.Event()
        self.requests: list[tuple[str, str | None, dict[str, str]]] = []
        server = self

        # Imported here: the stdio child runs this file as a script, without the `tests` package.
        from tests.servers import Loopback, QuietHandler, drip

        class Handler(QuietHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                message = json.loads(body or b"null")
                method = message.get("method") if isinstance(message, dict) else None
                server.requests.append(("POST", method, dict(self.headers)))
                if server.delay:
                    time.sleep(server.delay)
                if method is not None and method == server.stall_method:
                    self._stall(server.stall_trickle)
                    return
                if server.answer_every_post is not None:
                    self._send(*server.answer_every_post)
                    return
                if server.legacy_sse:
                    self._post_for_stream(message, method)
                    return
                answer = server.misbehave.get(str(method))
                if answer is not None and answer.kind != "reply":
                    self._misbehave(answer)
                    return
                if "id" not in message:
                    self._send(202, "application/json", b"")
                    return
                reply = server.reply(message)
                headers = {"Mcp-Session-Id": "raw-session-1"} if method == "initialize" else {}
                self._send(200, "application/json", json.dumps(reply).encode(), headers)

            def _post_for_stream(self, message: Any, method: str | None) -> None:
                """Legacy SSE: the POST endpoint accepts; the answer goes on the stream."""
                if not self.path.startswith("/messages"):
                    self._send(405, "text/plain", b"use the event stream")
                    return
                answer = server.misbehave.get(str(method))
                if answer is not None and answer.kind in ("redirect", "crash"):
                    self._misbehave(answer)
                    return
                if answer is not None and answer.kind == "body" and answer.status != 200:
                    self._send(answer.status, answer.content_type, answer.body.encode())
                    return
                self._send(202, "text/plain", b"Accepted")
                if "id" not in message:
                    return
                if answer is not None and answer.kind == "stall":
                    server.events.put(("stall", answer.trickle))
                elif answer is not None and answer.kind == "body":
                    server.events.put(("message", answer.body))
                else:
                    server.events.put(("message", json.dumps(server.reply(message))))

            def do_DELETE(self) -> None:  # noqa: N802
                server.requests.append(("DELETE", None, dict(self.headers)))
                self._send(200, "application/json", b"")

            def do_GET(self) -> None:  # noqa: N802
                server.requests.append(("GET", None, dict(self.headers)))
                if not server.legacy_sse:
                    self._send(405, "text/plain", b"method not allowed")
                    return
                # The newest stream gets the answers: an older one's client has gone.
                events: queue.Queue[tuple[str, Any]] = queue.Queue()
                server.events = events
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self._event("endpoint", "/messages?session=raw-1")
                while not server.stopping.is_set() and server.events is events:
                    try:
                        kind, data = events.get(timeout=0.05)
                    except queue.Empty:
                        continue
                    if kind == "crash":
                        return
                    if kind == "stall":
                        if data:
                            drip(self.wfile, data, server.stopping, b"x")
                        else:
                            server.stopping.wait()
                        return
                    if not self._event("message", data):
                        return

            def _event(self, event: str, data: str) -> bool:
                lines = "".join(f"data: {line}\n" for line in data.split("\n"))
                try:
                    self.wfile.write(f"event: {event}\n{lines}\n".encode())
                    self.wfile.flush()
                except OSError:
                    return False
                return True

            def _misbehave(self, answer: Answer) -> None:
                if answer.kind == "stall":
                    self._stall(answer.trickle)
                elif answer.kind == "crash":
                    if server.legacy_sse:
                        server.events.put(("crash", ""))
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                elif answer.kind == "redirect":
                    self._send(307, "text/plain", b"", {"Location": self.path})
                else:
                    self._send(answer.status, answer.content_type, answer.body.encode())

            def _stall(self, trickle: float) -> None:
                if not trickle:
                    server.stopping.wait()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "1000000")
                self.end_headers()
                drip(self.wfile, trickle, server.stopping)

            def _send(
                self,
                status: int,
                content_type: str,
                body: bytes,
                headers: dict[str, str] | None = None,
            ) -> None:
                self.answer(status, body, content_type, headers)

        self._loopback = Loopback(Handler)
        self.url = self._loopback.url("/mcp")
        # Legacy SSE: what the POST endpoint hands to the open event stream.
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()

    def methods(self) -> list[str | None]:
        return [method for _, method, _ in self.requests]

    def __enter__(self) -> RawMcpServer:
        self._loopback.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stopping.set()
        self._loopback.stop()


# The child process: an SDK low-level server whose lists come from the surface file.


def _build_server(surface_path: Path) -> Any:
    import mcp_types as types
    from mcp.server.lowlevel import Server

    def load() -> dict[str, Any]:
        data: dict[str, Any] = json.loads(surface_path.read_text(encoding="utf-8"))
        return data

    def page(key: str, params: Any) -> tuple[list[Any], str | None]:
        surface = load()
        items = surface.get(key) or []
        size = int(surface.get("page_size") or 0) or max(len(items), 1)
        start = int(getattr(params, "cursor", None) or 0)
        more = str(start + size) if start + size < len(items) else None
        return items[start : start + size], more

    async def list_tools(ctx: Any, params: Any) -> Any:
        items, more = page("tools", params)
        tools = [types.Tool.model_validate(item) for item in items]
        return types.ListToolsResult(tools=tools, next_cursor=more)

    async def list_prompts(ctx: Any, params: Any) -> Any:
        items, more = page("prompts", params)
        prompts = [types.Prompt.model_validate(item) for item in items]
        return types.ListPromptsResult(prompts=prompts, next_cursor=more)

    async def list_resources(ctx: Any, params: Any) -> Any:
        items, more = page("resources", params)
        resources = [types.Resource.model_validate(item) for item in items]
        return types.ListResourcesResult(resources=resources, next_cursor=more)

    async def list_templates(ctx: Any, params: Any) -> Any:
        items, more = page("resource_templates", params)
        templates = [types.ResourceTemplate.model_validate(item) for item in items]
        return types.ListResourceTemplatesResult(resource_templates=templates, next_cursor=more)

    surface = load()
    handlers: dict[str, Any] = {"on_list_tools": list_tools}
    if "prompts" in surface:
        handlers["on_list_prompts"] = list_prompts
    if "resources" in surface:
        handlers["on_list_resources"] = list_resources
    if "resource_templates" in surface:
        handlers["on_list_resource_templates"] = list_templates
    return Server(
        surface.get("name", "driftgate-test"),
        version=surface.get("version", "1.0.0"),
        instructions=surface.get("instructions"),
        **handlers,
    )


def _serve_http(mode: str, surface_path: Path) -> None:
    import uvicorn

    server = _build_server(surface_path)
    if mode == "sse":
        from mcp.server.sse import SseServerTransport
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import Response
        from starlette.routing import Mount, Route

        transport = SseServerTransport("/messages/")

        async def sse_endpoint(request: Request) -> Response:
            async with transport.connect_sse(
                request.scope,
                request.receive,
                request._send,
            ) as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
            return Response()

        app: Any = Starlette(
            routes=[
                Route("/sse", endpoint=sse_endpoint, methods=["GET"]),
                Mount("/messages/", app=transport.handle_post_message),
            ]
        )
    else:
        stateless = mode == "stateless-json"
        app = server.streamable_http_app(
            streamable_http_path="/mcp", json_response=stateless, stateless_http=stateless
        )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    # Listening before the port is announced: the parent's first request just waits.
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
    uvicorn.Server(config).run(sockets=[sock])


def _serve_oauth(surface_path: Path) -> None:
    """The SDK's Streamable HTTP server behind OAuth (mode `oauth`)."""
    import urllib.request
    from urllib.parse import urlencode

    import anyio
    import uvicorn
    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.settings import AuthSettings

    server = _build_server(surface_path)
    oauth = json.loads(surface_path.read_text(encoding="utf-8"))["oauth"]
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    class Introspecting:
        """A `TokenVerifier` that asks the authorization server (RFC 7662)."""

        async def verify_token(self, token: str) -> AccessToken | None:
            def ask() -> Any:
                data = urlencode({"token": token}).encode()
                with opener.open(oauth["introspection"], data=data, timeout=10) as answer:
                    return json.loads(answer.read())

            found = await anyio.to_thread.run_sync(ask)
            if not found.get("active"):
                return None
            return AccessToken(
                token=token,
                client_id=found["client_id"],
                scopes=str(found.get("scope") or "").split(),
                expires_at=found.get("exp"),
                resource=found.get("aud"),
            )

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        auth=AuthSettings(
            issuer_url=oauth["issuer"],
            resource_server_url=f"http://127.0.0.1:{port}/mcp",
            validate_token_resource=True,
            required_scopes=oauth.get("scopes"),
        ),
        token_verifier=Introspecting(),
    )
    print(f"PORT {port}", flush=True)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
    uvicorn.Server(config).run(sockets=[sock])


class OAuthServer:
    """`with OAuthServer({"driftgate": "s3cret"}) as auth:` an authorization server on
    127.0.0.1 for those clients until exit (see the module's docstring)."""

    def __init__(self, clients: dict[str, str], *, expires_in: int = 3600) -> None:
        from tests.servers import Loopback

        self.clients = dict(clients)
        self.expires_in = expires_in
        self.lock = threading.Lock()
        self.tokens: dict[str, dict[str, Any]] = {}
        self.refresh_tokens: dict[str, str] = {}
        # Every token request: grant_type, resource, client_id, how the client authenticated.
        self.requests: list[dict[str, Any]] = []
        self.counter = 0
        # Introspection calls every token inactive: the MCP server refuses even new ones.
        self.refusing = False
        self.loopback = Loopback(_oauth_handler(self))

    @property
    def issuer(self) -> str:
        return self.loopback.url("")

    def __enter__(self) -> OAuthServer:
        self.loopback.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.loopback.stop()

    def refresh_token(self, client_id: str) -> str:
        """A refresh token for `client_id`, as if a person had authorized it once."""
        with self.lock:
            self.counter += 1
            token = f"rt-{self.counter}-{os.urandom(8).hex()}"
            self.refresh_tokens[token] = client_id
            return token

    def revoke_all(self) -> None:
        with self.lock:
            for token in self.tokens.values():
                token["active"] = False

    def cut_off_after(self, uses: int) -> None:
        """Every live token stops working after `uses` more requests (it expires mid-way)."""
        with self.lock:
            for token in self.tokens.values():
                token["uses_left"] = uses

    def grants(self) -> list[str]:
        with self.lock:
            return [r["grant_type"] for r in self.requests]

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "token_endpoint": self.loopback.url("/token"),
            "introspection_endpoint": self.loopback.url("/introspect"),
            "grant_types_supported": ["client_credentials", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "response_types_supported": ["code"],
        }

    def token(self, form: dict[str, str], authorization: str | None) -> tuple[int, dict[str, Any]]:
        """Answer one token request (RFC 6749 4.4, 6; RFC 8707's resource kept as `aud`)."""
        import base64
        from urllib.parse import unquote_plus

        client_id, secret, how = form.get("client_id"), form.get("client_secret"), "post"
        if authorization and authorization.startswith("Basic "):
            pair = base64.b64decode(authorization[6:]).decode()
            user, _, password = pair.partition(":")
            client_id, secret, how = unquote_plus(user), unquote_plus(password), "basic"
        elif secret is None:
            how = "none"
        grant = form.get("grant_type", "")
        with self.lock:
            self.requests.append(
                {
                    "grant_type": grant,
                    "resource": form.get("resource"),
                    "client_id": client_id,
                    "auth": how,
                    "scope": form.get("scope"),
                }
            )
            if client_id not in self.clients or (
                secret is not None and secret != self.clients[client_id]
            ):
                return 401, {"error": "invalid_client", "error_description": "bad client"}
            if grant == "client_credentials":
                if secret is None:
                    return 401, {"error": "invalid_client"}
                refresh = None
            elif grant == "refresh_token":
                old = form.get("refresh_token", "")
                if self.refresh_tokens.pop(old, None) != client_id:
                    return 400, {"error": "invalid_grant", "error_description": "unknown token"}
                self.counter += 1
                refresh = f"rt-{self.counter}-{os.urandom(8).hex()}"  # rotated
                self.refresh_tokens[refresh] = client_id
            else:
                return 400, {"error": "unsupported_grant_type"}
            self.counter += 1
            access = f"at-{self.counter}-{os.urandom(12).hex()}"
            self.tokens[access] = {
                "client_id": client_id,
                "aud": form.get("resource"),
                "scope": form.get("scope") or "",
                "exp": int(time.time()) + self.expires_in,
                "active": True,
                "uses_left": None,
            }
        answer: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
        }
        if refresh is not None:
            answer["refresh_token"] = refresh
        return 200, answer

    def introspect(self, token: str) -> dict[str, Any]:
        with self.lock:
            found = self.tokens.get(token)
            if self.refusing or found is None or not found["active"] or found["exp"] < time.time():
                return {"active": False}
            if found["uses_left"] is not None:
                if found["uses_left"] <= 0:
                    found["active"] = False
                    return {"active": False}
                found["uses_left"] -= 1
            return {
                "active": True,
                "client_id": found["client_id"],
                "scope": found["scope"],
                "exp": found["exp"],
                "aud": found["aud"],
            }


def _oauth_handler(auth: OAuthServer) -> type[Any]:
    from urllib.parse import parse_qsl

    from tests.servers import QuietHandler

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            if self.path == "/.well-known/oauth-authorization-server":
                self.answer(200, json.dumps(auth.metadata()).encode())
            else:
                self.answer(404, b"{}")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            form = dict(parse_qsl(self.rfile.read(length).decode()))
            if self.path == "/token":
                status, body = auth.token(form, self.headers.get("Authorization"))
                self.answer(
                    status, json.dumps(body).encode(), headers={"Cache-Control": "no-store"}
                )
            elif self.path == "/introspect":
                self.answer(200, json.dumps(auth.introspect(form.get("token", ""))).encode())
            else:
                self.answer(404, b"{}")

    return Handler


def _serve_stdio(surface_path: Path) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    server = _build_server(surface_path)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


def _serve_raw_stdio(config: Path) -> None:
    """`RawReplies` over stdio, one JSON-RPC message a line; `misbehave` as over HTTP."""
    replies = RawReplies()
    replies.configure(json.loads(config.read_text(encoding="utf-8")))
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message:
            continue
        answer = replies.misbehave.get(str(message.get("method")))
        if answer is not None and answer.kind == "crash":
            os._exit(3)
        if answer is not None and answer.kind == "stall":
            while True:
                time.sleep(answer.trickle or 60)
                if answer.trickle:
                    out.write(b" ")
                    out.flush()
        data = answer.body if answer is not None and answer.kind == "body" else None
        out.write((data if data is not None else json.dumps(replies.reply(message))).encode())
        out.write(b"\n")
        out.flush()


if __name__ == "__main__":
    mode_arg, surface_arg = sys.argv[1], Path(sys.argv[2])
    if mode_arg == "raw-stdio":
        _serve_raw_stdio(surface_arg)
    elif mode_arg == "stdio":
        _serve_stdio(surface_arg)
    elif mode_arg == "oauth":
        _serve_oauth(surface_arg)
    else:
        _serve_http(mode_arg, surface_arg)
