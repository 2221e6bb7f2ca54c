"""A loopback webhook receiver that verifies Standard Webhooks signatures and can fail on
purpose, to see retries."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from controller.events.signing import SignatureError, verify
from tests.servers import Loopback, QuietHandler


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

        class Handler(QuietHandler):
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
                self.answer(status)

        self._loopback = Loopback(Handler, tls=tls).start()
        self.url = self._loopback.url("/hook")

    def close(self) -> None:
        self._loopback.stop()
