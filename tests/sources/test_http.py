"""The HTTP fetcher against a real loopback server: limits, conditional requests, the guard."""

from __future__ import annotations

import socket

import pytest

from controller.sources.http import FetchError, fetch, is_public_address, make_client
from tests.servers import SpecServer


def test_fetch_and_conditional_request(server: SpecServer) -> None:
    url = server.set("/openapi.json", '{"openapi": "3.0.0"}')
    with make_client(allow_private=True) as client:
        first = fetch(client, url)
        assert first.status == 200 and first.content == b'{"openapi": "3.0.0"}'
        assert first.etag
        again = fetch(client, url, etag=first.etag)
        assert again.not_modified and again.content == b""
        server.set("/openapi.json", '{"openapi": "3.1.0"}')
        changed = fetch(client, url, etag=first.etag)
        assert changed.status == 200 and b"3.1.0" in changed.content
    assert server.requests[1][2]["If-None-Match"] == first.etag
    assert server.requests[0][2]["User-Agent"].startswith("driftgate/")


def test_loopback_is_refused_unless_allowed(server: SpecServer) -> None:
    url = server.set("/spec.json", "{}")
    with make_client(allow_private=False) as client, pytest.raises(FetchError) as info:
        fetch(client, url)
    assert info.value.failure_class == "blocked_target"
    assert "127.0.0.1" in info.value.message
    assert server.requests == []  # refused before any connection


def test_an_allowed_target_is_reached_and_its_neighbours_are_not(server: SpecServer) -> None:
    """The allow-list names an address and a port: the same address on another port, or
    another loopback address, stays refused."""
    url = server.set("/spec.json", "{}")
    other = SpecServer(host="127.0.0.2")
    other.start()
    try:
        other.set("/spec.json", "{}")
        allowed = [f"127.0.0.1:{server.port}"]
        with make_client(allow_private=False, allowed_targets=allowed) as client:
            assert fetch(client, url).content == b"{}"
            for refused in (other.url("/spec.json"), f"http://127.0.0.1:{server.port + 1}/"):
                with pytest.raises(FetchError) as info:
                    fetch(client, refused)
                assert info.value.failure_class == "blocked_target"
                assert "DRIFTGATE_PRIVATE_TARGET_ALLOWLIST" in info.value.message
        assert other.requests == []
    finally:
        other.stop()


def test_every_redirect_hop_is_checked(server: SpecServer) -> None:
    # Two loopback servers; the filter allows only the first one's address, so the redirect
    # to the second is refused at its own connection.
    other = SpecServer(host="127.0.0.2")
    other.start()
    try:
        other.set("/spec.json", "{}")
        url = server.set("/moved", "", status=302, headers={"Location": other.url("/spec.json")})
        only_first = make_client(allow_private=False, address_filter=lambda a: a == "127.0.0.1")
        with only_first as client, pytest.raises(FetchError) as info:
            fetch(client, url)
        assert info.value.failure_class == "blocked_target"
        assert [r[1] for r in server.requests] == ["/moved"] and other.requests == []
        with make_client(allow_private=True) as client:
            assert fetch(client, url).content == b"{}"
    finally:
        other.stop()


def test_http_errors_and_redirect_loops(server: SpecServer) -> None:
    server.set("/loop", "", status=302, headers={"Location": "/loop"})
    with make_client(allow_private=True) as client:
        with pytest.raises(FetchError) as missing:
            fetch(client, server.url("/nothing"))
        assert missing.value.failure_class == "http_error" and missing.value.status == 404
        with pytest.raises(FetchError) as loop:
            fetch(client, server.url("/loop"))
        assert loop.value.failure_class == "http_error" and "redirects" in loop.value.message


def test_size_cap(server: SpecServer) -> None:
    url = server.set("/big.json", b"x" * 4096)
    with make_client(allow_private=True) as client:
        with pytest.raises(FetchError) as info:
            fetch(client, url, max_bytes=1024)
        assert info.value.failure_class == "too_large"
        assert fetch(client, url, max_bytes=4096).content == b"x" * 4096


def test_timeout(server: SpecServer) -> None:
    url = server.set("/slow.json", "{}", delay=1.0)
    with make_client(allow_private=True, timeout=0.2) as client, pytest.raises(FetchError) as info:
        fetch(client, url)
    assert info.value.failure_class == "timeout"


def test_connection_refused() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with make_client(allow_private=True) as client, pytest.raises(FetchError) as info:
        fetch(client, f"http://127.0.0.1:{port}/spec.json")
    assert info.value.failure_class == "connect_error"


def test_unresolvable_host() -> None:
    with make_client(allow_private=True) as client, pytest.raises(FetchError) as info:
        fetch(client, "http://no-such-host.invalid/spec.json")
    assert info.value.failure_class == "connect_error"


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),  # cloud metadata
        ("100.64.0.1", False),  # carrier-grade NAT
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("::1", False),
        ("fd00::1", False),
        ("fe80::1%eth0", False),
        ("::ffff:127.0.0.1", False),
        ("8.8.8.8", True),
        ("2606:4700:4700::1111", True),
    ],
)
def test_address_classification(address: str, public: bool) -> None:
    assert is_public_address(address) is public
