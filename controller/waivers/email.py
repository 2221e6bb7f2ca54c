"""The e-mail a waiver's owner gets a week before it expires and when it has expired, when the
owner is an address and the org has an SMTP relay (its own or the server's). Pure: the notice's
data in, the whole message out."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from email.message import EmailMessage
from email.utils import format_datetime
from typing import Any


def message(
    notice: Mapping[str, Any],
    *,
    expired: bool,
    sender: str,
    recipient: str,
    message_id: str,
    now: datetime,
) -> EmailMessage:
    """The notice `waiver.expiring` (or `waiver.expired`, with `expired`) as an e-mail."""
    rule, expires = notice["rule"], notice["expires"]
    where = notice.get("operation") or notice.get("path") or notice.get("tool") or "every place"
    watches = ", ".join(notice.get("watches") or []) or "no watch of the org at the moment"
    if expired:
        subject = f"driftgate: your waiver of {rule} expired on {expires}"
        lead = (
            f"The waiver of {rule} ({where}) expired on {expires}: the findings it covered count "
            "again. The run gate blocks the watches that have them until the contract changes "
            "back, the new contract is accepted as the baseline, or a new waiver is committed."
        )
    else:
        subject = f"driftgate: your waiver of {rule} expires on {expires}"
        lead = (
            f"The waiver of {rule} ({where}) expires on {expires} (00:00 UTC). From then the "
            "findings it covers count again and the run gate blocks the watches that have them. "
            "Renew it in git (a new `expires`) or fix what it covers before then."
        )
    body = "\n".join(
        [
            lead,
            "",
            f"Watches: {watches}",
            f"Reason: {notice['reason']}",
            f"Declared in: {notice.get('file') or '?'} (source {notice.get('source') or '?'})",
            "",
            "You get this because you are the waiver's owner in .driftgate/waivers.yaml.",
        ]
    )
    mail = EmailMessage()
    mail["Subject"] = subject
    mail["From"] = sender
    mail["To"] = recipient
    mail["Date"] = format_datetime(now)
    mail["Message-ID"] = f"<{message_id}@driftgate>"
    mail.set_content(body)
    return mail
