"""The MCP fetcher against real MCP servers on 127.0.0.1.

SDK servers (the official `mcp` package) cover Streamable HTTP with sessions, stateless
JSON-response Streamable HTTP, the legacy HTTP+SSE transport and stdio, at the stateless
2026-07-28 revision and through the initialize handshake. A raw JSON-RPC server covers what
the SDK will not send: unknown fields, endless pages, unknown versions, non-MCP answers.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.diffs import diff_mcp
from controller.sources.http import FetchError, HttpClient, make_client
from controller.sources.mcp import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    McpLimits,
    fetch_http_mcp_snapshot,
    fetch_mcp_snapshot,
    fetch_stdio_mcp_snapshot,
)
from tests.mcp_servers import (
    COUNT,
    SEARCH,
    Answer,
    RawMcpServer,
    SdkServer,
    full_surface,
    stdio_command,
)
from tests.servers import spec_server


@pytest.fixture(scope="module")
def surface(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_surface(tmp_path_factory.mktemp("mcp") / "surface.json")


@pytest.fixture(scope="module")
def streamable(surface: Path) -> Iterator[SdkServer]:
    with SdkServer("streamable", surface) as server:
        yield server


@pytest.fixture(scope="module")
def stateless(surface: Path) -> Iterator[SdkServer]:
    with SdkServer("stateless-json", surface) as server:
        yield server


@pytest.fixture(scope="module")
def legacy_sse(surface: Path) -> Iterator[SdkServer]:
    with SdkServer("sse", surface) as server:
        yield server


@pytest.fixture
def client() -> Iterator[HttpClient]:
    with make_client(allow_private=True) as client:
        yield client


@pytest.fixture
def raw() -> Iterator[RawMcpServer]:
    with RawMcpServer() as server:
        yield server


def names(items: list[dict[str, Any]] | None) -> list[str]:
    assert items is not None
    return [item["name"] for item in items]


def assert_full_surface(snapshot: dict[str, Any]) -> None:
    assert snapshot["server_info"]["name"] == "catalog"
    assert snapshot["server_info"]["version"] == "1.4.0"
    assert snapshot["instructions"] == "Use search before delete_item."
    assert set(snapshot["capabilities"]) >= {"tools", "prompts", "resources"}
    assert names(snapshot["tools"]) == ["search", "delete_item", "count"]
    assert snapshot["tools"][0]["_meta"] == {"vendor/flag": True}
    assert names(snapshot["prompts"]) == ["summarise"]
    assert snapshot["resources"][0]["uri"] == "file:///catalog.json"
    assert snapshot["resource_templates"][0]["uriTemplate"] == "file:///items/{id}"
    assert "errors" not in snapshot  # a snapshot is complete, or there is none


# Real SDK servers, every transport and era.


def test_streamable_http_uses_the_stateless_revision_when_offered(
    client: HttpClient, streamable: SdkServer
) -> None:
    snapshot = fetch_mcp_snapshot(streamable.url, client=client)
    assert snapshot["protocol_version"] == "2026-07-28"
    assert snapshot["transport"] == "streamable-http"
    assert_full_surface(snapshot)


@pytest.mark.parametrize("version", HANDSHAKE_PROTOCOL_VERSIONS)
def test_handshake_versions_are_negotiated_and_recorded(
    client: HttpClient, streamable: SdkServer, version: str
) -> None:
    snapshot = fetch_http_mcp_snapshot(
        client, streamable.url, discover=False, offer_version=version
    )
    assert snapshot["protocol_version"] == version
    assert_full_surface(snapshot)


@pytest.mark.parametrize(("discover", "version"), [(True, "2026-07-28"), (False, "2025-11-25")])
def test_stateless_json_response_server(
    client: HttpClient, stateless: SdkServer, discover: bool, version: str
) -> None:
    snapshot = fetch_http_mcp_snapshot(client, stateless.url, discover=discover)
    assert snapshot["protocol_version"] == version
    assert snapshot["transport"] == "streamable-http"
    assert_full_surface(snapshot)


def test_legacy_sse_transport_is_detected(client: HttpClient, legacy_sse: SdkServer) -> None:
    snapshot = fetch_mcp_snapshot(legacy_sse.url, client=client)
    assert snapshot["transport"] == "sse"
    assert snapshot["protocol_version"] == "2025-11-25"
    assert_full_surface(snapshot)


def test_a_removed_tool_is_breaking_drift(client: HttpClient, tmp_path: Path) -> None:
    surface = full_surface(tmp_path / "surface.json")
    with SdkServer("streamable", surface) as server:
        before = fetch_mcp_snapshot(server.url, client=client)
        full_surface(surface, tools=[SEARCH, COUNT])  # the vendor drops delete_item
        after = fetch_mcp_snapshot(server.url, client=client)
    assert diff_mcp(before, before) == []
    changes = diff_mcp(before, after)
    assert [(c.rule, c.severity.value, c.location and c.location.tool) for c in changes] == [
        ("tool-removed", "breaking", "delete_item")
    ]


def test_loopback_is_blocked_unless_private_targets_are_allowed(streamable: SdkServer) -> None:
    with make_client(allow_private=False) as guarded:
        with pytest.raises(FetchError) as caught:
            fetch_mcp_snapshot(streamable.url, client=guarded)
    assert caught.value.failure_class == "blocked_target"


def test_size_cap_covers_the_whole_fetch(client: HttpClient, streamable: SdkServer) -> None:
    with pytest.raises(FetchError) as caught:
        fetch_mcp_snapshot(streamable.url, client=client, limits=McpLimits(max_bytes=600))
    assert caught.value.failure_class == "too_large"


# What only a hand-written server sends.


def test_handshake_session_headers_and_capability_gating(
    client: HttpClient, raw: RawMcpServer
) -> None:
    raw.capabilities = {"tools": {"listChanged": True}, "logging": {}}
    raw.tools = [COUNT]
    snapshot = fetch_mcp_snapshot(raw.url, client=client, headers={"X-Api-Key": "k-1"})
    assert snapshot["protocol_version"] == "2025-06-18"
    assert all(headers.get("X-Api-Key") == "k-1" for _, _, headers in raw.requests)
    assert snapshot["prompts"] is None and snapshot["resources"] is None
    # The discover probe is refused, so the handshake follows; nothing unadvertised is asked.
    assert raw.methods() == [
        "server/discover",
        "initialize",
        "notifications/initialized",
        "tools/list",
        None,
    ]
    listing = raw.requests[3][2]
    assert listing["MCP-Protocol-Version"] == "2025-06-18"
    assert listing["Mcp-Session-Id"] == "raw-session-1"
    assert raw.requests[4][0] == "DELETE"
    assert raw.requests[4][2]["Mcp-Session-Id"] == "raw-session-1"


def test_unknown_fields_are_kept_exactly(client: HttpClient, raw: RawMcpServer) -> None:
    odd = {
        "name": "odd",
        "inputSchema": {"type": "object", "x-vendor-keyword": [1, 2]},
        "annotations": {"readOnlyHint": True, "vendorRiskHint": "high"},
        "_meta": {"io.example/owner": "team-a"},
        "x-unknown-top-level": {"nested": None},
    }
    raw.tools = [odd]
    snapshot = fetch_mcp_snapshot(raw.url, client=client)
    assert snapshot["tools"] == [odd]


def test_next_cursor_is_followed(client: HttpClient, raw: RawMcpServer) -> None:
    raw.tools = [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(5)]
    raw.page_size = 2
    snapshot = fetch_mcp_snapshot(raw.url, client=client)
    assert names(snapshot["tools"]) == ["t0", "t1", "t2", "t3", "t4"]
    assert raw.methods().count("tools/list") == 3


def test_endless_pagination_fails_the_fetch(client: HttpClient, raw: RawMcpServer) -> None:
    raw.tools = [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(3)]
    raw.page_size = 1
    raw.endless_cursor = True
    with pytest.raises(FetchError) as caught:
        fetch_mcp_snapshot(raw.url, client=client, limits=McpLimits(max_pages=4))
    # A half-read list would look like removed tools: no snapshot at all.
    assert caught.value.failure_class == "invalid_contract"
    assert "tools/list did not complete: more than 4 pages" in str(caught.value)
    assert raw.methods().count("tools/list") == 4


@pytest.mark.parametrize(
    ("method", "answer", "says"),
    [
        ("tools/list", Answer("reply", message={"error": {"code": -32603, "message": "x"}}), ""),
        ("tools/list", Answer("reply", message={"result": {}}), "the result has no tools list"),
        ("tools/list", Answer("body", "<html></html>", content_type="text/html"), "not a JSON"),
        ("tools/list", Answer("body", '{"jsonrpc": "2.0", "id": 3, "res'), "not a JSON-RPC"),
        ("tools/list", Answer("body", ""), "not a JSON-RPC answer"),
        ("prompts/list", Answer("reply", message={"error": {"code": -32601}}), "-32601"),
        ("resources/list", Answer("reply", message={"result": {"resources": 3}}), "no resources"),
        (
            "resources/templates/list",
            Answer("reply", message={"result": {"resourceTemplates": None}}),
            "no resourceTemplates list",
        ),
    ],
)
def test_a_list_that_does_not_complete_fails_the_fetch(
    client: HttpClient, raw: RawMcpServer, method: str, answer: Answer, says: str
) -> None:
    """Issue 40, point 1: an advertised list that fails is a failed fetch, never a warning
    beside a snapshot without it (that read as `ok`, and became an empty baseline)."""
    raw.capabilities = {"tools": {}, method.split("/")[0]: {}}
    listed = Answer("reply", message={"result": {"resources": []}})
    raw.misbehave = {"resources/list": listed, method: answer}
    with pytest.raises(FetchError) as caught:
        fetch_mcp_snapshot(raw.url, client=client)
    assert caught.value.failure_class == "invalid_contract"
    assert f"{method} did not complete" in str(caught.value) and says in str(caught.value)


def test_templates_not_served_beside_resources_are_none(
    client: HttpClient, raw: RawMcpServer
) -> None:
    """`resources` advertises templates too; a server without them answers "Method not
    found", which is a complete answer: no templates."""
    raw.capabilities = {"tools": {}, "resources": {}}
    raw.misbehave = {"resources/list": Answer("reply", message={"result": {"resources": []}})}
    snapshot = fetch_mcp_snapshot(raw.url, client=client)
    assert snapshot["resources"] == [] and snapshot["resource_templates"] == []


@pytest.mark.parametrize("method", ["initialize", "tools/list"])
def test_a_5000_deep_answer_is_invalid_contract(
    client: HttpClient, raw: RawMcpServer, method: str
) -> None:
    """Issue 40, point 9: the JSON parser's RecursionError is an unreadable contract."""
    raw.misbehave = {method: Answer("body", '{"a": ' * 5000 + "1" + "}" * 5000)}
    with pytest.raises(FetchError) as caught:
        fetch_mcp_snapshot(raw.url, client=client)
    assert caught.value.failure_class == "invalid_contract"
    assert "nests deeper than 128 levels" in str(caught.value)


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ({"protocol_version": "1999-01-01"}, "chose protocol version '1999-01-01'"),
        ({"initialize_error": {"code": -32603, "message": "boom"}}, "refused initialize"),
        ({"answer_every_post": (200, "application/json", b'{"hello": "world"}')}, "not an MCP"),
        ({"answer_every_post": (200, "text/html", b"<html></html>")}, "not an MCP"),
    ],
)
def test_handshake_failures(
    client: HttpClient, raw: RawMcpServer, setup: dict[str, Any], expected: str
) -> None:
    for name, value in setup.items():
        setattr(raw, name, value)
    with pytest.raises(FetchError) as caught:
        fetch_mcp_snapshot(raw.url, client=client)
    assert caught.value.failure_class == "mcp_handshake_failed"
    assert expected in str(caught.value)


def test_a_modern_only_server_without_a_common_version(
    client: HttpClient, raw: RawMcpServer
) -> None:
    raw.discover_error = {
        "code": -32022,
        "message": "Unsupported protocol version",
        "data": {"supported": ["2099-01-01"], "requested": "2026-07-28"},
    }
    with pytest.raises(FetchError) as caught:
        fetch_mcp_snapshot(raw.url, client=client)
    assert caught.value.failure_class == "mcp_handshake_failed"
    assert "speaks only protocol versions 2099-01-01" in str(caught.value)
    assert "initialize" not in raw.methods()


def test_a_plain_http_server_is_not_mcp(client: HttpClient) -> None:
    with spec_server() as server:
        url = server.set("/mcp", "<html><body>docs</body></html>", content_type="text/html")
        with pytest.raises(FetchError) as caught:
            fetch_mcp_snapshot(url, client=client)
    assert caught.value.failure_class == "mcp_handshake_failed"
    assert "is not an MCP server" in str(caught.value)


def test_credentials_never_appear_in_errors(client: HttpClient, raw: RawMcpServer) -> None:
    secret = "s3cret-token-value"
    url = raw.url.replace("http://", f"http://user:{secret}@") + f"?key={secret}"
    raw.initialize_error = {"code": -32001, "message": f"token {secret} is revoked"}
    with pytest.raises(FetchError) as caught:
        fetch_mcp_snapshot(url, client=client, headers={"Authorization": f"Bearer {secret}"})
    assert caught.value.failure_class == "mcp_handshake_failed"
    assert secret not in str(caught.value)
    raw.initialize_error = None
    raw.answer_every_post = (401, "text/plain", b"unauthorized")
    with pytest.raises(FetchError) as caught:
        fetch_mcp_snapshot(url, client=client, headers={"Authorization": f"Bearer {secret}"})
    assert (caught.value.failure_class, caught.value.status) == ("http_error", 401)
    assert secret not in str(caught.value)


def test_slow_servers_time_out(client: HttpClient, raw: RawMcpServer) -> None:
    raw.delay = 1.0
    with pytest.raises(FetchError) as caught:
        fetch_mcp_snapshot(raw.url, client=client, limits=McpLimits(total_timeout=0.3))
    assert caught.value.failure_class == "timeout"


def test_nothing_listening_is_a_connect_error(client: HttpClient, raw: RawMcpServer) -> None:
    url = raw.url
    raw.__exit__()
    with pytest.raises(FetchError) as caught:
        fetch_mcp_snapshot(url, client=client)
    assert caught.value.failure_class == "connect_error"


# Local stdio servers: operator opt-in only.


def test_stdio_is_refused_unless_the_operator_allows_it(client: HttpClient, tmp_path: Path) -> None:
    marker = tmp_path / "spawned"
    command = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    with pytest.raises(FetchError) as caught:
        fetch_mcp_snapshot("stdio:" + shlex.join(command), client=client)
    assert caught.value.failure_class == "blocked_target"
    assert "DRIFTGATE_ALLOW_STDIO_MCP" in str(caught.value)
    with pytest.raises(FetchError):
        fetch_stdio_mcp_snapshot(command, allow_stdio=False)
    assert not marker.exists()


@pytest.mark.parametrize(("discover", "version"), [(True, "2026-07-28"), (False, "2025-11-25")])
def test_stdio_server_when_enabled(
    client: HttpClient, tmp_path: Path, discover: bool, version: str
) -> None:
    surface = full_surface(tmp_path / "surface.json")
    target = "stdio:" + shlex.join(stdio_command(surface))
    snapshot = fetch_mcp_snapshot(target, client=client, allow_stdio=True, discover=discover)
    assert snapshot["transport"] == "stdio"
    assert snapshot["protocol_version"] == version
    assert_full_surface(snapshot)


def test_stdio_command_that_is_not_mcp(tmp_path: Path) -> None:
    command = [sys.executable, "-c", "print('hello')"]
    with pytest.raises(FetchError) as caught:
        fetch_stdio_mcp_snapshot(command, allow_stdio=True)
    assert caught.value.failure_class == "mcp_handshake_failed"
    # stdout carries MCP messages only: a line of anything else ends the fetch at once.
    assert "a message that is not JSON came instead of the answer to initialize" in str(
        caught.value
    )
    exits = [sys.executable, "-c", "pass"]
    with pytest.raises(FetchError) as caught:
        fetch_stdio_mcp_snapshot(exits, allow_stdio=True)
    assert caught.value.failure_class == "mcp_handshake_failed"
    assert "exited with code 0 before answering initialize" in str(caught.value)
    silent = [sys.executable, "-c", "import sys; sys.stdin.read()"]
    limits = McpLimits(probe_timeout=0.3, request_timeout=0.5)
    with pytest.raises(FetchError) as caught:
        fetch_stdio_mcp_snapshot(silent, allow_stdio=True, limits=limits)
    assert caught.value.failure_class == "timeout"
    missing = [str(tmp_path / "no-such-server")]
    with pytest.raises(FetchError) as caught:
        fetch_stdio_mcp_snapshot(missing, allow_stdio=True)
    assert caught.value.failure_class == "connect_error"
