"""Real loopback servers for tests: an HTTP server whose routes a test sets and changes."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from werkzeug.serving import WSGIRequestHandler, make_server


@dataclass
class Route:
    body: bytes = b""
    status: int = 200
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    etag: bool = True


class SpecServer:
    """Serves `routes` on 127.0.0.1; records every request it saw."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.routes: dict[str, Route] = {}
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                server.requests.append(("GET", self.path, dict(self.headers)))
                route = server.routes.get(self.path)
                if route is None:
                    self._send(404, b'{"error": "not found"}', "application/json", {})
                    return
                if route.delay:
                    time.sleep(route.delay)
                headers = dict(route.headers)
                if route.etag and route.status == 200:
                    tag = '"' + hashlib.sha256(route.body).hexdigest()[:16] + '"'
                    headers["ETag"] = tag
                    if self.headers.get("If-None-Match") == tag:
                        self._send(304, b"", route.content_type, headers)
                        return
                self._send(route.status, route.body, route.content_type, headers)

            def _send(
                self, status: int, body: bytes, content_type: str, headers: dict[str, str]
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                for name, value in headers.items():
                    self.send_header(name, value)
                if status != 304:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if status != 304:
                    try:
                        self.wfile.write(body)
                    except (BrokenPipeError, ConnectionResetError):
                        pass

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                return

        self._server = ThreadingHTTPServer((host, 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    def set(self, path: str, body: bytes | str, **options: object) -> str:
        data = body.encode() if isinstance(body, str) else body
        self.routes[path] = Route(body=data, **options)  # type: ignore[arg-type]
        return self.url(path)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def spec_server() -> Iterator[SpecServer]:
    server = SpecServer()
    server.start()
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
