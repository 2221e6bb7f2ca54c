"""A loopback webhook receiver that verifies Standard Webhooks signatures and can fail on
purpose, to see retries."""

from __future__ import annotations

import json
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from controller.events.signing import SignatureError, verify


class Receiver:
    def __init__(
        self,
        secret: str | None = None,
        fail_first: int = 0,
        tls: tuple[Path, Path] | None = None,
    ) -> None:
        """`tls` (certificate, key) serves HTTPS instead of HTTP."""
        self.secret = secret
        self.fail_first = fail_first
        self.received: list[dict[str, Any]] = []
        self.rejected: list[str] = []
        self.attempts = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                receiver.attempts += 1
                status = 204
                if receiver.attempts <= receiver.fail_first:
                    status = 500
                elif receiver.secret is not None:
                    try:
                        verify(receiver.secret, dict(self.headers), body, int(time.time()))
                    except SignatureError as exc:
                        receiver.rejected.append(str(exc))
                        status = 401
                if status == 204:
                    receiver.received.append(
                        {"headers": dict(self.headers), "body": json.loads(body)}
                    )
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(tls[0]), str(tls[1]))
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self._server.server_address[1]}/hook"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
