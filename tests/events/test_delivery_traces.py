"""A delivery's span and a failed delivery's log line (`controller.tracing`): the message's
ids, channel, attempt and answer, the destination's host only (its URL may hold a token)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

from opentelemetry.trace import StatusCode

from controller import tracing
from controller.crypto import load_secret_box
from controller.events.delivery import deliver_due
from controller.events.outbox import emit
from controller.logs import JsonFormatter
from controller.sources.http import configured_client
from controller.store.db import Database
from tests.conftest import OrgKey, make_settings
from tests.logrecords import Lines
from tests.receivers import Receiver
from tests.traces import recording

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
TOKEN = "hook-token-5f2c"


def test_a_failed_attempt_is_an_error_span_and_one_line_then_the_retry_delivers(
    tmp_path: Path, database: Database, acme: OrgKey
) -> None:
    settings = make_settings(tmp_path, database_url=database.url, allow_private_targets=True)
    box = load_secret_box(settings)
    receiver = Receiver(fail_first=1)
    url = f"{receiver.url}/{TOKEN}?token={TOKEN}"
    logged = Lines(JsonFormatter())
    logger = logging.getLogger("driftgate.deliveries")
    logger.addHandler(logged)
    try:
        with database.transaction() as session:
            (message,) = emit(
                session,
                box,
                org_id=acme.org_id,
                event_type="incident.open",
                data={"watchId": "w_1"},
                now=NOW,
                extra_destinations=[url],
                org_defaults=False,
            )
            message_id = message.id
        with recording() as exporter, configured_client(settings) as client:
            assert deliver_due(database, box, client, NOW) == 1
            later = NOW + timedelta(minutes=5)
            assert deliver_due(database, box, client, later) == 1
        spans = exporter.get_finished_spans()
    finally:
        logger.removeHandler(logged)
        receiver.close()
    assert [s.name for s in spans] == ["deliver", "deliver"]
    failed, delivered = spans
    common = {
        tracing.MESSAGE_ID: message_id,
        tracing.ORG_ID: acme.org_id,
        tracing.EVENT_TYPE: "incident.open",
        tracing.CHANNEL: "webhook",
        tracing.DESTINATION: "http://127.0.0.1",
    }
    assert dict(failed.attributes or {}) == {
        **common,
        tracing.ATTEMPT: 1,
        tracing.HTTP_STATUS: 500,
        tracing.DELIVERY_RESULT: "retrying",
        tracing.ERROR_TYPE: "http_status",
    }
    assert failed.status.status_code == StatusCode.ERROR
    assert dict(delivered.attributes or {}) == {
        **common,
        tracing.ATTEMPT: 2,
        tracing.HTTP_STATUS: 204,
        tracing.DELIVERY_RESULT: "delivered",
    }
    assert delivered.status.status_code == StatusCode.UNSET
    (line,) = [json.loads(text) for text in logged.lines]
    assert line == {
        "ts": line["ts"],
        "level": "warning",
        "logger": "driftgate.deliveries",
        "event": "delivery.failed",
        "messageId": message_id,
        "orgId": acme.org_id,
        "watchId": None,
        "eventType": "incident.open",
        "channel": "webhook",
        "destination": "http://127.0.0.1",
        "attempt": 1,
        "httpStatus": 500,
        "failureClass": "http_status",
        "next": "retrying",
        "traceId": f"{failed.context.trace_id:032x}",
        "spanId": f"{failed.context.span_id:016x}",
    }
    assert TOKEN not in json.dumps([json.loads(s.to_json()) for s in spans]) + "".join(logged.lines)
