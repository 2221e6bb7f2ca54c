"""Sending one e-mail through an org's SMTP relay (smtplib, the standard library's client).

The relay's host comes from an API caller, so it goes through the same outbound-address guard
as checks and webhooks: resolved once, refused when private unless allowed, and connected to
by the checked address (the host name is kept for TLS verification and SNI). Implicit TLS
(`tls`, port 465) or STARTTLS (`starttls`, port 587) verify the relay's certificate against
the public CAs and the operator's `ca_bundle`; `none` sends in clear, for a relay on a trusted
network. The password is sent only to the relay it was configured with, inside TLS unless
`none`, and never appears in an error: a failure says what the relay answered.
"""

from __future__ import annotations

import smtplib
import socket
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from controller.settings import Settings
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
    """Where and how to send: the org's SMTP settings with the password decrypted."""

    host: str
    port: int
    security: Security
    sender: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)


def send(
    relay: Relay,
    recipient: str,
    data: bytes,
    settings: Settings,
    *,
    timeout: float = TIMEOUT_SECONDS,
) -> int:
    """Send `data` (a whole message) to `recipient`; 250 when the relay took it. Raises
    `FetchError` (failure classes `blocked_target`, `unreachable`, `timeout`, `tls_error`,
    `smtp_auth`, `smtp_refused`) so the outbox records and retries it like a webhook."""
    is_allowed, targets = address_rule(settings)
    try:
        addresses = reachable_addresses(relay.host, relay.port, is_allowed, targets)
    except BlockedAddress as exc:
        raise FetchError(f"SMTP relay {relay.host}: {exc}", "blocked_target") from None
    except Unresolvable as exc:
        raise FetchError(f"SMTP relay: {exc}", "unreachable") from None
    context = ssl.create_default_context()
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
    except TimeoutError:
        raise FetchError(f"{where} did not answer within {timeout:g} s", "timeout") from None
    except (smtplib.SMTPException, OSError) as exc:
        raise FetchError(f"{where}: {exc}", "unreachable") from None
    return 250


def _connect(
    relay: Relay, addresses: list[str], context: ssl.SSLContext, timeout: float
) -> smtplib.SMTP:
    """A connected client on the first checked address that answers."""
    last: Exception | None = None
    for address in addresses:
        client: smtplib.SMTP
        if relay.security == "tls":
            client = smtplib.SMTP_SSL(context=context, timeout=timeout, local_hostname=_helo())
        else:
            client = smtplib.SMTP(timeout=timeout, local_hostname=_helo())
        # The name TLS verifies and SNI sends; the socket goes to the checked address.
        client._host = relay.host  # type: ignore[attr-defined]  # noqa: SLF001 - the name TLS checks
        try:
            client.connect(address, relay.port)
            client.ehlo()
            return client
        except OSError as exc:
            client.close()
            last = exc
    assert last is not None
    raise last


def _helo() -> str:
    return socket.gethostname() or "driftgate"


def _text(reply: bytes | str) -> str:
    text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)
    return " ".join(text.split())[:200]
