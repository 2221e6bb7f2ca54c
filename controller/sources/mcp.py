"""MCP fetcher: the surface an MCP server advertises, read raw over JSON-RPC.

A snapshot of an MCP server is what it says about itself (server info, protocol version,
capabilities, instructions) plus the results of the list methods it advertises
(`tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`), every page
followed through `nextCursor`. A snapshot is complete or there is none: a list the server
advertises and does not finish (a JSON-RPC error, an answer that is not JSON-RPC, a result
without its list, a cursor that repeats, more than `max_pages` pages) fails the fetch as
`invalid_contract`, so a half-read surface never reads as removed tools or becomes a baseline.
So does an answer nested too deep for the JSON parser. The official SDK client validates
results into models and drops fields it does not know, which would hide drift; this small
JSON-RPC client keeps every item exactly as the server sent it. `controller.diffs.mcp`
compares two snapshots.

How a server is reached, in order:

1. Streamable HTTP at the stateless revision 2026-07-28: a `server/discover` probe carrying
   the per-request `_meta` envelope; each list call carries the envelope again, with the
   `MCP-Protocol-Version` and `Mcp-Method` headers. No session.
2. Streamable HTTP with the `initialize` handshake (2024-11-05 to 2025-11-25), when the
   probe is answered with anything but a discover result naming 2026-07-28: we offer the
   newest version we speak and accept the server's answer if we speak it too, send
   `notifications/initialized`, list with `Mcp-Session-Id` and `MCP-Protocol-Version`, and
   DELETE the session at the end.
3. The deprecated HTTP+SSE transport of 2024-11-05, when the initialize POST is refused with
   a 4xx status that carries no JSON-RPC error (the spec's backwards-compatibility rule):
   GET the event stream, POST to the `endpoint` it names, read the answers from the stream.

Local `stdio` servers (`stdio:<command line>`) speak the same JSON-RPC as newline-delimited
messages on a child process's stdin and stdout. They run commands on this machine, so they
are refused unless the operator allows them (`DRIFTGATE_ALLOW_STDIO_MCP`, passed in by the
caller as `allow_stdio`). HTTP only goes through `controller.sources.http` clients, so the
outbound-address guard applies to every request, redirects included, and the configured
headers reach the origin of the configured URL only: a redirect elsewhere, or a legacy SSE
endpoint on another origin, never gets them.

A fetch has one overall deadline (`McpLimits.total_timeout`), opened with
`controller.sources.deadlines` around the whole session: every connect, every read of every
answer and event stream, and every wait on a stdio child is cut to what is left of it, so a
server that trickles its answers or hangs in a list method ends the fetch as `timeout`.
"""

from __future__ import annotations

import json
import os
import selectors
import shlex
import signal
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from controller import __version__
from controller.diffs.loader import MAX_NESTING
from controller.sources import deadlines
from controller.sources.http import (
    DEFAULT_MAX_BYTES,
    Credentials,
    FetchError,
    HttpClient,
    OpenResponse,
    StreamedRequest,
    bind_credentials,
)

HANDSHAKE_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_PROTOCOL_VERSION = "2026-07-28"
SUPPORTED_PROTOCOL_VERSIONS = (*HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSION)
LATEST_HANDSHAKE_VERSION = HANDSHAKE_PROTOCOL_VERSIONS[-1]
STDIO_PREFIX = "stdio:"
CLIENT_INFO = {"name": "driftgate", "version": __version__}

# (snapshot key, method, result field, capability that advertises it)
LIST_METHODS = (
    ("tools", "tools/list", "tools", "tools"),
    ("prompts", "prompts/list", "prompts", "prompts"),
    ("resources", "resources/list", "resources", "resources"),
    ("resource_templates", "resources/templates/list", "resourceTemplates", "resources"),
)

_META_VERSION = "io.modelcontextprotocol/protocolVersion"
_META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
_META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
_META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
_UNSUPPORTED_PROTOCOL_VERSION = -32022
_METHOD_NOT_FOUND = -32601
# List methods a capability advertises beside its main one: "Method not found" is an empty list.
_OPTIONAL_METHODS = frozenset({"resources/templates/list"})
_MAX_ERROR_BODY = 64 * 1024
# Statuses that say "not allowed" or "not available" rather than "not this transport".
_HTTP_FAILURES = frozenset({401, 403, 407, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class McpLimits:
    """Bounds of one fetch: seconds in all (the deadline of the whole session), seconds per
    request, bytes in all, pages per list."""

    total_timeout: float = 60.0
    request_timeout: float = 30.0
    max_bytes: int = DEFAULT_MAX_BYTES
    max_pages: int = 50
    # A legacy stdio server may ignore the discover probe instead of answering it; too short
    # a wait would also send a slow-starting modern server down the legacy path.
    probe_timeout: float = 10.0


def fetch_mcp_snapshot(
    target: str,
    *,
    client: HttpClient,
    headers: Mapping[str, str] | None = None,
    allow_stdio: bool = False,
    limits: McpLimits | None = None,
    discover: bool = True,
) -> dict[str, Any]:
    """Fetch the surface of the MCP server at `target`, an http(s) URL or `stdio:<command>`.

    `stdio:` targets are refused with `blocked_target` unless `allow_stdio` is true.
    """
    command = parse_stdio_target(target)
    if command is not None:
        return fetch_stdio_mcp_snapshot(
            command, allow_stdio=allow_stdio, limits=limits, discover=discover
        )
    return fetch_http_mcp_snapshot(
        client, target, headers=headers, limits=limits, discover=discover
    )


def parse_stdio_target(target: str) -> list[str] | None:
    """The argv of a `stdio:<shell-quoted command line>` target, or None for other targets."""
    if not target.startswith(STDIO_PREFIX):
        return None
    try:
        return shlex.split(target[len(STDIO_PREFIX) :])
    except ValueError:
        raise FetchError("stdio: the command line has unbalanced quotes", "connect_error") from None


def fetch_http_mcp_snapshot(
    client: HttpClient,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    limits: McpLimits | None = None,
    discover: bool = True,
    offer_version: str = LATEST_HANDSHAKE_VERSION,
) -> dict[str, Any]:
    """Fetch over Streamable HTTP, falling back to the legacy HTTP+SSE transport.

    `discover=False` skips the 2026-07-28 probe; `offer_version` is the version offered
    in `initialize` (the newest we speak unless a caller pins an older one).
    """
    limits = limits or McpLimits()
    label = redact_url(url)
    if label == "<invalid URL>":
        raise FetchError(f"{label}: the URL cannot be parsed", "http_error")
    if urlsplit(url).scheme not in ("http", "https"):
        raise FetchError(f"{label}: only http://, https:// and stdio: MCP targets", "http_error")
    credentials = bind_credentials(url, headers, label=label)
    with deadlines.within(limits.total_timeout) as deadline:
        assert deadline is not None
        budget = _Budget(limits, label, deadline, dict(headers or {}), credentials=credentials)
        return _fetch_http(client, url, budget, discover, offer_version)


def _fetch_http(
    client: HttpClient, url: str, budget: _Budget, discover: bool, offer_version: str
) -> dict[str, Any]:
    limits, label = budget.limits, budget.label
    channel: _Channel = _StreamableChannel(client, url, budget)
    try:
        hello = _probe_discover(channel, limits) if discover else None
        if hello is None:
            try:
                hello = _initialize(channel, offer_version)
            except _Refused as refused:
                if refused.status in _HTTP_FAILURES:
                    raise
                # Spec backwards compatibility: a 4xx to the initialize POST means a server
                # that may still speak the 2024-11-05 HTTP+SSE transport at this URL.
                channel.close()
                channel = _SseChannel.open(client, url, budget, refused)
                hello = _initialize(channel, offer_version)
        return _list_surface(channel, hello, limits)
    except _Refused as refused:
        raise _http_failure(label, refused) from None
    finally:
        channel.close()


def fetch_stdio_mcp_snapshot(
    command: Sequence[str],
    *,
    allow_stdio: bool,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    limits: McpLimits | None = None,
    discover: bool = True,
    offer_version: str = LATEST_HANDSHAKE_VERSION,
) -> dict[str, Any]:
    """Spawn a local stdio MCP server, read its surface, and stop it again.

    Refused (`blocked_target`) unless `allow_stdio`, the operator's setting. The child gets
    this process's environment without `DRIFTGATE_*` variables, plus `env`.
    """
    label = f"stdio:{os.path.basename(command[0])}" if command else "stdio:"
    if not allow_stdio:
        raise FetchError(
            f"{label}: local stdio MCP servers are disabled; "
            "set DRIFTGATE_ALLOW_STDIO_MCP to allow them",
            "blocked_target",
        )
    if not command:
        raise FetchError("stdio: no command to run", "connect_error")
    limits = limits or McpLimits()
    # The controller's own secrets (database URL, secret key) never reach the child.
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTGATE_")}
    child_env.update(env or {})
    with deadlines.within(limits.total_timeout) as deadline:
        assert deadline is not None
        budget = _Budget(limits, label, deadline, dict(env or {}))
        channel = _StdioChannel(list(command), child_env, cwd, budget)
        try:
            hello = _probe_discover(channel, limits) if discover else None
            if hello is None:
                hello = _initialize(channel, offer_version)
            return _list_surface(channel, hello, limits)
        finally:
            channel.close()


def redact_url(url: str) -> str:
    """`url` without user info, query or fragment: the form that may appear in messages."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = host if parts.port is None else f"{host}:{parts.port}"
    except ValueError:
        return "<invalid URL>"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


# Protocol steps shared by every transport.


@dataclass
class _Hello:
    """What the handshake (or discovery) told us about the server."""

    protocol_version: str
    server_info: Any
    capabilities: Any
    instructions: Any
    modern: bool


def _probe_discover(channel: _Channel, limits: McpLimits) -> _Hello | None:
    """Ask `server/discover` at 2026-07-28; None means "use the initialize handshake"."""
    channel.use_version(MODERN_PROTOCOL_VERSION, modern=True)
    try:
        # Only stdio needs a short probe: an HTTP server always answers with a status.
        timeout = limits.probe_timeout if channel.transport == "stdio" else None
        message = channel.request("server/discover", _envelope({}), timeout=timeout)
    except (_Refused, _NotJsonRpc):
        message = None
    result = message.get("result") if message is not None else None
    versions = result.get("supportedVersions") if isinstance(result, dict) else None
    if isinstance(result, dict) and isinstance(versions, list):
        if MODERN_PROTOCOL_VERSION in versions:
            return _Hello(
                MODERN_PROTOCOL_VERSION,
                _discovered_server_info(result),
                result.get("capabilities"),
                result.get("instructions"),
                modern=True,
            )
        # Discover answered but advertised only handshake versions: a legacy advertisement.
        channel.use_version(None, modern=False)
        return None
    error = message.get("error") if message is not None else None
    if isinstance(error, dict) and error.get("code") == _UNSUPPORTED_PROTOCOL_VERSION:
        data = error.get("data")
        supported = data.get("supported") if isinstance(data, dict) else None
        if isinstance(supported, list) and not set(supported) & set(HANDSHAKE_PROTOCOL_VERSIONS):
            raise FetchError(
                f"{channel.budget.label}: the server speaks only protocol versions "
                f"{', '.join(str(v)[:40] for v in supported[:10])}; driftgate speaks "
                f"{', '.join(SUPPORTED_PROTOCOL_VERSIONS)}",
                "mcp_handshake_failed",
            )
    channel.use_version(None, modern=False)
    channel.reset_after_probe()
    return None


def _discovered_server_info(result: dict[str, Any]) -> Any:
    """2026-07-28 stamps the server's identity into the result's `_meta`; drafts of the
    revision had a `serverInfo` field instead, so both are read."""
    if isinstance(result.get("serverInfo"), dict):
        return result["serverInfo"]
    meta = result.get("_meta")
    return meta.get(_META_SERVER_INFO) if isinstance(meta, dict) else None


def _initialize(channel: _Channel, offer_version: str) -> _Hello:
    """Run the initialize handshake; every way it can fail is `mcp_handshake_failed`."""
    label = channel.budget.label
    params = {"protocolVersion": offer_version, "capabilities": {}, "clientInfo": CLIENT_INFO}
    try:
        message = channel.request("initialize", params)
    except _Silent as exc:
        raise FetchError(f"{label}: {exc.detail}", "timeout") from None
    except _NotJsonRpc as exc:
        raise FetchError(
            f"{label} is not an MCP server: {exc.detail}", "mcp_handshake_failed"
        ) from None
    error = message.get("error")
    if error is not None:
        raise FetchError(
            f"{label} refused initialize: {channel.budget.describe_error(error)}",
            "mcp_handshake_failed",
        )
    result = message.get("result")
    if not isinstance(result, dict):
        raise FetchError(f"{label}: initialize returned no result object", "mcp_handshake_failed")
    version = result.get("protocolVersion")
    if version not in HANDSHAKE_PROTOCOL_VERSIONS:
        raise FetchError(
            f"{label}: the server chose protocol version {str(version)[:40]!r}; driftgate "
            f"speaks {', '.join(HANDSHAKE_PROTOCOL_VERSIONS)} with initialize",
            "mcp_handshake_failed",
        )
    assert isinstance(version, str)
    channel.use_version(version, modern=False)
    channel.notify("notifications/initialized")
    return _Hello(
        version,
        result.get("serverInfo"),
        result.get("capabilities"),
        result.get("instructions"),
        modern=False,
    )


def _list_surface(channel: _Channel, hello: _Hello, limits: McpLimits) -> dict[str, Any]:
    """Call the advertised list methods and assemble the snapshot."""
    capabilities = hello.capabilities if isinstance(hello.capabilities, dict) else {}
    snapshot: dict[str, Any] = {
        "server_info": hello.server_info if isinstance(hello.server_info, dict) else {},
        "protocol_version": hello.protocol_version,
        "capabilities": capabilities,
        "instructions": hello.instructions if isinstance(hello.instructions, str) else None,
        "tools": None,
        "prompts": None,
        "resources": None,
        "resource_templates": None,
        "transport": channel.transport,
    }
    for key, method, result_field, capability in LIST_METHODS:
        if capabilities.get(capability) is None:
            continue  # never ask for what the server does not advertise
        snapshot[key] = _list_all(channel, hello, method, result_field, limits.max_pages)
    return snapshot


def _list_all(
    channel: _Channel, hello: _Hello, method: str, result_field: str, max_pages: int
) -> list[Any]:
    """All pages of one list, raw. A list that does not complete fails the fetch
    (`invalid_contract`; `timeout` and `http_error` as the transport says): a half-read list
    would read as removed items, an unread one as a surface without them."""
    label = channel.budget.label
    items: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(max_pages):
        params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
        if hello.modern:
            params = _envelope(params)
        try:
            message = channel.request(method, params)
        except _Refused as refused:
            raise _http_failure(label, refused) from None
        except _Silent as exc:
            raise FetchError(f"{label}: {exc.detail}", "timeout") from None
        except _NotJsonRpc as exc:
            raise _unlisted(label, method, exc.detail) from None
        error = message.get("error")
        if error is not None:
            if method in _OPTIONAL_METHODS and isinstance(error, dict):
                if error.get("code") == _METHOD_NOT_FOUND:
                    # `resources` advertises templates too, which many servers do not serve.
                    return []
            raise _unlisted(label, method, channel.budget.describe_error(error))
        result = message.get("result")
        page = result.get(result_field) if isinstance(result, dict) else None
        if not isinstance(result, dict) or not isinstance(page, list):
            raise _unlisted(label, method, f"the result has no {result_field} list")
        if hello.modern and result.get("resultType", "complete") != "complete":
            kind = str(result.get("resultType"))[:40]
            raise _unlisted(label, method, f"the result is not complete (resultType {kind!r})")
        items.extend(page)
        next_cursor = result.get("nextCursor")
        if next_cursor is None or next_cursor == "":
            return items
        if not isinstance(next_cursor, str) or next_cursor in seen:
            raise _unlisted(label, method, "a nextCursor repeated or is not a string")
        seen.add(next_cursor)
        cursor = next_cursor
    raise _unlisted(label, method, f"more than {max_pages} pages")


def _unlisted(label: str, method: str, why: str) -> FetchError:
    """A list the server advertises and did not finish: the check fails, never a change."""
    return FetchError(f"{label}: {method} did not complete: {why}", "invalid_contract")


def _envelope(params: dict[str, Any]) -> dict[str, Any]:
    """`params` with the 2026-07-28 per-request `_meta` (version, capabilities, client)."""
    meta = {
        _META_VERSION: MODERN_PROTOCOL_VERSION,
        _META_CAPABILITIES: {},
        _META_CLIENT_INFO: CLIENT_INFO,
    }
    return {**params, "_meta": meta}


def _http_failure(label: str, refused: _Refused) -> FetchError:
    return FetchError(
        f"{label} answered HTTP {refused.status} to {refused.method}",
        "http_error",
        status=refused.status,
        challenge=refused.challenge,
    )


# Transports: each sends one JSON-RPC request and returns the matching response message.


class _Refused(Exception):
    """The HTTP request was answered with an error status and no JSON-RPC body; `challenge`
    is its `WWW-Authenticate` header (a 401 names the server's OAuth metadata there)."""

    def __init__(self, status: int, method: str, challenge: str | None = None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.method = method
        self.challenge = challenge


class _NotJsonRpc(Exception):
    """The peer answered, but not with the JSON-RPC response we asked for."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class _Silent(_NotJsonRpc):
    """A stdio server said nothing in time (a probe falls back; anything else times out)."""


@dataclass
class _Budget:
    """The time and bytes one fetch may still spend, and how it names its target."""

    limits: McpLimits
    label: str
    # The fetch's overall deadline (the earlier of `limits.total_timeout` and the caller's).
    deadline: deadlines.Deadline
    secrets: dict[str, str]
    # The secrets as HTTP headers bound to the configured URL's origin (HTTP transports).
    credentials: Credentials | None = None
    spent: int = 0
    ids: Iterator[int] = field(default_factory=lambda: iter(range(1, 1 << 62)))

    def take(self, size: int) -> None:
        self.spent += size
        if self.spent > self.limits.max_bytes:
            raise FetchError(
                f"{self.label}: the MCP server sent more than {self.limits.max_bytes} bytes",
                "too_large",
            )

    def seconds(self, cap: float | None = None) -> float:
        """Seconds the next wait may take; `timeout` once the whole fetch is out of time."""
        left = self.deadline.left()
        if left <= 0:
            raise FetchError(
                f"{self.label}: no complete answer within {self.deadline.seconds:g} s", "timeout"
            )
        return min(left, self.limits.request_timeout if cap is None else cap)

    def describe_error(self, error: Any) -> str:
        """A JSON-RPC error object as short text, with any credential value blanked out."""
        if not isinstance(error, dict):
            return "malformed JSON-RPC error"
        text = f"JSON-RPC error {error.get('code')}: {str(error.get('message'))[:300]}"
        # Servers echo credentials back ("invalid token abc..."): blank the whole header value
        # and each longer piece of it, so "Bearer <token>" is caught either way.
        for value in self.secrets.values():
            for piece in (value, *value.split()):
                if len(piece) >= 8:
                    text = text.replace(piece, "[redacted]")
        return text


class _Channel:
    """One connection to a server over some transport."""

    transport = ""

    def __init__(self, budget: _Budget) -> None:
        self.budget = budget
        self.protocol_version: str | None = None
        self.modern = False

    def use_version(self, version: str | None, *, modern: bool) -> None:
        self.protocol_version = version
        self.modern = modern

    def request(
        self, method: str, params: dict[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any]:
        raise NotImplementedError

    def notify(self, method: str) -> None:
        raise NotImplementedError

    def reset_after_probe(self) -> None:
        """Make the connection fit for `initialize` after a failed discover probe."""

    def close(self) -> None:
        """Release the connection; never raises."""

    def encode(self, method: str, params: dict[str, Any] | None) -> tuple[int | None, bytes]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        request_id = None
        if params is not None:
            request_id = next(self.budget.ids)
            message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        return request_id, json.dumps(message, separators=(",", ":")).encode()


class _StreamableChannel(_Channel):
    """Streamable HTTP: one POST per message, answered with JSON or an event stream."""

    transport = "streamable-http"

    def __init__(self, client: HttpClient, url: str, budget: _Budget) -> None:
        super().__init__(budget)
        self.client = client
        self.url = url
        self.session_id: str | None = None

    def headers(self, method: str) -> dict[str, str]:
        headers: dict[str, str] = {}
        headers["Accept"] = "application/json, text/event-stream"
        headers["Content-Type"] = "application/json"
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        if self.modern:
            headers["Mcp-Method"] = method
        return headers

    def request(
        self, method: str, params: dict[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any]:
        request_id, body = self.encode(method, params)
        with self._post(method, body, timeout) as response:
            if method == "initialize" and response.status < 300:
                self.session_id = response.header("mcp-session-id")
            return _read_answer(response, request_id, method, self.budget)

    def _post(self, method: str, body: bytes, timeout: float | None = None) -> StreamedRequest:
        """One JSON-RPC message POSTed to the endpoint, within the call's budget."""
        return StreamedRequest(
            self.client,
            "POST",
            self.url,
            headers=self.headers(method),
            credentials=self.budget.credentials,
            content=body,
            timeout=self.budget.seconds(timeout),
            label=self.budget.label,
        )

    def notify(self, method: str) -> None:
        _, body = self.encode(method, None)
        with self._post(method, body) as response:
            # A server that rejects the notification will fail the next request visibly.
            _read_body(response, self.budget, _MAX_ERROR_BODY)

    def close(self) -> None:
        if self.session_id is None:
            return
        headers = self.headers("")
        headers.pop("Mcp-Method", None)
        session_id, self.session_id = self.session_id, None
        headers["Mcp-Session-Id"] = session_id
        try:
            with StreamedRequest(
                self.client,
                "DELETE",
                self.url,
                headers=headers,
                credentials=self.budget.credentials,
                timeout=self.budget.seconds(2.0),
                label=self.budget.label,
            ):
                pass  # 405 means the server keeps sessions until they expire: fine
        except FetchError:
            pass  # the snapshot is complete; a session we could not end expires on its own


class _SseChannel(_Channel):
    """The 2024-11-05 HTTP+SSE transport: answers arrive on a long-lived GET event stream."""

    transport = "sse"

    def __init__(self, client: HttpClient, budget: _Budget) -> None:
        super().__init__(budget)
        self.client = client
        self.stream: StreamedRequest | None = None
        self.events: Iterator[tuple[str, str]] = iter(())
        self.endpoint = ""

    @classmethod
    def open(cls, client: HttpClient, url: str, budget: _Budget, refused: _Refused) -> _SseChannel:
        """GET the event stream and read the `endpoint` event that names where to POST."""
        channel = cls(client, budget)
        headers = {"Accept": "text/event-stream"}
        stream = StreamedRequest(
            client,
            "GET",
            url,
            headers=headers,
            credentials=budget.credentials,
            timeout=budget.seconds(),
            label=budget.label,
        )
        response = stream.__enter__()
        channel.stream = stream
        try:
            if response.status in _HTTP_FAILURES:
                challenge = response.header("www-authenticate")
                raise _http_failure(budget.label, _Refused(response.status, "GET", challenge))
            if response.status != 200 or _content_type(response) != "text/event-stream":
                raise FetchError(
                    f"{budget.label} is not an MCP server: POST initialize answered HTTP "
                    f"{refused.status} and GET answered HTTP {response.status} "
                    f"({_content_type(response) or 'no content type'})",
                    "mcp_handshake_failed",
                )
            channel.events = _sse_events(response.iter_bytes(), budget)
            for event, data in channel.events:
                if event == "endpoint":
                    channel.endpoint = urljoin(response.url, data.strip())
                    break
            else:
                raise FetchError(
                    f"{budget.label}: the event stream ended without an endpoint event",
                    "mcp_handshake_failed",
                )
            if _origin(channel.endpoint) != _origin(response.url):
                # Our headers may carry credentials: never send them to another origin.
                raise FetchError(
                    f"{budget.label}: the endpoint event names another origin",
                    "mcp_handshake_failed",
                )
        except BaseException:
            channel.close()
            raise
        return channel

    def post(self, method: str, body: bytes) -> None:
        headers = {"Content-Type": "application/json"}
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        with StreamedRequest(
            self.client,
            "POST",
            self.endpoint,
            headers=headers,
            credentials=self.budget.credentials,
            content=body,
            timeout=self.budget.seconds(),
            label=self.budget.label,
        ) as response:
            _read_body(response, self.budget, _MAX_ERROR_BODY)
            if response.status >= 400:
                raise _Refused(response.status, method, response.header("www-authenticate"))

    def request(
        self, method: str, params: dict[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any]:
        request_id, body = self.encode(method, params)
        self.post(method, body)
        for event, data in self.events:
            if event == "message":
                answer = _match_answer(_message(data, self.budget, method), request_id)
                if answer is not None:
                    return answer
        raise _NotJsonRpc(f"the event stream ended before the answer to {method}")

    def notify(self, method: str) -> None:
        _, body = self.encode(method, None)
        self.post(method, body)

    def close(self) -> None:
        if self.stream is not None:
            stream, self.stream = self.stream, None
            stream.__exit__(None, None, None)


class _StdioChannel(_Channel):
    """A child process speaking newline-delimited JSON-RPC on stdin and stdout."""

    transport = "stdio"

    def __init__(
        self, command: list[str], env: dict[str, str], cwd: str | None, budget: _Budget
    ) -> None:
        super().__init__(budget)
        self.command = command
        self.env = env
        self.cwd = cwd
        self.process: subprocess.Popen[bytes] | None = None
        self.buffer = bytearray()
        self.scanned = 0
        self.start()

    def start(self) -> None:
        self.buffer = bytearray()
        self.scanned = 0
        try:
            self.process = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                # stderr may echo tokens from the environment: it is never read or stored.
                stderr=subprocess.DEVNULL,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,  # so close() can stop the server and its children
            )
        except OSError as exc:
            raise FetchError(
                f"{self.budget.label}: cannot start the command: {exc.strerror}", "connect_error"
            ) from None

    def request(
        self, method: str, params: dict[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any]:
        request_id, body = self.encode(method, params)
        self.write(body, method)
        wait_until = time.monotonic() + self.budget.seconds(timeout)
        while True:
            line = self.read_line(wait_until, method).decode("utf-8", "replace")
            if not line.strip():
                continue  # a blank line carries no message
            answer = _match_answer(_message(line, self.budget, method), request_id)
            if answer is not None:
                return answer

    def notify(self, method: str) -> None:
        _, body = self.encode(method, None)
        self.write(body, method)

    def write(self, body: bytes, method: str) -> None:
        assert self.process is not None and self.process.stdin is not None
        try:
            self.process.stdin.write(body + b"\n")
            self.process.stdin.flush()
        except OSError:
            raise _NotJsonRpc(self.exited(method)) from None

    def read_line(self, wait_until: float, method: str) -> bytes:
        assert self.process is not None and self.process.stdout is not None
        stdout: IO[bytes] = self.process.stdout
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while (end := self.buffer.find(b"\n", self.scanned)) < 0:
                self.scanned = len(self.buffer)
                left = min(wait_until - time.monotonic(), self.budget.seconds())
                if left <= 0 or not selector.select(left):
                    if self.budget.deadline.left() <= 0:
                        self.budget.seconds()  # raises the fetch's timeout
                    raise _Silent(f"no answer to {method} in time")
                chunk = os.read(stdout.fileno(), 65536)
                if not chunk:
                    raise _NotJsonRpc(self.exited(method))
                self.budget.take(len(chunk))
                self.buffer += chunk
        line = bytes(self.buffer[:end])
        del self.buffer[: end + 1]
        self.scanned = 0
        return line

    def exited(self, method: str) -> str:
        assert self.process is not None
        try:
            code = self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return f"the server closed its output before answering {method}"
        return f"the server exited with code {code} before answering {method}"

    def reset_after_probe(self) -> None:
        # A legacy server may be left in an undefined state by a request before initialize.
        self.close()
        self.start()

    def close(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.stdin is not None:
            try:
                process.stdin.close()  # end of input: a well-behaved server exits now
            except OSError:
                pass
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                try:
                    os.killpg(process.pid, sig)
                except OSError:
                    pass
            try:
                process.wait(timeout=1.0 if sig is None else 2.0)
                break
            except subprocess.TimeoutExpired:
                continue
        if process.stdout is not None:
            process.stdout.close()


# Reading answers.


def _read_answer(
    response: OpenResponse, request_id: int | None, method: str, budget: _Budget
) -> dict[str, Any]:
    """The JSON-RPC response to `request_id` in a Streamable HTTP answer (JSON or events)."""
    content_type = _content_type(response)
    if response.status >= 400:
        body = _read_body(response, budget, _MAX_ERROR_BODY)
        # A modern server answers errors with a status and a JSON-RPC body: that body wins.
        answer = _match_answer(_parse_json(body.decode("utf-8", "replace"), budget), request_id)
        if answer is not None and "error" in answer:
            return answer
        raise _Refused(response.status, method, response.header("www-authenticate"))
    if content_type == "text/event-stream":
        for event, data in _sse_events(response.iter_bytes(), budget):
            if event == "message":
                answer = _match_answer(_message(data, budget, method), request_id)
                if answer is not None:
                    return answer
        raise _NotJsonRpc(f"the event stream ended before the answer to {method}")
    body = _read_body(response, budget, budget.limits.max_bytes)
    answer = _match_answer(_parse_json(body.decode("utf-8", "replace"), budget), request_id)
    if answer is None:
        raise _NotJsonRpc(
            f"HTTP {response.status} ({content_type or 'no content type'}) "
            f"is not a JSON-RPC answer to {method}"
        )
    return answer


def _read_body(response: OpenResponse, budget: _Budget, cap: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        budget.take(len(chunk))
        budget.seconds()
        size += len(chunk)
        chunks.append(chunk)
        if size >= cap:
            break
    return b"".join(chunks)


def _sse_events(chunks: Iterable[bytes], budget: _Budget) -> Iterator[tuple[str, str]]:
    """Server-sent events as (event type, data); the size cap and deadline hold per chunk."""
    buffer = bytearray()
    event = ""
    data: list[str] = []
    for chunk in chunks:
        budget.take(len(chunk))
        budget.seconds()
        buffer += chunk
        start = 0
        while (end := buffer.find(b"\n", start)) >= 0:
            line = bytes(buffer[start:end]).rstrip(b"\r").decode("utf-8", "replace")
            start = end + 1
            if not line:
                if data:
                    yield event or "message", "\n".join(data)
                event, data = "", []
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
        del buffer[:start]


def _parse_json(text: str, budget: _Budget) -> Any:
    """`text` as JSON, or None when it is not JSON; an answer nested deeper than the parser
    goes is a contract driftgate does not read (`invalid_contract`), not a crash."""
    try:
        return json.loads(text)
    except ValueError:
        return None
    except RecursionError:
        raise FetchError(
            f"{budget.label}: an answer nests deeper than {MAX_NESTING} levels of objects "
            "and arrays; driftgate does not read contracts nested this deep",
            "invalid_contract",
        ) from None


def _message(text: str, budget: _Budget, method: str) -> Any:
    """A message of a stream (an SSE `message` event, a stdio line) as JSON: a peer that
    sends anything else there breaks the protocol, and the fetch ends now rather than at its
    deadline."""
    message = _parse_json(text, budget)
    if message is None and text.strip() != "null":
        raise _NotJsonRpc(f"a message that is not JSON came instead of the answer to {method}")
    return message


def _match_answer(message: Any, request_id: int | None) -> dict[str, Any] | None:
    """The response to `request_id` in a message or a batch, or None."""
    candidates = message if isinstance(message, list) else [message]
    for candidate in candidates:
        if (
            isinstance(candidate, dict)
            and candidate.get("id") == request_id
            and ("result" in candidate or "error" in candidate)
        ):
            return candidate
    return None


def _content_type(response: OpenResponse) -> str:
    return (response.header("content-type") or "").split(";", 1)[0].strip().lower()


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname, parts.port
