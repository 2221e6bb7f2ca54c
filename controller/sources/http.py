"""Outbound HTTP: the one module that imports httpx.

Fetches contracts with timeouts, a size cap, bounded redirects, conditional requests and an
address guard. The guard runs inside the connection itself: the host name is resolved once,
every resolved address is checked, and the socket connects to the checked address, so a DNS
answer cannot change between the check and the connection (no rebinding window) and every
redirect hop is checked the same way. What the guard refuses (private, loopback, link-local,
CGNAT, multicast, every range of the IANA special-purpose registries) is the table in
`controller.sources.addresses`; the operator may allow private targets.

Credentials: every header configured on a watch (or template) is a secret, bound to the
origin (scheme, host, port) of the URL it was configured for. It is never part of the
request as the caller builds it; a request hook attaches it to each hop whose origin is
that one and removes it from every other hop, so a redirect to another host carries none of
it (httpx itself strips only `Authorization`). Before anything is sent, the URL's host and
the headers are checked with `controller.targets`, and whatever still goes wrong while
sending ends as a `FetchError` with a failure class, never as another exception; messages
never contain a configured header value.

Deadlines: httpx's timeouts bound each connect and each read, so a peer that sends a byte just
before every read timeout would hold the caller for ever. Every connection's network stream
cuts the timeout of each socket operation to what is left of the overall deadline in force
(`controller.sources.deadlines`), which `fetch`, `post_json` and `call_json` open for the whole
call: connect, first byte, every redirect hop and the whole body. Past it the call ends as a
`FetchError` of class `timeout`.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.cookiejar import CookieJar, DefaultCookiePolicy
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpcore
import httpx

from controller import __version__
from controller.errors import DriftgateError
from controller.settings import Settings, Target, split_target
from controller.sources import deadlines
from controller.sources.addresses import is_public_address as is_public_address  # the default
from controller.targets import header_problems, header_value_problem, host_problem

DEFAULT_MAX_BYTES = 25 * 1024 * 1024


def make_timeout(*, connect: float, read: float) -> httpx.Timeout:
    """A client timeout: `connect` also bounds writes and waiting for a pooled connection."""
    return httpx.Timeout(connect=connect, read=read, write=connect, pool=connect)


DEFAULT_TIMEOUT = make_timeout(connect=10.0, read=30.0)
# Overall deadlines (seconds) when the caller names none: a contract fetch (the settings'
# `fetch_deadline_seconds` default), and one call to a service (`delivery_deadline_seconds`).
DEFAULT_FETCH_DEADLINE = 60.0
DEFAULT_CALL_DEADLINE = 15.0
MAX_REDIRECTS = 5
MAX_CONNECTIONS = 64  # per client; above any sensible controller concurrency
CLI_USER_AGENT = f"driftgate-cli/{__version__}"
CONTROLLER_USER_AGENT = f"driftgate/{__version__}"


class FetchError(DriftgateError):
    """A fetch failed; `failure_class` is one of CONTRACT.md's failure classes."""

    code = "fetch_failed"

    def __init__(
        self,
        message: str,
        failure_class: str,
        *,
        status: int | None = None,
        challenge: str | None = None,
    ) -> None:
        super().__init__(message)
        self.failure_class = failure_class
        self.status = status
        # A 401's `WWW-Authenticate`: where an OAuth client starts discovery (controller.mcpauth).
        self.challenge = challenge


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


Origin = tuple[str, bytes, int]
_CREDENTIALS = "driftgate.credentials"  # the request extension that carries them
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Credentials:
    """Headers configured on a watch and the one origin they may be sent to."""

    origin: Origin
    headers: Mapping[str, str]

    def without(self, names: Iterable[str]) -> Credentials:
        """These credentials less the headers a request sets itself (the request's win)."""
        taken = {name.lower() for name in names}
        kept = {k: v for k, v in self.headers.items() if k.lower() not in taken}
        return Credentials(self.origin, kept)


def bind_credentials(url: str, headers: Mapping[str, str] | None, *, label: str) -> Credentials:
    """Bind configured `headers` to the origin of `url`; `FetchError` (`http_error`) when the
    URL's host or a header cannot be sent. `label` names the target in messages."""
    try:
        parts = urlsplit(url)
        problem = host_problem(parts.hostname or "") if parts.scheme in _DEFAULT_PORTS else None
    except ValueError:
        problem = "the URL has an invalid host or port"
    if problem is not None:
        raise FetchError(f"{label}: {problem}", "http_error")
    unsendable = header_problems(headers or {})
    if unsendable:
        name, why = unsendable[0]
        raise FetchError(f"{label}: header {name} cannot be sent: {why}", "http_error")
    try:
        origin = _origin(httpx.URL(url))
    except Exception as exc:  # noqa: BLE001 - httpx refuses what urlsplit let through
        raise as_fetch_error(exc, label) from None
    return Credentials(origin, dict(headers or {}))


def _origin(url: httpx.URL) -> Origin:
    scheme = url.scheme
    return scheme, url.raw_host, url.port or _DEFAULT_PORTS.get(scheme, 0)


def _attach_credentials(request: httpx.Request) -> None:
    """Request hook, run for every hop: configured headers go to their origin and nowhere else."""
    host = request.url.raw_host.decode("ascii", "replace")
    problem = host_problem(host.strip("[]")) if request.url.scheme in _DEFAULT_PORTS else None
    if problem is not None:
        raise FetchError(f"{_label(str(request.url))}: {problem}", "http_error")
    credentials = request.extensions.get(_CREDENTIALS)
    if not isinstance(credentials, Credentials):
        return
    for name in credentials.headers:
        request.headers.pop(name, None)  # carried over from the previous hop by httpx
    if _origin(request.url) == credentials.origin:
        request.headers.update(credentials.headers)


AddressFilter = Callable[[str], bool]


class Unresolvable(OSError):
    """A host name that does not resolve (or is not a valid name)."""


def reachable_addresses(
    host: str, port: int, is_allowed: AddressFilter, allowed_targets: frozenset[Target]
) -> list[str]:
    """The addresses of `host` a connection may go to: those the rule allows, and those the
    operator allowed for this port. `BlockedAddress` when none is, `Unresolvable` when the
    name does not resolve. Every outbound connection (HTTP, SMTP) asks this once and
    connects to an answer, so a second lookup cannot lead elsewhere."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise Unresolvable(f"cannot resolve {host}: {exc.strerror}") from None
    except UnicodeError:  # the idna codec refuses it (a label over 63 characters ...)
        raise Unresolvable(f"cannot resolve {host}: not a valid host name") from None
    addresses = [str(info[4][0]) for info in infos]
    allowed = [a for a in addresses if is_allowed(a) or Target(a, port) in allowed_targets]
    if not allowed:
        raise BlockedAddress(
            f"{host} resolves to a private, loopback, link-local or reserved address "
            f"({', '.join(sorted(set(addresses)))}); "
            "set DRIFTGATE_ALLOW_PRIVATE_TARGETS or DRIFTGATE_PRIVATE_TARGET_ALLOWLIST "
            "to allow it"
        )
    return allowed


def address_rule(settings: Settings) -> tuple[AddressFilter, frozenset[Target]]:
    """The operator's outbound address rule: which addresses are allowed, and the
    `address:port` pairs allowed although private."""
    rule: AddressFilter = _any_address if settings.allow_private_targets else is_public_address
    return rule, frozenset(split_target(t) for t in settings.private_target_allowlist)


class _GuardedBackend(httpcore.SyncBackend):
    """Resolves, checks and connects to the checked address (no second lookup). An address
    the filter refuses is still reached on a port the operator allowed it for."""

    def __init__(self, is_allowed: AddressFilter, allowed_targets: frozenset[Target]) -> None:
        self.is_allowed = is_allowed
        self.allowed_targets = allowed_targets

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        _cut(timeout, httpcore.ConnectTimeout)  # a deadline already passed: no lookup
        try:
            allowed = reachable_addresses(host, port, self.is_allowed, self.allowed_targets)
        except Unresolvable as exc:
            raise httpcore.ConnectError(str(exc)) from None
        last: Exception | None = None
        for address in allowed:
            left = _cut(timeout, httpcore.ConnectTimeout)
            try:
                stream = super().connect_tcp(address, port, left, local_address, socket_options)
            except httpcore.ConnectError as exc:
                last = exc
                continue
            return _DeadlineStream(stream)
        assert last is not None
        raise last


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every operation waits no longer than the deadline in force allows
    (the deadline of the call using the connection now, not of the one that opened it)."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _cut(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _cut(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        left = _cut(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname, left))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


def _cut(timeout: float | None, error: type[Exception]) -> float | None:
    """`timeout` cut to what is left of the deadline in force; `error` once it has passed."""
    try:
        return deadlines.bound(timeout)
    except deadlines.DeadlinePassed as exc:
        raise error(str(exc)) from None


class _GuardedTransport(httpx.HTTPTransport):
    def __init__(
        self,
        is_allowed: AddressFilter,
        ca_bundle: Path | None = None,
        allowed_targets: frozenset[Target] = frozenset(),
    ) -> None:
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
            network_backend=_GuardedBackend(is_allowed, allowed_targets),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        # The wait for a free connection is no socket operation: cut it here.
        if deadlines.current() is not None:
            timeouts = dict(request.extensions.get("timeout") or {})
            try:
                timeouts["pool"] = deadlines.bound(timeouts.get("pool"))
            except deadlines.DeadlinePassed as exc:
                raise httpx.ConnectTimeout(str(exc), request=request) from None
            request.extensions = {**request.extensions, "timeout": timeouts}
        return super().handle_request(request)


def make_client(
    *,
    allow_private: bool,
    user_agent: str = CONTROLLER_USER_AGENT,
    timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
    address_filter: AddressFilter | None = None,
    ca_bundle: Path | None = None,
    allowed_targets: Iterable[str] = (),
) -> httpx.Client:
    """An httpx client whose every connection goes through the address guard.

    `address_filter` replaces the default rule (public addresses, or all with
    `allow_private`); it sees every resolved address of every hop. `allowed_targets`
    (`address:port`, the `private_target_allowlist` setting) are reachable whatever the rule.
    `ca_bundle` adds trusted CA certificates to the public ones.
    """
    is_allowed: AddressFilter = is_public_address
    if address_filter is not None:
        is_allowed = address_filter
    elif allow_private:
        is_allowed = _any_address
    return httpx.Client(
        transport=_GuardedTransport(
            is_allowed, ca_bundle, frozenset(split_target(t) for t in allowed_targets)
        ),
        # One client serves every watch of every org: a cookie one vendor sets must never
        # ride along on another watch's request, so none is kept.
        cookies=CookieJar(policy=_NoCookies()),
        timeout=timeout,
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
        event_hooks={"request": [_attach_credentials]},
        headers={
            "User-Agent": user_agent,
            "Accept": "application/json, application/yaml;q=0.9, */*;q=0.5",
        },
        trust_env=False,
    )


def configured_client(settings: Settings, **options: Any) -> httpx.Client:
    """`make_client` with the operator's address rules and CA bundle (checks, webhooks,
    content sniffing)."""
    return make_client(
        allow_private=settings.allow_private_targets,
        allowed_targets=settings.private_target_allowlist,
        ca_bundle=settings.ca_bundle,
        **options,
    )


def operator_client(settings: Settings, **options: Any) -> httpx.Client:
    """A client for services the operator configured (a single sign-on provider), which may
    sit on the internal network: every address is allowed; the operator's CA bundle is
    trusted."""
    return make_client(allow_private=True, ca_bundle=settings.ca_bundle, **options)


def _any_address(_address: str) -> bool:
    return True


class _NoCookies(DefaultCookiePolicy):
    """Keeps no cookie and sends none."""

    def set_ok(self, cookie: Any, request: Any) -> bool:
        return False

    def return_ok(self, cookie: Any, request: Any) -> bool:
        return False


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
    deadline: float | None = DEFAULT_FETCH_DEADLINE,
) -> FetchResult:
    """Fetch `url`; a 304 comes back as a result, every failure as `FetchError`.

    `headers` are the configured ones: credentials, sent to the origin of `url` only. The
    whole fetch (every hop, the whole body) ends within `deadline` seconds (None: only the
    deadline in force, if any), else `FetchError` of class `timeout`."""
    with deadlines.within(deadline):
        return _fetch(client, url, method, headers, body, etag, last_modified, max_bytes)


def _fetch(
    client: httpx.Client,
    url: str,
    method: str,
    headers: Mapping[str, str] | None,
    body: Any,
    etag: str | None,
    last_modified: str | None,
    max_bytes: int,
) -> FetchResult:
    label = _label(url)  # messages name the URL without its query (tokens live there)
    credentials = bind_credentials(url, headers, label=label)
    request_headers: dict[str, str] = {}
    # Validators echo what the server sent; one that cannot be sent back is left out.
    if etag and header_value_problem(etag) is None:
        request_headers["If-None-Match"] = etag
    if last_modified and header_value_problem(last_modified) is None:
        request_headers["If-Modified-Since"] = last_modified
    credentials = credentials.without(request_headers)
    try:
        with client.stream(
            method,
            url,
            headers=request_headers,
            json=body if body is not None else None,
            extensions={_CREDENTIALS: credentials},
        ) as response:
            if response.status_code == 304:
                return FetchResult(str(response.url), 304, b"", dict(response.headers))
            if response.status_code >= 400:
                raise FetchError(
                    f"{label} answered HTTP {response.status_code}",
                    "http_error",
                    status=response.status_code,
                )
            declared = response.headers.get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > max_bytes:
                raise FetchError(_too_large(label, max_bytes), "too_large")
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > max_bytes:
                    raise FetchError(_too_large(label, max_bytes), "too_large")
                chunks.append(chunk)
            return FetchResult(
                str(response.url), response.status_code, b"".join(chunks), dict(response.headers)
            )
    except Exception as exc:  # noqa: BLE001 - every failure is a FetchError, whatever raised it
        raise _without_secrets(as_fetch_error(exc, label), credentials) from None


def post_json(
    client: httpx.Client,
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    deadline: float | None = DEFAULT_CALL_DEADLINE,
) -> int:
    """POST `body` and return the status code; every failure becomes `FetchError`, and so
    does an answer not complete within `deadline` seconds (None: the deadline in force)."""
    with deadlines.within(deadline):
        try:
            response = client.post(url, content=body, headers=dict(headers), follow_redirects=False)
            response.read()
            return response.status_code
        except Exception as exc:  # noqa: BLE001 - every failure is a FetchError, whatever raised it
            # Only the origin: a webhook URL's path or query is often its secret (Slack's is).
            raise as_fetch_error(exc, _origin_label(url)) from None


@dataclass(frozen=True)
class JsonAnswer:
    """A JSON API's answer: status, headers (lower-case names) and the parsed body (None
    when the body is empty or not JSON)."""

    status: int
    headers: dict[str, str]
    body: Any


def call_json(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str],
    body: Any = None,
    form: Mapping[str, str] | None = None,
    label: str,
    deadline: float | None = DEFAULT_CALL_DEADLINE,
) -> JsonAnswer:
    """Send one JSON API request (no redirects followed) and return its answer, whatever its
    status; a transport failure becomes `FetchError` named by `label`, never quoting headers,
    and so does an answer not complete within `deadline` seconds (None: the deadline in
    force). `form` sends an `application/x-www-form-urlencoded` body instead of `body` as JSON
    (an OAuth token request)."""
    with deadlines.within(deadline):
        try:
            response = client.request(
                method,
                url,
                json=body if form is None else None,
                data=dict(form) if form is not None else None,
                headers=dict(headers),
                follow_redirects=False,
            )
            response.read()
        except Exception as exc:  # noqa: BLE001 - every failure is a FetchError, whatever raised it
            raise as_fetch_error(exc, label) from None
    try:
        parsed = response.json() if response.content else None
    except ValueError:
        parsed = None
    return JsonAnswer(
        response.status_code, {k.lower(): v for k, v in response.headers.items()}, parsed
    )


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

    def __init__(
        self, response: httpx.Response, label: str, credentials: Credentials | None = None
    ) -> None:
        self._response = response
        self._label = label
        self._credentials = credentials

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
            raise _without_secrets(as_fetch_error(exc, self._label), self._credentials) from None


class StreamedRequest:
    """`with StreamedRequest(client, "POST", url, ...) as response:` sends one request.

    `label` replaces the URL in error messages (callers pass a form without credentials);
    `timeout` (seconds) bounds each phase of this request below the client's own timeouts.
    `credentials` (from `bind_credentials`) go to their own origin only, on every hop;
    `headers` of the same name win over them.
    """

    def __init__(
        self,
        client: httpx.Client,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        credentials: Credentials | None = None,
        content: bytes | None = None,
        timeout: float | None = None,
        label: str | None = None,
    ) -> None:
        self._label = label or url
        self._credentials = credentials.without(headers or {}) if credentials else None
        self._stream = client.stream(
            method,
            url,
            headers=dict(headers or {}),
            content=content,
            timeout=httpx.USE_CLIENT_DEFAULT if timeout is None else max(timeout, 0.001),
            extensions={_CREDENTIALS: self._credentials} if self._credentials else None,
        )

    def __enter__(self) -> OpenResponse:
        try:
            response = self._stream.__enter__()
        except Exception as exc:
            raise _without_secrets(as_fetch_error(exc, self._label), self._credentials) from None
        return OpenResponse(response, self._label, self._credentials)

    def __exit__(self, *exc_info: Any) -> None:
        try:
            self._stream.__exit__(*exc_info)
        except httpx.HTTPError:
            pass  # closing a response that already failed: the first error is the one to report


def as_fetch_error(exc: Exception, label: str) -> FetchError:
    """Map any exception raised while sending a request or reading its answer to `FetchError`.

    Text of exceptions that may quote what was being encoded (a header value) is not kept."""
    if isinstance(exc, FetchError):
        return exc
    if isinstance(exc, BlockedAddress):
        return FetchError(str(exc), "blocked_target")
    if isinstance(exc, httpx.TooManyRedirects):
        return FetchError(f"{label}: more than {MAX_REDIRECTS} redirects", "http_error")
    if isinstance(exc, httpx.TimeoutException):
        deadline = deadlines.current()
        if deadline is not None and deadlines.has_passed():
            return FetchError(
                f"{label}: no complete answer within {deadline.seconds:g} s", "timeout"
            )
        return FetchError(f"{label}: timed out", "timeout")
    if isinstance(exc, httpx.ConnectError):
        if _is_tls(exc):
            return FetchError(f"{label}: TLS handshake failed: {_reason(exc)}", "tls_error")
        return FetchError(f"{label}: cannot connect: {_reason(exc)}", "connect_error")
    if isinstance(exc, httpx.UnsupportedProtocol):
        return FetchError(f"{label}: only http:// and https:// URLs can be fetched", "http_error")
    if isinstance(exc, httpx.HTTPError):
        return FetchError(f"{label}: {_reason(exc)}", "http_error")
    if isinstance(exc, httpx.InvalidURL):
        return FetchError(f"{label}: invalid URL: {_reason(exc)}", "http_error")
    if isinstance(exc, UnicodeError):
        return FetchError(
            f"{label}: the host name or a header cannot be encoded ({type(exc).__name__})",
            "http_error",
        )
    return FetchError(f"{label}: the request failed ({type(exc).__name__})", "http_error")


def _without_secrets(error: FetchError, credentials: Credentials | None) -> FetchError:
    """`error` with every configured header value (and each longer word of one) blanked out."""
    if credentials is None:
        return error
    message = error.message
    for value in credentials.headers.values():
        for piece in (value, *value.split()):
            if len(piece) >= 8:
                message = message.replace(piece, "[redacted]")
    if message == error.message:
        return error
    return FetchError(message, error.failure_class, status=error.status)


def _origin_label(url: str) -> str:
    """`scheme://host[:port]` of `url`, for messages about a URL whose path is a secret."""
    try:
        parts = urlsplit(url)
        return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], "", "", ""))
    except ValueError:
        return "<invalid URL>"


def _label(url: str) -> str:
    """`url` without user info, query or fragment: a form fit for messages."""
    try:
        parts = urlsplit(url)
        return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))
    except ValueError:
        return "<invalid URL>"
