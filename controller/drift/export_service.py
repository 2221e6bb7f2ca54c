"""Drift history export: JSON, CSV and a signed audit file, streamed in batches.

The audit file (`driftgate-drift-audit-v1`) holds the events, the acknowledgement trail and
the preflight decisions, and ends with `"signature": "hmac-sha256:<key id>:<hex>"`: an
HMAC-SHA256 over every byte of the file before `,"signature"`, keyed by a key derived from
DRIFTGATE_SECRET_KEY. `driftgate audit verify FILE` checks it with every configured key, so
files signed before a key rotation still verify while the old key is listed.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.crypto import SecretBox
from controller.diffs.explain import with_hints
from controller.drift.service import ack_trail, iter_events
from controller.model.base import RequestModel, utc_iso
from controller.store.models import DriftEvent, Incident, PreflightDecision, Watch
from controller.store.models import vendor_of as store_vendor_of
from controller.store.snapshots import decode_changes

JSON_SCHEMA = "driftgate-drift-export-v1"
AUDIT_SCHEMA = "driftgate-drift-audit-v1"
SIGNATURE_MARK = b',"signature":"'
CSV_COLUMNS = (
    "id",
    "watchId",
    "watchName",
    "watchUrl",
    "watchType",
    "vendor",
    "incidentStatus",
    "breakingCount",
    "warningCount",
    "infoCount",
    "detectedAt",
    "changesJson",
)


class AuditVerificationError(ValueError):
    """An audit file is malformed, tampered with, or signed with an unknown key."""


def vendor_of(watch: Watch) -> str:
    """The `vendor:` tag of a watch, else its host (kept on the row: `Watch.vendor`)."""
    return watch.vendor or store_vendor_of(watch.tags, watch.url)


def event_record(event: DriftEvent, watch: Watch, statuses: dict[str, str]) -> dict[str, Any]:
    return {
        "id": event.id,
        "watchId": watch.id,
        "watchName": watch.name,
        "watchUrl": watch.url,
        "watchType": watch.watch_type,
        "vendor": vendor_of(watch),
        "incidentStatus": statuses.get(event.incident_id or ""),
        "breakingCount": event.breaking_count,
        "warningCount": event.warning_count,
        "infoCount": event.info_count,
        "detectedAt": utc_iso(event.detected_at),
        "changes": with_hints(decode_changes(event.changes)),
    }


def _incident_statuses(session: Session, org_id: str) -> dict[str, str]:
    rows = session.execute(select(Incident.id, Incident.status).where(Incident.org_id == org_id))
    return {row[0]: row[1] for row in rows}


def _records(session: Session, org_id: str) -> Iterator[dict[str, Any]]:
    statuses = _incident_statuses(session, org_id)
    for event, watch in iter_events(session, org_id):
        yield event_record(event, watch, statuses)


def stream_json(session: Session, org_id: str, now: datetime) -> Iterator[str]:
    yield json.dumps({"schema": JSON_SCHEMA, "exportedAt": utc_iso(now)})[:-1] + ',"events":['
    for index, record in enumerate(_records(session, org_id)):
        yield ("," if index else "") + json.dumps(record, separators=(",", ":"), default=str)
    yield "]}\n"


def stream_csv(session: Session, org_id: str) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for record in _records(session, org_id):
        changes = record.pop("changes")
        writer.writerow([*record.values(), json.dumps(changes, separators=(",", ":"), default=str)])
        if buffer.tell() > 65536:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def stream_audit(session: Session, org_id: str, now: datetime, box: SecretBox) -> Iterator[str]:
    key = box.derived_keys("audit")[0]
    mac = hmac.new(key, digestmod=hashlib.sha256)

    def signed(chunk: str) -> str:
        mac.update(chunk.encode())
        return chunk

    yield signed(
        json.dumps({"schema": AUDIT_SCHEMA, "exportedAt": utc_iso(now)})[:-1] + ',"events":['
    )
    for index, record in enumerate(_records(session, org_id)):
        yield signed(
            ("," if index else "") + json.dumps(record, separators=(",", ":"), default=str)
        )
    trail = json.dumps(ack_trail(session, org_id), separators=(",", ":"), default=str)
    yield signed(f'],"ackTrail":{trail},"preflightDecisions":[')
    for index, decision in enumerate(_decisions(session, org_id)):
        yield signed(
            ("," if index else "") + json.dumps(decision, separators=(",", ":"), default=str)
        )
    yield signed("]")
    yield f'{SIGNATURE_MARK.decode()}hmac-sha256:{key_id(key)}:{mac.hexdigest()}"}}\n'


def _decisions(session: Session, org_id: str) -> Iterator[dict[str, Any]]:
    """Every recorded preflight decision of the org, oldest first, read in batches."""
    rows = session.execute(
        select(PreflightDecision)
        .where(PreflightDecision.org_id == org_id)
        .order_by(PreflightDecision.evaluated_at, PreflightDecision.id)
        .execution_options(yield_per=500)
    ).scalars()
    for row in rows:
        yield {
            "decisionId": row.id,
            "evaluatedAt": utc_iso(row.evaluated_at),
            "actor": row.actor,
            "agentId": row.agent_key,
            "watchCount": row.watch_count,
            "allowed": row.allowed,
            "policyBlocked": row.policy_blocked,
            "dryRun": row.dry_run,
            "status": row.status_code,
            "durationMs": row.duration_ms,
            "inputs": row.inputs,
            "result": row.result,
        }


def key_id(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()[:8]


def verify_audit(data: bytes, box: SecretBox) -> dict[str, Any]:
    """Check an audit file's signature; return the parsed document or raise."""
    position = data.rfind(SIGNATURE_MARK)
    if position < 0:
        raise AuditVerificationError("no signature found: not a driftgate audit export")
    try:
        document = json.loads(data)
    except ValueError as exc:
        raise AuditVerificationError(f"not valid JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("schema") != AUDIT_SCHEMA:
        raise AuditVerificationError(f"not a {AUDIT_SCHEMA} document")
    try:
        scheme, kid, digest = str(document.get("signature", "")).split(":")
    except ValueError:
        raise AuditVerificationError("malformed signature") from None
    if scheme != "hmac-sha256":
        raise AuditVerificationError(f"unknown signature scheme {scheme!r}")
    for key in box.derived_keys("audit"):
        if key_id(key) == kid:
            expected = hmac.new(key, data[:position], hashlib.sha256).hexdigest()
            if hmac.compare_digest(expected, digest):
                return document
            raise AuditVerificationError("signature mismatch: the file was changed after export")
    raise AuditVerificationError(f"signed with key {kid}, which is not among the configured keys")


class ExportQuery(RequestModel):
    format: Literal["json", "csv", "audit"] = "json"


def media(fmt: str) -> tuple[str, str]:
    """The media type and file extension of an export format."""
    if fmt == "csv":
        return "text/csv", "csv"
    return "application/json", "audit.json" if fmt == "audit" else "json"


def stream(session: Session, org_id: str, fmt: str, now: datetime, box: SecretBox) -> Iterator[str]:
    """The org's drift history in `fmt`, as text chunks read from `session`."""
    if fmt == "csv":
        return stream_csv(session, org_id)
    if fmt == "audit":
        return stream_audit(session, org_id, now, box)
    return stream_json(session, org_id, now)
