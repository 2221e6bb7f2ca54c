"""Sending one e-mail through an SMTP relay (smtplib, the standard library's client): the org's
own, or the server's (the operator's `smtp_*` settings) for an org without one.

An org relay's host comes from an API caller, so it goes through the same outbound-address
guard as checks and webhooks: resolved once, refused when private unless allowed, and
connected to by the checked address (the host name is kept for TLS verification and SNI). The
server's relay comes from the operator, like the database URL, and is often on the local
network: it is resolved and connected to the same way, without the private-address rule.

Implicit TLS (`tls`, port 465) or STARTTLS (`starttls`, port 587) verify the relay's
certificate against the public CAs and the operator's `ca_bundle`; `none` sends in clear, for
a relay on a trusted network. The password is sent only to the relay it was configured
with, inside TLS unless `none`, and never appears in an error: a failure says what the relay
answered.

smtplib bounds each socket operation (`timeout`), not a conversation: a relay that sends its
replies a byte at a time would hold the sender for ever. The client's socket (plain, and the
TLS socket it becomes) cuts each wait to what is left of the deadline in force
(`controller.sources.deadlines`; a delivery's is the channel's), so the whole conversation
ends by then, as `timeout`.
"""

from __future__ import annotations

import smtplib
import socket
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from controller.settings import Settings
from controller.sources import deadlines
from controller.sources.http import (
    BlockedAddress,
    FetchError,
    Unresolvable,
    address_rule,
    reachable_addresses,
)

Security = Literal["starttls", "tls", "none"]
TIMEOUT_SECONDS = 20.0


@dataclass(frozen=True)
class Relay:
    """Where and how to send: the org's SMTP settings with the password decrypted, or the
    server's (`operator`: set by the operator, so not held to the private-address rule)."""

    host: str
    port: int
    security: Security
    sender: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    operator: bool = False


def send(
    relay: Relay,
    recipient: str,
    data: bytes,
    settings: Settings,
    *,
    timeout: float = TIMEOUT_SECONDS,
    deadline: float | None = None,
) -> int:
    """Send `data` (a whole message) to `recipient`; 250 when the relay took it. Raises
    `FetchError` (failure classes `blocked_target`, `unreachable`, `timeout`, `tls_error`,
    `smtp_auth`, `smtp_refused`) so the outbox records and retries it like a webhook.
    `timeout` bounds each wait, `deadline` (and the deadline in force) the whole exchange."""
    with deadlines.within(deadline):
        return _send(relay, recipient, data, settings, timeout)


def _send(relay: Relay, recipient: str, data: bytes, settings: Settings, timeout: float) -> int:
    is_allowed, targets = address_rule(settings)
    if relay.operator:
        is_allowed = _any_address
    try:
        addresses = reachable_addresses(relay.host, relay.port, is_allowed, targets)
    except BlockedAddress as exc:
        raise FetchError(f"SMTP relay {relay.host}: {exc}", "blocked_target") from None
    except Unresolvable as exc:
        raise FetchError(f"SMTP relay: {exc}", "unreachable") from None
    context = ssl.create_default_context()
    context.sslsocket_class = _DeadlineSSLSocket  # STARTTLS and implicit TLS alike
    if settings.ca_bundle is not None:
        context.load_verify_locations(cafile=str(Path(settings.ca_bundle)))
    where = f"SMTP relay {relay.host}:{relay.port}"
    try:
        client = _connect(relay, addresses, context, timeout)
        try:
            if relay.security == "starttls":
                client.starttls(context=context)
                client.ehlo()
            if relay.username:
                client.login(relay.username, relay.password or "")
            client.sendmail(relay.sender, [recipient], data)
        finally:
            try:
                client.quit()
            except (smtplib.SMTPException, OSError):
                client.close()
    except smtplib.SMTPAuthenticationError as exc:
        raise FetchError(
            f"{where} refused the credentials ({exc.smtp_code})", "smtp_auth"
        ) from None
    except smtplib.SMTPNotSupportedError as exc:
        raise FetchError(f"{where}: {exc}", "smtp_refused") from None
    except smtplib.SMTPRecipientsRefused as exc:
        code, reply = next(iter(exc.recipients.values()))
        raise FetchError(
            f"{where} refused the recipient ({code} {_text(reply)})", "smtp_refused", status=code
        ) from None
    except smtplib.SMTPResponseException as exc:
        raise FetchError(
            f"{where} answered {exc.smtp_code} {_text(exc.smtp_error)}",
            "smtp_refused",
            status=exc.smtp_code,
        ) from None
    except ssl.SSLError as exc:
        raise FetchError(f"{where}: TLS failed ({exc.reason or exc})", "tls_error") from None
    except (smtplib.SMTPException, OSError) as exc:
        # smtplib reports a reply that timed out as a lost connection.
        if isinstance(exc, TimeoutError) or isinstance(exc.__context__, TimeoutError):
            raise _timed_out(where, timeout) from None
        raise FetchError(f"{where}: {exc}", "unreachable") from None
    return 250


def _any_address(_address: str) -> bool:
    return True


def _timed_out(where: str, timeout: float) -> FetchError:
    deadline = deadlines.current()
    if deadline is not None and deadlines.has_passed():
        return FetchError(f"{where}: no complete answer within {deadline.seconds:g} s", "timeout")
    return FetchError(f"{where} did not answer within {timeout:g} s", "timeout")


def _connect(
    relay: Relay, addresses: list[str], context: ssl.SSLContext, timeout: float
) -> smtplib.SMTP:
    """A connected client on the first checked address that answers."""
    last: Exception | None = None
    for address in addresses:
        client: smtplib.SMTP
        if relay.security == "tls":
            client = _SMTPOverTLS(context=context, timeout=timeout, local_hostname=_helo())
        else:
            client = _SMTP(timeout=timeout, local_hostname=_helo())
        # The name TLS verifies and SNI sends; the socket goes to the checked address.
        client._host = relay.host  # type: ignore[union-attr]  # noqa: SLF001 - the name TLS checks
        try:
            client.connect(address, relay.port)
            client.ehlo()
            return client
        except OSError as exc:
            client.close()
            last = exc
    assert last is not None
    raise last


class _SMTP(smtplib.SMTP):
    """smtplib's client on a socket that keeps to the deadline in force."""

    def _get_socket(self, host: str, port: int, timeout: float) -> socket.socket:
        return _deadline_socket(host, port, timeout, self.source_address)


class _SMTPOverTLS(smtplib.SMTP_SSL):
    """Implicit TLS on that socket (the context makes the TLS socket a `_DeadlineSSLSocket`)."""

    def _get_socket(self, host: str, port: int, timeout: float) -> socket.socket:
        plain = _deadline_socket(host, port, timeout, self.source_address)
        return self.context.wrap_socket(plain, server_hostname=self._host)  # type: ignore[attr-defined]


def _deadline_socket(host: str, port: int, timeout: float, source_address: Any) -> socket.socket:
    connected = socket.create_connection((host, port), deadlines.bound(timeout), source_address)
    sock = _DeadlineSocket(fileno=connected.detach())
    sock.settimeout(timeout)
    return sock


class _DeadlineSocket(socket.socket):
    """Each wait (a read, a whole `sendall`, one `send`) is cut to what is left of the
    deadline in force; `DeadlinePassed` (a `TimeoutError`) once it has passed."""

    _wait: float | None  # the per-operation timeout it was made with

    def _cut(self) -> None:
        if not hasattr(self, "_wait"):
            self._wait = self.gettimeout()
        self.settimeout(deadlines.bound(self._wait))

    def recv_into(self, *args: Any, **kwargs: Any) -> int:
        self._cut()
        return super().recv_into(*args, **kwargs)

    def recv(self, *args: Any, **kwargs: Any) -> bytes:
        self._cut()
        return super().recv(*args, **kwargs)

    def send(self, *args: Any, **kwargs: Any) -> int:
        self._cut()
        return super().send(*args, **kwargs)

    def sendall(self, *args: Any, **kwargs: Any) -> None:
        self._cut()
        super().sendall(*args, **kwargs)


class _DeadlineSSLSocket(_DeadlineSocket, ssl.SSLSocket):
    """The TLS socket STARTTLS or implicit TLS makes of it (through the context's
    `sslsocket_class`), cutting its waits the same way, the handshake's too."""

    def do_handshake(self, block: bool = False) -> None:
        self._cut()
        super().do_handshake(block)


def _helo() -> str:
    return socket.gethostname() or "driftgate"


def _text(reply: bytes | str) -> str:
    text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)
    return " ".join(text.split())[:200]
