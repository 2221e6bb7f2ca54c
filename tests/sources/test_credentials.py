"""Configured headers are credentials: they reach the origin they were configured for and
no other, on every hop, for the HTTP fetcher and the MCP client (real loopback servers; a
different port is a different origin)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from controller.sources.http import FetchError, fetch, make_client
from controller.sources.mcp import fetch_http_mcp_snapshot
from tests.mcp_servers import RawMcpServer
from tests.servers import Loopback, QuietHandler, SpecServer, spec_server

SECRETS = {"X-Api-Key": "key-0123456789", "Private-Token": "tok-0123456789"}


def carried(headers: dict[str, str]) -> set[str]:
    """Which of the configured headers a server received (names compared case-insensitively)."""
    received = {name.lower(): value for name, value in headers.items()}
    return {name for name, value in SECRETS.items() if received.get(name.lower()) == value}


@pytest.fixture
def vendor() -> Iterator[SpecServer]:
    with spec_server() as running:
        yield running


@pytest.fixture
def elsewhere() -> Iterator[SpecServer]:
    with spec_server() as running:
        yield running


def test_a_redirect_to_another_origin_carries_no_configured_header(
    vendor: SpecServer, elsewhere: SpecServer
) -> None:
    elsewhere.set("/spec.json", "{}")
    url = vendor.set("/moved", "", status=302, headers={"Location": elsewhere.url("/spec.json")})
    with make_client(allow_private=True) as client:
        assert fetch(client, url, headers=SECRETS).content == b"{}"
    assert carried(vendor.requests[0][2]) == set(SECRETS)
    [(_, path, headers)] = elsewhere.requests
    assert path == "/spec.json" and carried(headers) == set()
    assert headers["User-Agent"].startswith("driftgate/")  # the request itself went out


def test_a_same_origin_redirect_keeps_them(vendor: SpecServer) -> None:
    vendor.set("/spec.json", "{}")
    url = vendor.set("/moved", "", status=301, headers={"Location": "/spec.json"})
    with make_client(allow_private=True) as client:
        assert fetch(client, url, headers=SECRETS).content == b"{}"
    assert [r[1] for r in vendor.requests] == ["/moved", "/spec.json"]
    assert all(carried(headers) == set(SECRETS) for _, _, headers in vendor.requests)


def test_they_are_attached_per_hop_by_origin(vendor: SpecServer, elsewhere: SpecServer) -> None:
    # vendor -> elsewhere -> vendor: the hop away gets none, the hop back to the configured
    # origin gets them again (each request is judged by its own origin).
    vendor.set("/spec.json", "{}")
    elsewhere.set("/bounce", "", status=307, headers={"Location": vendor.url("/spec.json")})
    url = vendor.set("/moved", "", status=302, headers={"Location": elsewhere.url("/bounce")})
    with make_client(allow_private=True) as client:
        assert fetch(client, url, headers=SECRETS).content == b"{}"
    assert carried(elsewhere.requests[0][2]) == set()
    assert [(r[1], carried(r[2])) for r in vendor.requests] == [
        ("/moved", set(SECRETS)),
        ("/spec.json", set(SECRETS)),
    ]


def test_the_scheme_and_port_are_part_of_the_origin(vendor: SpecServer) -> None:
    # "localhost" and "127.0.0.1" reach the same server but are different hosts.
    vendor.set("/spec.json", "{}")
    other_host = vendor.url("/spec.json").replace("127.0.0.1", "localhost")
    url = vendor.set("/moved", "", status=302, headers={"Location": other_host})
    with make_client(allow_private=True) as client:
        fetch(client, url, headers=SECRETS)
    assert [(r[1], carried(r[2])) for r in vendor.requests] == [
        ("/moved", set(SECRETS)),
        ("/spec.json", set()),
    ]


def test_a_value_that_cannot_be_sent_fails_before_any_request(vendor: SpecServer) -> None:
    url = vendor.set("/spec.json", "{}")
    with make_client(allow_private=True) as client, pytest.raises(FetchError) as info:
        fetch(client, url, headers={"X-Note": "café-0123456789"})
    assert info.value.failure_class == "http_error"
    assert "X-Note" in info.value.message and "café" not in info.value.message
    assert vendor.requests == []


def test_a_redirect_to_an_ambiguous_host_is_a_fetch_error(vendor: SpecServer) -> None:
    url = vendor.set("/moved", "", status=302, headers={"Location": "http://1.2.3/spec.json"})
    with make_client(allow_private=True) as client, pytest.raises(FetchError) as info:
        fetch(client, url, headers=SECRETS)
    assert info.value.failure_class == "http_error" and "canonical IPv4" in info.value.message
    for bad in ("http://0177.0.0.1/spec.json", f"http://{'a' * 64}.example/spec.json"):
        vendor.set("/moved", "", status=302, headers={"Location": bad})
        with make_client(allow_private=True) as client, pytest.raises(FetchError) as info:
            fetch(client, url, headers=SECRETS)
        assert info.value.failure_class == "http_error"
        assert not any(value in info.value.message for value in SECRETS.values())


class Redirector:
    """Answers every request with `status` and a Location header; records what it saw."""

    def __init__(self, location: str, status: int = 307) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        redirector = self

        class Handler(QuietHandler):
            def _redirect(self) -> None:
                redirector.requests.append((self.command, dict(self.headers)))
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.answer(status, headers={"Location": location})

            do_GET = do_POST = do_DELETE = _redirect  # noqa: N815 - http.server's naming

        self._loopback = Loopback(Handler)
        self.url = self._loopback.url("/mcp")

    def __enter__(self) -> Redirector:
        self._loopback.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._loopback.stop()


def test_the_mcp_client_keeps_them_to_the_configured_origin() -> None:
    with RawMcpServer() as raw, Redirector(raw.url) as vendor:
        raw.tools = [{"name": "search", "inputSchema": {"type": "object"}}]
        with make_client(allow_private=True) as client:
            snapshot = fetch_http_mcp_snapshot(client, vendor.url, headers=SECRETS)
        assert [tool["name"] for tool in snapshot["tools"]] == ["search"]
        # Every POST went to the vendor first (307 keeps the method and body) with the
        # credentials, and on to the other origin without them.
        assert vendor.requests and all(carried(h) == set(SECRETS) for _, h in vendor.requests)
        assert "tools/list" in raw.methods()
        assert all(carried(headers) == set() for _, _, headers in raw.requests)
        sent = [json.dumps(headers) for _, _, headers in raw.requests]
        assert not any(value in text for text in sent for value in SECRETS.values())


def test_the_mcp_client_sends_them_to_its_own_origin() -> None:
    with RawMcpServer() as raw:
        with make_client(allow_private=True) as client:
            fetch_http_mcp_snapshot(client, raw.url, headers=SECRETS)
        assert raw.requests and all(carried(h) == set(SECRETS) for _, _, h in raw.requests)


def test_no_cookie_a_vendor_sets_is_kept_or_sent(vendor: SpecServer) -> None:
    # One client serves every watch of every org: a cookie set for one must reach no other.
    vendor.set("/a.json", "{}", headers={"Set-Cookie": "session=org-a-secret; Path=/"})
    vendor.set("/b.json", "{}")
    with make_client(allow_private=True) as client:
        fetch(client, vendor.url("/a.json"))
        fetch(client, vendor.url("/b.json"))
        assert len(client.cookies) == 0
    assert [r[1] for r in vendor.requests] == ["/a.json", "/b.json"]
    assert "Cookie" not in vendor.requests[1][2] and "cookie" not in vendor.requests[1][2]


def test_messages_name_the_url_without_its_query(vendor: SpecServer) -> None:
    url = vendor.set("/gone.json", "", status=404) + "?token=query-secret-123"
    with make_client(allow_private=True) as client, pytest.raises(FetchError) as failed:
        fetch(client, url)
    assert "query-secret-123" not in failed.value.message
    assert vendor.url("/gone.json") in failed.value.message
