"""Outbound HTTP: the one module that imports httpx.

Fetches contracts with timeouts, a size cap, bounded redirects, conditional requests and an
address guard. The guard runs inside the connection itself: the host name is resolved once,
every resolved address is checked, and the socket connects to the checked address, so a DNS
answer cannot change between the check and the connection (no rebinding window) and every
redirect hop is checked the same way. Private, loopback, link-local (cloud metadata), CGNAT,
multicast and reserved addresses are refused unless the operator allows them.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpcore
import httpx

from controller import __version__
from controller.errors import DriftgateError

DEFAULT_MAX_BYTES = 25 * 1024 * 1024
DEFAULT_TIMEOUT = httpx.Timeout(connect=10.0, read=30.0, write=10.0, pool=10.0)
MAX_REDIRECTS = 5
MAX_CONNECTIONS = 64  # per client; above any sensible controller concurrency
CLI_USER_AGENT = f"driftgate-cli/{__version__}"
CONTROLLER_USER_AGENT = f"driftgate/{__version__}"


class FetchError(DriftgateError):
    """A fetch failed; `failure_class` is one of CONTRACT.md's failure classes."""

    code = "fetch_failed"

    def __init__(self, message: str, failure_class: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.failure_class = failure_class
        self.status = status


class BlockedAddress(OSError):
    """Raised inside the connection when the target resolves to a refused address."""


@dataclass(frozen=True)
class FetchResult:
    url: str
    status: int
    content: bytes
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def not_modified(self) -> bool:
        return self.status == 304

    @property
    def etag(self) -> str | None:
        return self.headers.get("etag")

    @property
    def last_modified(self) -> str | None:
        return self.headers.get("last-modified")


def is_public_address(address: str) -> bool:
    """True for globally routable unicast addresses; False for everything the guard refuses."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


AddressFilter = Callable[[str], bool]


class _GuardedBackend(httpcore.SyncBackend):
    """Resolves, checks and connects to the checked address (no second lookup)."""

    def __init__(self, is_allowed: AddressFilter) -> None:
        self.is_allowed = is_allowed

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc.strerror}") from None
        addresses = [str(info[4][0]) for info in infos]
        allowed = [a for a in addresses if self.is_allowed(a)]
        if not allowed:
            raise BlockedAddress(
                f"{host} resolves to a private, loopback, link-local or reserved address "
                f"({', '.join(sorted(set(addresses)))}); "
                "set DRIFTGATE_ALLOW_PRIVATE_TARGETS to allow it"
            )
        last: Exception | None = None
        for address in allowed:
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                last = exc
        assert last is not None
        raise last


class _GuardedTransport(httpx.HTTPTransport):
    def __init__(self, is_allowed: AddressFilter, ca_bundle: Path | None = None) -> None:
        super().__init__(trust_env=False)
        context = httpx.create_ssl_context()
        if ca_bundle is not None:
            context.load_verify_locations(cafile=str(ca_bundle))
        # httpx does not expose httpcore's network backend; the pool is rebuilt with ours.
        self._pool = httpcore.ConnectionPool(
            ssl_context=context,
            max_connections=MAX_CONNECTIONS,
            # As many idle connections as busy ones: a controller's workers reuse them.
            max_keepalive_connections=MAX_CONNECTIONS,
            keepalive_expiry=5.0,
            network_backend=_GuardedBackend(is_allowed),
        )


def make_client(
    *,
    allow_private: bool,
    user_agent: str = CONTROLLER_USER_AGENT,
    timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
    address_filter: AddressFilter | None = None,
    ca_bundle: Path | None = None,
) -> httpx.Client:
    """An httpx client whose every connection goes through the address guard.

    `address_filter` replaces the default rule (public addresses, or all with
    `allow_private`); it sees every resolved address of every hop. `ca_bundle` adds trusted
    CA certificates to the public ones.
    """
    is_allowed: AddressFilter = is_public_address
    if address_filter is not None:
        is_allowed = address_filter
    elif allow_private:
        is_allowed = _any_address
    return httpx.Client(
        transport=_GuardedTransport(is_allowed, ca_bundle),
        timeout=timeout,
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
        headers={
            "User-Agent": user_agent,
            "Accept": "application/json, application/yaml;q=0.9, */*;q=0.5",
        },
        trust_env=False,
    )


def _any_address(_address: str) -> bool:
    return True


def fetch(
    client: httpx.Client,
    url: str,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    body: Any = None,
    etag: str | None = None,
    last_modified: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> FetchResult:
    """Fetch `url`; a 304 comes back as a result, every failure as `FetchError`."""
    request_headers = dict(headers or {})
    if etag:
        request_headers["If-None-Match"] = etag
    if last_modified:
        request_headers["If-Modified-Since"] = last_modified
    try:
        with client.stream(
            method,
            url,
            headers=request_headers,
            json=body if body is not None else None,
        ) as response:
            if response.status_code == 304:
                return FetchResult(str(response.url), 304, b"", dict(response.headers))
            if response.status_code >= 400:
                raise FetchError(
                    f"{url} answered HTTP {response.status_code}",
                    "http_error",
                    status=response.status_code,
                )
            declared = response.headers.get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > max_bytes:
                raise FetchError(_too_large(url, max_bytes), "too_large")
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > max_bytes:
                    raise FetchError(_too_large(url, max_bytes), "too_large")
                chunks.append(chunk)
            return FetchResult(
                str(response.url), response.status_code, b"".join(chunks), dict(response.headers)
            )
    except FetchError:
        raise
    except BlockedAddress as exc:
        raise FetchError(str(exc), "blocked_target") from None
    except httpx.TooManyRedirects:
        raise FetchError(f"{url}: more than {MAX_REDIRECTS} redirects", "http_error") from None
    except httpx.TimeoutException:
        raise FetchError(f"{url}: timed out", "timeout") from None
    except httpx.ConnectError as exc:
        if _is_tls(exc):
            raise FetchError(f"{url}: TLS handshake failed: {_reason(exc)}", "tls_error") from None
        raise FetchError(f"{url}: cannot connect: {_reason(exc)}", "connect_error") from None
    except httpx.UnsupportedProtocol:
        raise FetchError(
            f"{url}: only http:// and https:// URLs can be fetched", "http_error"
        ) from None
    except httpx.HTTPError as exc:
        raise FetchError(f"{url}: {_reason(exc)}", "http_error") from None


def post_json(client: httpx.Client, url: str, body: bytes, headers: Mapping[str, str]) -> int:
    """POST `body` and return the status code; transport failures become `FetchError`."""
    try:
        response = client.post(url, content=body, headers=dict(headers), follow_redirects=False)
        response.read()
        return response.status_code
    except BlockedAddress as exc:
        raise FetchError(str(exc), "blocked_target") from None
    except httpx.TimeoutException:
        raise FetchError(f"{url}: timed out", "timeout") from None
    except httpx.ConnectError as exc:
        failure = "tls_error" if _is_tls(exc) else "connect_error"
        raise FetchError(f"{url}: cannot connect: {_reason(exc)}", failure) from None
    except httpx.HTTPError as exc:
        raise FetchError(f"{url}: {_reason(exc)}", "http_error") from None


def _too_large(url: str, max_bytes: int) -> str:
    return f"{url}: the response is larger than {max_bytes // (1024 * 1024)} MB"


def _is_tls(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            return True
        seen = seen.__cause__ or seen.__context__
    return "SSL" in str(exc) or "certificate" in str(exc).lower()


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


# Streaming requests for protocol clients (controller/sources/mcp.py): they keep a response
# open while they read it (server-sent events), so the caller drives the body and this
# module still owns every httpx exception and the address guard.

HttpClient = httpx.Client
"""The client type other modules accept; only this module names httpx."""


class OpenResponse:
    """A response whose body is read as it arrives; failures while reading are `FetchError`."""

    def __init__(self, response: httpx.Response, label: str) -> None:
        self._response = response
        self._label = label

    @property
    def status(self) -> int:
        return self._response.status_code

    @property
    def url(self) -> str:
        return str(self._response.url)

    def header(self, name: str) -> str | None:
        """The value of header `name` (case-insensitive), or None."""
        value = self._response.headers.get(name)
        return None if value is None else str(value)

    def iter_bytes(self) -> Iterable[bytes]:
        """Yield the body in chunks as they arrive."""
        try:
            yield from self._response.iter_bytes()
        except Exception as exc:
            raise as_fetch_error(exc, self._label) from None


class StreamedRequest:
    """`with StreamedRequest(client, "POST", url, ...) as response:` sends one request.

    `label` replaces the URL in error messages (callers pass a form without credentials);
    `timeout` (seconds) bounds each phase of this request below the client's own timeouts.
    """

    def __init__(
        self,
        client: httpx.Client,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
        timeout: float | None = None,
        label: str | None = None,
    ) -> None:
        self._label = label or url
        self._stream = client.stream(
            method,
            url,
            headers=dict(headers or {}),
            content=content,
            timeout=httpx.USE_CLIENT_DEFAULT if timeout is None else max(timeout, 0.001),
        )

    def __enter__(self) -> OpenResponse:
        try:
            response = self._stream.__enter__()
        except Exception as exc:
            raise as_fetch_error(exc, self._label) from None
        return OpenResponse(response, self._label)

    def __exit__(self, *exc_info: Any) -> None:
        try:
            self._stream.__exit__(*exc_info)
        except httpx.HTTPError:
            pass  # closing a response that already failed: the first error is the one to report


def as_fetch_error(exc: Exception, label: str) -> Exception:
    """Map an exception from httpx or the address guard to `FetchError`; others pass unchanged."""
    if isinstance(exc, FetchError):
        return exc
    if isinstance(exc, BlockedAddress):
        return FetchError(str(exc), "blocked_target")
    if isinstance(exc, httpx.TooManyRedirects):
        return FetchError(f"{label}: more than {MAX_REDIRECTS} redirects", "http_error")
    if isinstance(exc, httpx.TimeoutException):
        return FetchError(f"{label}: timed out", "timeout")
    if isinstance(exc, httpx.ConnectError):
        if _is_tls(exc):
            return FetchError(f"{label}: TLS handshake failed: {_reason(exc)}", "tls_error")
        return FetchError(f"{label}: cannot connect: {_reason(exc)}", "connect_error")
    if isinstance(exc, httpx.UnsupportedProtocol):
        return FetchError(f"{label}: only http:// and https:// URLs can be fetched", "http_error")
    if isinstance(exc, httpx.HTTPError):
        return FetchError(f"{label}: {_reason(exc)}", "http_error")
    return exc
