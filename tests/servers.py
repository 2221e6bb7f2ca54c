"""Real loopback servers for tests: an HTTP server whose routes a test sets and changes, and
a TCP server that stalls every connection (silent, or trickling a byte at a time)."""

from __future__ import annotations

import hashlib
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from werkzeug.serving import WSGIRequestHandler, make_server


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that does not log every request to stderr, with one way to answer."""

    def answer(
        self,
        status: int,
        body: bytes = b"",
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        """Status, headers and body; a 304 has no body and no Content-Length."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if status != 304:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if status != 304 and body:
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        return


class Loopback:
    """A threading HTTP server for `handler` on a free port of `host`, served by a daemon
    thread between `start()` and `stop()`; `tls` (certificate, key) serves HTTPS."""

    def __init__(
        self,
        handler: type[BaseHTTPRequestHandler],
        host: str = "127.0.0.1",
        tls: tuple[Path, Path] | None = None,
    ) -> None:
        self.server = ThreadingHTTPServer((host, 0), handler)
        self.server.daemon_threads = True
        self.scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(tls[0]), str(tls[1]))
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            self.scheme = "https"
        self.host = host
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def url(self, path: str) -> str:
        return f"{self.scheme}://{self.host}:{self.port}{path}"

    def start(self) -> Loopback:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@dataclass
class Route:
    body: bytes = b""
    status: int = 200
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    etag: bool = True
    # Seconds between the bytes of a body that never ends (headers first): a trickling vendor.
    trickle: float = 0.0
    # Accept the request and never answer it (until the server stops): a hanging vendor.
    hang: bool = False


class SpecServer:
    """Serves `routes` on 127.0.0.1; records every request it saw."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.routes: dict[str, Route] = {}
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.stopping = threading.Event()
        server = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                server.requests.append(("GET", self.path, dict(self.headers)))
                route = server.routes.get(self.path)
                if route is None:
                    self.answer(404, b'{"error": "not found"}')
                    return
                if route.delay:
                    time.sleep(route.delay)
                if route.hang:
                    server.stopping.wait()
                    return
                if route.trickle:
                    self.send_response(route.status)
                    self.send_header("Content-Type", route.content_type)
                    self.send_header("Content-Length", "1000000")
                    self.end_headers()
                    drip(self.wfile, route.trickle, server.stopping)
                    return
                headers = dict(route.headers)
                if route.etag and route.status == 200:
                    tag = '"' + hashlib.sha256(route.body).hexdigest()[:16] + '"'
                    headers["ETag"] = tag
                    if self.headers.get("If-None-Match") == tag:
                        self.answer(304, b"", route.content_type, headers)
                        return
                self.answer(route.status, route.body, route.content_type, headers)

        self._loopback = Loopback(Handler, host)
        self.port = self._loopback.port

    def url(self, path: str) -> str:
        return self._loopback.url(path)

    def set(self, path: str, body: bytes | str, **options: object) -> str:
        data = body.encode() if isinstance(body, str) else body
        self.routes[path] = Route(body=data, **options)  # type: ignore[arg-type]
        return self.url(path)

    def start(self) -> None:
        self._loopback.start()

    def stop(self) -> None:
        self.stopping.set()
        self._loopback.stop()


def drip(out: Any, every: float, stopping: threading.Event, byte: bytes = b" ") -> None:
    """Write `byte` to `out` every `every` seconds until the peer goes or `stopping` is set."""
    while not stopping.wait(every):
        try:
            out.write(byte)
            out.flush()
        except OSError:
            return


@contextmanager
def spec_server() -> Iterator[SpecServer]:
    server = SpecServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


# HTTP/1.1 status line and headers announcing a body that a trickling peer never finishes.
TRICKLED_HEADERS = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"
)


class Stalling:
    """A TCP server on 127.0.0.1 that accepts every connection and stalls it: it never says
    a thing (`trickle=0`), or sends `preamble` and then one byte every `trickle` seconds for
    ever. `accepted` counts connections; each is held until the peer leaves or `stop()`."""

    def __init__(self, *, preamble: bytes = b"", trickle: float = 0.0, byte: bytes = b" ") -> None:
        self.preamble, self.trickle, self.byte = preamble, trickle, byte
        self.accepted = 0
        self.stopping = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._stall, args=(connection,), daemon=True).start()

    def _stall(self, connection: socket.socket) -> None:
        with connection:
            if not self.trickle:
                self.stopping.wait()
                return
            with connection.makefile("wb", buffering=0) as out:
                try:
                    out.write(self.preamble)
                except OSError:
                    return
                drip(out, self.trickle, self.stopping, self.byte)

    def stop(self) -> None:
        self.stopping.set()
        self._listener.close()
        self._thread.join(timeout=5)


@contextmanager
def stalling(
    *, preamble: bytes = b"", trickle: float = 0.0, byte: bytes = b" "
) -> Iterator[Stalling]:
    server = Stalling(preamble=preamble, trickle=trickle, byte=byte)
    try:
        yield server
    finally:
        server.stop()


# A WSGI app (the Flask app, the lane in front) served by werkzeug in a thread.

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _QuietHandler(WSGIRequestHandler):
    def log(self, type: str, message: str, *args: Any) -> None:  # noqa: A002
        return


class WsgiServer:
    """A WSGI app served by werkzeug in a thread; records the path and headers it saw."""

    def __init__(self, app: WSGIApp) -> None:
        self.requests: list[dict[str, str]] = []

        def recording(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
            self.requests.append(
                {
                    "path": environ.get("PATH_INFO", ""),
                    "user_agent": environ.get("HTTP_USER_AGENT", ""),
                    "source": environ.get("HTTP_X_SERVICE_SOURCE", ""),
                    "authorization": environ.get("HTTP_AUTHORIZATION", ""),
                }
            )
            return app(environ, start_response)

        self._server = make_server(
            "127.0.0.1", 0, recording, threaded=True, request_handler=_QuietHandler
        )
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def preflights(self) -> list[dict[str, str]]:
        return [r for r in self.requests if r["path"] == "/api/preflight"]

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


@contextmanager
def serving(app: WSGIApp) -> Iterator[WsgiServer]:
    server = WsgiServer(app)
    try:
        yield server
    finally:
        server.stop()
