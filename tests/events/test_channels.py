"""The registry of delivery channels: what each one puts on the wire, and that delivery sends
through whichever channel a message names."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from controller.crypto import SecretBox, load_secret_box
from controller.events import signing
from controller.events.channels import CHANNELS, Channel, Channels, Event, Outgoing
from controller.events.channels.slack import render_slack
from controller.events.channels.webhook import WEBHOOK, render_webhook
from controller.events.delivery import send
from controller.store.models import OutboxMessage
from tests.conftest import make_settings

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
SIGNING_SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # base64 of 24 bytes
PAYLOAD: dict[str, Any] = {
    "type": "drift.detected",
    "timestamp": NOW.isoformat(),
    "data": {
        "watchId": "w_1",
        "watchName": "payments",
        "counts": {"breaking": 1, "warning": 2, "info": 0},
        "changes": [{"severity": "breaking", "summary": "GET /charges: property id removed"}],
        "at": NOW,  # not JSON: the webhook body writes it with str()
    },
}


@pytest.fixture
def box(tmp_path: Path) -> SecretBox:
    return load_secret_box(make_settings(tmp_path))


def test_the_registry_holds_webhook_and_slack_and_falls_back_to_webhook() -> None:
    # The first two; a channel added later is registered after them.
    assert [channel.name for channel in CHANNELS][:2] == ["webhook", "slack"]
    assert CHANNELS.for_message("slack").name == "slack"
    # Every name but slack went out as a signed webhook before the registry; it still does.
    assert CHANNELS.for_message("email") is WEBHOOK
    assert "email" not in CHANNELS and CHANNELS.get("email") is None


def test_a_channel_cannot_be_registered_twice() -> None:
    channels = Channels([WEBHOOK], fallback="webhook")
    with pytest.raises(ValueError, match="webhook"):
        channels.register(Channel("webhook", render_webhook))


def test_the_webhook_body_is_compact_json_signed_over_exactly_those_bytes() -> None:
    outgoing = render_webhook(Event(PAYLOAD, "msg_1_0", SIGNING_SECRET, NOW))
    assert outgoing.body == json.dumps(PAYLOAD, separators=(",", ":"), default=str).encode()
    assert dict(outgoing.headers) == {
        "webhook-id": "msg_1_0",
        "webhook-timestamp": str(int(NOW.timestamp())),
        "webhook-signature": signing.sign(
            SIGNING_SECRET, "msg_1_0", int(NOW.timestamp()), outgoing.body
        ),
        "Content-Type": "application/json",
    }
    signing.verify(SIGNING_SECRET, dict(outgoing.headers), outgoing.body, int(NOW.timestamp()))


def test_the_slack_body_is_the_readable_text_unsigned() -> None:
    outgoing = render_slack(Event(PAYLOAD, "msg_1_0", SIGNING_SECRET, NOW))
    assert dict(outgoing.headers) == {"Content-Type": "application/json"}
    assert json.loads(outgoing.body) == {
        "text": ":warning: Contract drift on *payments*\n"
        "1 breaking, 2 warning, 0 info\n"
        "• [breaking] GET /charges: property id removed"
    }
    assert outgoing.body.startswith(b'{"text": ":warning:')  # json.dumps' default separators


def message(box: SecretBox, channel: str, url: str) -> OutboxMessage:
    return OutboxMessage(
        id="m_1",
        org_id="org_1",
        event_type="drift.detected",
        channel=channel,
        destination_ciphertext=box.encrypt_json(url),
        destination_hint="mailto://?",
        payload={**PAYLOAD, "_messageId": "msg_1_0"},
        status="pending",
        next_attempt_at=NOW,
        created_at=NOW,
    )


def test_delivery_sends_what_the_messages_channel_renders(box: SecretBox) -> None:
    sent: list[tuple[str, bytes, dict[str, str]]] = []

    def render(event: Event) -> Outgoing:
        return Outgoing(f"{event.message_id}:{event.payload['type']}".encode(), {"X-Kind": "mail"})

    def transport(client: Any, url: str, outgoing: Outgoing, event: Event) -> int:
        sent.append((url, outgoing.body, dict(outgoing.headers)))
        assert event.org_id == "org_1"  # a transport may look up the org's own settings
        return 202

    channels = Channels([WEBHOOK, Channel("email", render, transport)], fallback="webhook")
    outcome = send(
        message(box, "email", "mailto:ops@example.com"),
        box,
        SIGNING_SECRET,
        client=None,
        now=NOW,
        channels=channels,
    )
    assert (outcome.success, outcome.status_code, outcome.error) == (True, 202, None)
    # The private `_messageId` is the event's id, never part of what a channel renders.
    assert sent == [("mailto:ops@example.com", b"msg_1_0:drift.detected", {"X-Kind": "mail"})]


def test_slack_tells_a_shared_schema_change_by_its_cause() -> None:
    cause = {
        "severity": "breaking",
        "summary": "response 200 property 'card.refunds.data[].reason': maxLength 5000 removed",
        "cause": "refund.reason: maxLength 5000 removed",
        "affectedCount": 385,
        "hint": "The bound is gone; readers may receive values they did not expect.",
    }
    payload = {**PAYLOAD, "data": {**PAYLOAD["data"], "changes": [cause]}}
    text = json.loads(render_slack(Event(payload, "msg_1_0", SIGNING_SECRET, NOW)).body)["text"]
    assert text.splitlines()[-1] == (
        "• [breaking] refund.reason: maxLength 5000 removed (385 operations) "
        "_The bound is gone; readers may receive values they did not expect._"
    )
