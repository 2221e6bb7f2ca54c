"""A real SMTP server on 127.0.0.1 (aiosmtpd) that keeps what it receives, for the e-mail tests.

It speaks STARTTLS with a throwaway certificate when given one (and then refuses AUTH before
TLS), checks AUTH PLAIN/LOGIN against one user and password, and records every login tried.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from tests.processes import free_port


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    data: bytes

    @property
    def message(self) -> EmailMessage:
        parsed = message_from_bytes(self.data, policy=policy.default)
        assert isinstance(parsed, EmailMessage)
        return parsed


@dataclass
class SmtpServer:
    host: str
    port: int
    received: list[Received] = field(default_factory=list)
    logins: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def messages(self) -> list[Received]:
        with self.lock:
            return list(self.received)

    def to(self, address: str) -> list[EmailMessage]:
        return [r.message for r in self.messages() if address in r.rcpt_tos]

    # aiosmtpd's handler and authenticator hooks.
    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        with self.lock:
            self.received.append(
                Received(envelope.mail_from, list(envelope.rcpt_tos), bytes(envelope.content))
            )
        return "250 Message accepted for delivery"


class _Authenticator:
    def __init__(self, server: SmtpServer, username: str, password: str) -> None:
        self.server, self.username, self.password = server, username, password

    def __call__(
        self, smtp: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any
    ) -> AuthResult:
        if not isinstance(auth_data, LoginPassword):
            return AuthResult(success=False, handled=False)
        login, password = auth_data.login.decode(), auth_data.password.decode()
        with self.server.lock:
            self.server.logins.append((login, password))
        # handled=False: aiosmtpd answers a refused login with 535 itself (handled=True would
        # leave the client waiting for a reply that never comes).
        return AuthResult(
            success=(login, password) == (self.username, self.password), handled=False
        )


@contextmanager
def smtp_server(
    *, tls: tuple[Path, Path] | None = None, username: str | None = None, password: str = ""
) -> Iterator[SmtpServer]:
    """An SMTP server on a free loopback port until the block ends."""
    server = SmtpServer("127.0.0.1", free_port())
    options: dict[str, Any] = {}
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(tls[0]), str(tls[1]))
        options.update(tls_context=context, require_starttls=True)
    if username is not None:
        options.update(
            authenticator=_Authenticator(server, username, password),
            auth_require_tls=tls is not None,
        )
    controller = Controller(server, hostname=server.host, port=server.port, **options)
    controller.start()
    try:
        yield server
    finally:
        controller.stop()
