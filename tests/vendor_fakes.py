"""Misbehaving vendors for every watch type and MCP transport: the registry behind
tests/checks/test_misbehaving_vendors.py.

A vendor fake serves a good contract (`serve_good`) and then one misbehaviour of
`MISBEHAVIOURS` (`misbehave`). Each fake says which features it speaks (`http`, `yaml`,
`jsonrpc`, `handshake`, `fields`) and each misbehaviour which it needs, so a misbehaviour that
does not apply to a type (a JSON-RPC error for `openapi`) is skipped by construction. A new
watch type or MCP transport joins the matrix by adding its fake to `VENDOR_FAKES`; a test
fails while a watch type of `controller.model.watch.WatchType`, or a transport of the MCP
client, has none.

The fakes reuse the loopback servers of tests/servers.py (`SpecServer`) and
tests/mcp_servers.py (`RawMcpServer`, its legacy SSE mode and its raw stdio child).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from joserfc.jwk import ECKey

from tests.cardtrust.conftest import card, jwks, sign
from tests.mcp_servers import Answer, RawMcpServer, RawReplies, raw_stdio_command
from tests.servers import SpecServer
from tests.specs import as_json, charges_spec

# A byte limit the matrix configures (`fetch_max_bytes`), and a body four times over it.
BYTE_LIMIT = 64 * 1024
DEPTH = 5000
TRICKLE = 0.2

TOO_LARGE = json.dumps({"padding": "x" * (4 * BYTE_LIMIT)})
DEEP_JSON = '{"a": ' * DEPTH + "1" + "}" * DEPTH
DEEP_YAML = "openapi: 3.0.3\npaths: " + "[" * DEPTH + "]" * DEPTH + "\n"
HTML = "<!doctype html><html><body><form>Sign in</form></body></html>"
INVALID_JSON = '{"openapi": "3.0.3", "paths": {"/charges": [}'
INVALID_YAML = "openapi: 3.0.3\npaths:\n  /charges: [get, {post\n  - : :\n"


@dataclass(frozen=True)
class Misbehaviour:
    """One way a vendor misbehaves, and the features a fake must speak for it to apply."""

    name: str
    needs: frozenset[str] = frozenset()


MISBEHAVIOURS = (
    Misbehaviour("deep_json"),
    Misbehaviour("deep_yaml", frozenset({"yaml"})),
    Misbehaviour("too_large"),
    Misbehaviour("trickle"),
    Misbehaviour("hang"),
    Misbehaviour("html"),
    Misbehaviour("redirect_loop", frozenset({"http"})),
    Misbehaviour("http_500", frozenset({"http"})),
    Misbehaviour("invalid_json"),
    Misbehaviour("invalid_yaml", frozenset({"yaml"})),
    Misbehaviour("truncated"),
    Misbehaviour("empty"),
    Misbehaviour("jsonrpc_error", frozenset({"jsonrpc"})),
    Misbehaviour("endless_pagination", frozenset({"jsonrpc"})),
    Misbehaviour("crash_mid_handshake", frozenset({"handshake"})),
    Misbehaviour("deep_handshake", frozenset({"handshake"})),
    Misbehaviour("missing_result_fields", frozenset({"fields"})),
)


class VendorFake(Protocol):
    watch_type: str
    transport: str | None
    speaks: frozenset[str]

    def target(self) -> str:
        """What the watch's URL is (an http(s) URL, or a `stdio:` target)."""
        ...

    def serve_good(self) -> None: ...

    def misbehave(self, name: str) -> None: ...

    def watch_fields(self) -> dict[str, Any]:
        """What the watch on the fake asks beside its URL and type (trusted keys...)."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class FakeEntry:
    """A registered fake: its watch type, its MCP transport (None for other types), the
    features it speaks, how to start one (`tmp` a directory of its own), and the fetch
    deadline of a check of it misbehaving (short: a hang costs that much)."""

    watch_type: str
    transport: str | None
    speaks: frozenset[str]
    start: Callable[[SpecServer, Path], VendorFake]
    deadline: float = 0.5

    def applies(self, misbehaviour: Misbehaviour) -> bool:
        return misbehaviour.needs <= self.speaks


# Documents over HTTP: openapi, rest, a2a_card.


def agent_card() -> str:
    skill = {"id": "refund", "name": "Refund", "inputSchema": {"type": "object"}}
    return json.dumps(
        {
            "protocolVersion": "0.3.0",
            "name": "Billing agent",
            "url": "https://billing.example/a2a",
            "version": "1.0.0",
            "capabilities": {"streaming": True},
            "defaultInputModes": ["application/json"],
            "defaultOutputModes": ["application/json"],
            "skills": [skill],
        }
    )


class DocumentVendor:
    """A contract document served by a `SpecServer` route of its own."""

    transport = None

    def __init__(
        self,
        watch_type: str,
        speaks: frozenset[str],
        server: SpecServer,
        path: str,
        good: str,
        missing_fields: str,
    ) -> None:
        self.watch_type, self.speaks = watch_type, speaks
        self.server, self.path, self.good, self.missing_fields = server, path, good, missing_fields

    def target(self) -> str:
        return self.server.url(self.path)

    def serve_good(self) -> None:
        self.server.set(self.path, self.good)

    def watch_fields(self) -> dict[str, Any]:
        return {}

    def misbehave(self, name: str) -> None:
        serve = self.server.set
        path = self.path
        if name == "redirect_loop":
            serve(path, "", status=302, headers={"Location": path}, etag=False)
        elif name == "http_500":
            serve(path, '{"error": "internal"}', status=500)
        elif name == "trickle":
            serve(path, "", trickle=TRICKLE)
        elif name == "hang":
            serve(path, "", hang=True)
        elif name in ("deep_yaml", "invalid_yaml"):
            body = DEEP_YAML if name == "deep_yaml" else INVALID_YAML
            serve(path, body, content_type="application/yaml")
        elif name == "html":
            serve(path, HTML, content_type="text/html")
        else:
            serve(path, self._body(name))

    def _body(self, name: str) -> str:
        bodies = {
            "deep_json": DEEP_JSON,
            "too_large": TOO_LARGE,
            "invalid_json": INVALID_JSON,
            "truncated": self.good[: len(self.good) // 2],
            "empty": "",
            "missing_result_fields": self.missing_fields,
        }
        return bodies[name]

    def close(self) -> None:
        """The routes end with the server."""


class KeySetVendor(DocumentVendor):
    """A signed agent card whose watch trusts the keys at a JWKS URL, and that key set
    misbehaving (the card itself stays good): a check that cannot read the keys it must judge
    the card by fails; a key set never reads as "no keys, so no verdict"."""

    def __init__(self, server: SpecServer, path: str) -> None:
        key = ECKey.generate_key("P-256", parameters={"kid": "owner"})
        super().__init__("a2a_card", KEY_SET_FEATURES, server, f"{path}/keys", "", "")
        self.good = jwks(key).decode()
        self.card_path = f"{path}/card"
        self.card = json.dumps(sign(card(), key))

    def target(self) -> str:
        return self.server.url(self.card_path)

    def watch_fields(self) -> dict[str, Any]:
        return {"cardKeys": {"jwksUrl": self.server.url(self.path)}}

    def serve_good(self) -> None:
        self.server.set(self.card_path, self.card)
        super().serve_good()

    def misbehave(self, name: str) -> None:
        self.server.set(self.card_path, self.card)
        super().misbehave(name)


KEY_SET_FEATURES = frozenset({"http"})


def _document_entry(
    watch_type: str, speaks: set[str], good: Callable[[], str], missing_fields: str = ""
) -> FakeEntry:
    features = frozenset(speaks | {"http"})

    def start(server: SpecServer, tmp: Path) -> VendorFake:
        # A path of its own per fake, named without `.json` so YAML is read where it may be.
        path = f"/{watch_type}/{tmp.name}/contract"
        return DocumentVendor(watch_type, features, server, path, good(), missing_fields)

    return FakeEntry(watch_type, None, features, start)


# MCP servers: one raw server per transport.

TOOLS = [{"name": "search", "inputSchema": {"type": "object"}}]
JSONRPC_ERROR = {"error": {"code": -32603, "message": "tools/list failed"}}
CRASH = Answer("crash")


def mcp_answer(name: str) -> Answer | None:
    """The answer to `tools/list` of a server misbehaving as `name` (None: not an answer)."""
    answers = {
        "deep_json": Answer("body", DEEP_JSON),
        "too_large": Answer("body", TOO_LARGE),
        "trickle": Answer("stall", trickle=TRICKLE),
        "hang": Answer("stall"),
        "html": Answer("body", HTML, content_type="text/html"),
        "redirect_loop": Answer("redirect"),
        "http_500": Answer("body", "internal error", status=500, content_type="text/plain"),
        "invalid_json": Answer("body", INVALID_JSON),
        "truncated": Answer("body", '{"jsonrpc": "2.0", "id": 2, "result": {"tools": [{"na'),
        "empty": Answer("body", ""),
        "jsonrpc_error": Answer("reply", message=JSONRPC_ERROR),
        "missing_result_fields": Answer("reply", message={"result": {}}),
    }
    return answers.get(name)


class McpVendor:
    """A raw MCP server over one transport; misbehaviours hit `tools/list`, the handshake
    (`initialize`, or `server/discover` at 2026-07-28) or the pages."""

    watch_type = "mcp"

    def __init__(self, transport: str, speaks: frozenset[str], replies: RawReplies) -> None:
        self.transport, self.speaks, self.replies = transport, speaks, replies
        self.handshake = "server/discover" if replies.modern else "initialize"

    def target(self) -> str:
        raise NotImplementedError

    def serve_good(self) -> None:
        self.replies.tools = list(TOOLS)
        self.replies.misbehave = {}
        self.replies.endless_cursor = False

    def misbehave(self, name: str) -> None:
        self.serve_good()
        if name == "endless_pagination":
            self.replies.endless_cursor = True
        elif name == "crash_mid_handshake":
            self.replies.misbehave = {self.handshake: CRASH}
        elif name == "deep_handshake":
            self.replies.misbehave = {self.handshake: Answer("body", DEEP_JSON)}
        else:
            answer = mcp_answer(name)
            assert answer is not None, name
            self.replies.misbehave = {"tools/list": answer}

    def watch_fields(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        """Nothing of its own to stop."""


class HttpMcpVendor(McpVendor):
    def __init__(self, transport: str, speaks: frozenset[str], server: RawMcpServer) -> None:
        super().__init__(transport, speaks, server)
        self.server = server.__enter__()

    def target(self) -> str:
        return self.server.url

    def close(self) -> None:
        self.server.__exit__()


class StdioMcpVendor(McpVendor):
    """A raw stdio server: each check starts the child, which reads its replies from a file
    written when the watch's target is asked for."""

    def __init__(self, speaks: frozenset[str], tmp: Path) -> None:
        super().__init__("stdio", speaks, RawReplies())
        self.config = tmp / "stdio-replies.json"

    def target(self) -> str:
        return "stdio:" + " ".join(raw_stdio_command(self.replies, self.config))

    def serve_good(self) -> None:
        super().serve_good()
        raw_stdio_command(self.replies, self.config)

    def misbehave(self, name: str) -> None:
        super().misbehave(name)
        raw_stdio_command(self.replies, self.config)


MCP_FEATURES = frozenset({"jsonrpc", "handshake", "fields"})


def _http_mcp_entry(transport: str, *, modern: bool = False, legacy_sse: bool = False) -> FakeEntry:
    speaks = MCP_FEATURES | {"http"}

    def start(server: SpecServer, tmp: Path) -> VendorFake:
        raw = RawMcpServer(legacy_sse=legacy_sse)
        raw.modern = modern
        return HttpMcpVendor(transport, speaks, raw)

    channel = "sse" if legacy_sse else "streamable-http"
    return FakeEntry("mcp", channel, speaks, start)


VENDOR_FAKES: dict[str, FakeEntry] = {
    "openapi": _document_entry(
        "openapi",
        {"yaml", "fields"},
        lambda: as_json(charges_spec()),
        missing_fields='{"info": {"title": "Charges", "version": "1"}}',
    ),
    "rest": _document_entry("rest", set(), lambda: '{"id": "ch_1", "amount": 100}'),
    "a2a_card": _document_entry(
        "a2a_card", {"fields"}, agent_card, missing_fields='{"name": "Billing agent"}'
    ),
    # The watch's trusted keys fetched beside the card (`cardKeys.jwksUrl`), misbehaving.
    "a2a_card/key-set": FakeEntry(
        "a2a_card",
        None,
        KEY_SET_FEATURES,
        lambda server, tmp: KeySetVendor(server, f"/key-set/{tmp.name}"),
    ),
    "mcp/streamable-http-stateless": _http_mcp_entry("streamable-http", modern=True),
    "mcp/streamable-http-handshake": _http_mcp_entry("streamable-http"),
    "mcp/legacy-sse": _http_mcp_entry("sse", legacy_sse=True),
    # A stdio check starts a Python child twice (the discover probe, then the handshake).
    "mcp/stdio": FakeEntry(
        "mcp",
        "stdio",
        MCP_FEATURES,
        lambda server, tmp: StdioMcpVendor(MCP_FEATURES, tmp),
        deadline=2.0,
    ),
}


def matrix() -> list[tuple[str, str]]:
    """Every (fake, misbehaviour) pair that applies."""
    return [
        (fake, misbehaviour.name)
        for fake, entry in VENDOR_FAKES.items()
        for misbehaviour in MISBEHAVIOURS
        if entry.applies(misbehaviour)
    ]
