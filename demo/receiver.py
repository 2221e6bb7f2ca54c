"""The demo's webhook receiver: verifies each delivery's Standard Webhooks signature with the
org's signing secret, as a real consumer must, and hands the verified events to the console."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from controller.events.signing import SignatureError, verify

PATH = "/hook"

# A verified delivery: its event (the JSON body) and its webhook-id.
OnEvent = Callable[[dict[str, Any], str], None]
# A refused delivery: why.
OnRefused = Callable[[str], None]


class WebhookReceiver:
    def __init__(
        self, host: str, port: int, secret: str, on_event: OnEvent, on_refused: OnRefused
    ) -> None:
        receiver = self
        self.secret = secret
        self.received: list[dict[str, Any]] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = dict(self.headers)
                try:
                    verify(receiver.secret, headers, body, int(time.time()))
                    event = json.loads(body)
                except (SignatureError, ValueError) as exc:
                    self._answer(401)
                    on_refused(str(exc))
                    return
                self._answer(204)
                receiver.received.append(event)
                on_event(event, headers.get("webhook-id") or headers.get("Webhook-Id") or "")

            def _answer(self, status: int) -> None:
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                return

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://{host}:{self.server.server_address[1]}{PATH}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        )

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
