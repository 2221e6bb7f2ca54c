"""The fleet guard: trip events a guard reports, and on-demand snapshots it asks for.

A trip is idempotent per org by the client's `tripId`: the first report is recorded (and
audited), a retry with the same content answers the stored trip, a later record of the same
trip fills the fields the stored one left unset (fuseguard reports a trip twice: its index row
through the batch and its trip log; either may come first), and a `tripId` reused with a
different value for a field both set is a conflict. A guard's own record fields
(fuseguard's trip log and trip index rows: `calls`, `runId`, `deviceId`, `argsHash` ...) are
kept as sent in `guardFields`, and trips also come in batches (`record_trip_batch`), each one
idempotent on its own. A retry of the newest record is known by the SHA-256 of the canonical
JSON of its content as sent (`digest`); other records are compared field by field, as
canonical JSON, so the database's own JSON normalisation changes nothing. A
`contract_drift_blocked` trip links the preflight decision that blocked the run.

A snapshot is a check of one watch run now by the controller; the caller records the request,
queues the check, waits, and `finish_snapshot` stores what the watch looks like afterwards.
See docs/fleet-guard.md.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, cast

from pydantic import ConfigDict, Field, StringConstraints, model_validator
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from controller.drift.service import ensure_checkable
from controller.errors import Conflict, PayloadTooLarge, RequestError, Unprocessable
from controller.model import paging
from controller.model.base import ApiModel, BodyDateTime, BodyFloat, RequestModel
from controller.model.jsonvalue import MAX_DEPTH, json_value_problem
from controller.model.principal import Principal
from controller.model.watch import CURSOR_PATTERN, ChangeCounts
from controller.store import audit, jobs
from controller.store.db import Database
from controller.store.models import FuseSnapshot, FuseTrip, Job, PreflightDecision, Snapshot, Watch
from controller.watches.service import get_watch

BLOCKED_REASON = "contract_drift_blocked"
METADATA_LIMIT = 16 * 1024  # bytes of compact UTF-8 JSON
PAGE_LIMIT = 50
MAX_PAGE = 200
DEFAULT_WAIT = 10.0
MAX_WAIT = 30.0

TRIP_ID_PATTERN = r"^[A-Za-z0-9._:-]{1,200}$"
REASON_PATTERN = r"^[a-z][a-z0-9_.:-]{0,63}$"
ID_PATTERN = r"^[A-Za-z0-9._:-]{1,64}$"
LABEL_PATTERN = r"^[^\x00-\x1f\x7f]{1,200}$"
MAX_BATCH = 100

TripId = Annotated[str, StringConstraints(max_length=200, pattern=TRIP_ID_PATTERN)]
Reason = Annotated[str, StringConstraints(max_length=64, pattern=REASON_PATTERN)]
ObjectId = Annotated[str, StringConstraints(max_length=64, pattern=ID_PATTERN)]
Label = Annotated[str, StringConstraints(max_length=200, pattern=LABEL_PATTERN)]
# A guard's hash of a tool call's arguments; fuseguard sends "" for a trip without calls.
ArgsHash = Annotated[str, StringConstraints(max_length=200, pattern=r"^[^\x00-\x1f\x7f]*$")]
Cursor = Annotated[str, StringConstraints(pattern=CURSOR_PATTERN)]
SnapshotStatus = Literal["queued", "completed", "failed", "pending"]


class TripIn(RequestModel):
    """Body of `POST /v1/fuse/trips`."""

    trip_id: TripId = Field(description="the guard's id of this trip; a retry sends the same one")
    reason: Reason = Field(description="e.g. `contract_drift_blocked`, `budget_exceeded`")
    watch_id: ObjectId | None = Field(default=None, description="a watch of the org")
    agent_id: Label | None = Field(
        default=None, description="the agent that tripped; default: the decision's agent"
    )
    tool: Label | None = None
    decision_id: ObjectId | None = Field(
        default=None, description="the preflight decision (`decisionId`) the trip came from"
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description=f"free JSON, at most 16 KB serialised and {MAX_DEPTH} levels deep",
    )
    occurred_at: BodyDateTime | None = Field(default=None, description="when the guard tripped")
    # A guard's own record (fuseguard's trip log v2 and trip index rows): accepted, kept as
    # sent in `guardFields`, never interpreted. `createdAt` and `toolName` are that record's
    # names of `occurredAt` and `tool`.
    created_at: BodyDateTime | None = Field(
        default=None, description="the guard's name of `occurredAt` (fuseguard)"
    )
    tool_name: Label | None = Field(default=None, description="the guard's name of `tool`")
    agent_action: Label | None = Field(default=None, description="the guard's primary action")
    calls: list[dict[str, Any]] | None = Field(
        default=None, max_length=1000, description="the tool calls before the trip"
    )
    device_id: Label | None = None
    org_id: Label | None = Field(
        default=None, description="the guard's own org label; kept, never used for scoping"
    )
    run_id: Label | None = None
    parent_run_id: Label | None = None
    environment: Label | None = None
    endpoint_host: Label | None = None
    policy_bundle_version: Label | None = None
    policy_rule_ids: list[Label] | None = Field(default=None, max_length=200)
    eval_trace: list[dict[str, Any]] | None = Field(default=None, max_length=1000)
    args_hash: ArgsHash | None = Field(default=None, description="a trip index row's field")
    decision: Reason | None = Field(
        default=None, description="a trip index row's field, e.g. `block`"
    )

    @model_validator(mode="after")
    def _fold_guard_names(self) -> TripIn:
        # The guard's names are read as driftgate's; a pair that disagrees is left for
        # `record_trip` to refuse (422: the schema cannot say "equal when both are sent").
        if self.created_at is not None and self.occurred_at in (None, self.created_at):
            self.occurred_at, self.created_at = self.created_at, None
        if self.tool_name is not None and self.tool in (None, self.tool_name):
            self.tool, self.tool_name = self.tool_name, None
        return self

    def guard_fields(self) -> dict[str, Any]:
        """The guard's own fields that were sent (camelCase), empty when none were."""
        return self.model_dump(by_alias=True, include=set(GUARD_FIELDS), exclude_none=True)


GUARD_FIELDS = frozenset(
    {
        "agent_action",
        "calls",
        "device_id",
        "org_id",
        "run_id",
        "parent_run_id",
        "environment",
        "endpoint_host",
        "policy_bundle_version",
        "policy_rule_ids",
        "eval_trace",
        "args_hash",
        "decision",
    }
)


class TripOut(ApiModel):
    id: str
    trip_id: str
    reason: str
    watch_id: str | None
    agent_id: str | None
    tool: str | None
    decision_id: str | None
    metadata: dict[str, Any]
    guard_fields: dict[str, Any] | None = Field(
        description="the guard's own record fields as sent (fuseguard's trip log), or null"
    )
    occurred_at: datetime | None
    received_at: datetime


class TripList(ApiModel):
    trips: list[TripOut]
    next_cursor: str | None = Field(
        description="pass as `cursor` for the next page; null at the end"
    )


class TripEventIn(TripIn):
    """One trip of a batch: a trip, keyed by `idempotencyKey` (else `tripId`)."""

    # One of the keys, not null: the published schema says so, like the validator below.
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": [key], "properties": {key: {"type": "string"}}}
                for key in ("idempotencyKey", "tripId")
            ]
        }
    )

    trip_id: TripId | None = Field(  # type: ignore[assignment]
        default=None, description="the guard's id of this trip"
    )
    idempotency_key: TripId | None = Field(
        default=None, description="the key a retry repeats; default: `tripId`"
    )

    @model_validator(mode="after")
    def _has_key(self) -> TripEventIn:
        if self.idempotency_key is None and self.trip_id is None:
            raise ValueError("a trip event needs an idempotencyKey or a tripId")
        return self

    def as_trip(self) -> TripIn:
        """The trip this event records, under its key."""
        fields = self.model_dump(exclude={"idempotency_key", "trip_id"}, exclude_none=True)
        return TripIn.model_validate({**fields, "trip_id": self.key})

    @property
    def key(self) -> str:
        key = self.idempotency_key or self.trip_id
        assert key is not None  # the validator saw to it
        return key


class TripBatchIn(RequestModel):
    """Body of `POST /v1/fuse/trips/batch`."""

    events: list[TripEventIn] = Field(min_length=1, max_length=MAX_BATCH)


TripEventStatus = Literal["created", "replayed", "merged", "refused"]


class TripEventResult(ApiModel):
    idempotency_key: str
    status: TripEventStatus = Field(
        description="created (new), replayed (the same trip again: nothing new), merged (the "
        "trip was recorded before and this event filled fields it had left unset) or refused "
        "(see `error`)"
    )
    id: str | None = Field(description="the stored trip's id; null when refused")
    error: str | None = Field(default=None, description="the error code of a refused event")
    message: str | None = None


class TripBatchOut(ApiModel):
    created: int
    replayed: int
    merged: int
    refused: int
    results: list[TripEventResult] = Field(description="one per event, in the order sent")


class TripListQuery(RequestModel):
    reason: Reason | None = None
    agent_id: Label | None = None
    limit: int = Field(default=PAGE_LIMIT, ge=1, le=MAX_PAGE)
    cursor: Cursor | None = Field(default=None, description="the nextCursor of the previous page")


class SnapshotIn(RequestModel):
    """Body of `POST /v1/fuse/snapshots`."""

    watch_id: ObjectId
    reason: Label | None = Field(default=None, description="free text, kept with the snapshot")
    wait_seconds: BodyFloat = Field(
        default=DEFAULT_WAIT, ge=0, le=MAX_WAIT, description="how long to wait for the check"
    )


class SnapshotSummary(ApiModel):
    """The watch after the check (or as last known, while the check is pending)."""

    snapshot_id: str | None = Field(description="the watch's last fetched snapshot")
    fingerprint: str | None
    drift_status: str
    last_check_status: str | None
    last_checked_at: datetime | None
    failure_class: str | None
    open_changes: ChangeCounts
    incident_id: str | None
    job_id: int
    job_status: str = Field(description="queued, running, done or failed")


class SnapshotOut(ApiModel):
    id: str
    watch_id: str
    reason: str | None
    status: SnapshotStatus = Field(
        description="completed, failed, pending (the check did not finish within the wait), "
        "or queued (the request ended before the check was queued)"
    )
    requested_at: datetime
    finished_at: datetime | None
    summary: SnapshotSummary | None


class SnapshotList(ApiModel):
    snapshots: list[SnapshotOut]
    next_cursor: str | None = Field(
        description="pass as `cursor` for the next page; null at the end"
    )


class SnapshotListQuery(RequestModel):
    watch_id: ObjectId | None = None
    limit: int = Field(default=PAGE_LIMIT, ge=1, le=MAX_PAGE)
    cursor: Cursor | None = Field(default=None, description="the nextCursor of the previous page")


# Trips


TripOutcome = Literal["created", "replayed", "merged"]


def record_trip(
    session: Session, principal: Principal, data: TripIn, now: datetime
) -> tuple[FuseTrip, TripOutcome]:
    """Record a trip, or find the one recorded under its `tripId` and merge into it what this
    record adds; says which it was (`replayed` when nothing was new).

    A guard may report one trip twice in two shapes (fuseguard's trip index row through the
    batch, its trip log here): fields one left out, null or empty are filled from the other.
    Raises 409 `trip_id_reused` when both set a field to different values, 413 for metadata
    over the limit, 422 for a watch or decision the org does not have.
    """
    _check_names(data)
    _check_metadata(data.metadata)
    guard_fields = data.guard_fields()
    _check_metadata(guard_fields, "/guardFields")
    occurred_at = _utc(data.occurred_at)
    digest = trip_digest(data, occurred_at)
    existing = _find_trip(session, principal.org_id, data.trip_id)
    if existing is None:
        agent_key = _resolve(session, principal.org_id, data, data.watch_id, data.decision_id)
        trip = FuseTrip(
            org_id=principal.org_id,
            trip_id=data.trip_id,
            reason=data.reason,
            watch_id=data.watch_id,
            agent_key=agent_key,
            tool=data.tool,
            decision_id=data.decision_id,
            trip_metadata=data.metadata,
            guard_fields=guard_fields or None,
            digest=digest,
            actor=principal.actor,
            occurred_at=occurred_at,
            received_at=now,
        )
        try:
            with session.begin_nested():
                session.add(trip)
        except IntegrityError:
            # A concurrent report of the same trip won the unique constraint: merge into it.
            existing = _find_trip(session, principal.org_id, data.trip_id)
            if existing is None:
                raise
        else:
            audit.by(
                session,
                principal,
                "fuse_trip.create",
                trip.id,
                {"tripId": trip.trip_id, "reason": trip.reason, "decisionId": trip.decision_id},
            )
            return trip, "created"
    if existing.digest == digest:
        return existing, "replayed"  # the very record again: nothing to compare
    return _merge(session, principal, existing, data, occurred_at, digest)


def _resolve(
    session: Session,
    org_id: str,
    data: TripIn,
    watch_id: str | None,
    decision_id: str | None,
) -> str | None:
    """Check that `watch_id` and `decision_id` (when given) are the org's (422 otherwise), and
    return the trip's agent: `agentId`, else the decision's agent."""
    agent_key = data.agent_id
    if watch_id is not None:
        watch = session.scalar(select(Watch.id).where(Watch.org_id == org_id, Watch.id == watch_id))
        if watch is None:
            raise Unprocessable(
                "the watch is not in this org",
                code="unknown_watch",
                details=[{"path": "/watchId", "message": f"not found: {watch_id}"}],
            )
    if decision_id is not None:
        decision = session.scalar(
            select(PreflightDecision).where(
                PreflightDecision.org_id == org_id, PreflightDecision.id == decision_id
            )
        )
        if decision is None:
            raise Unprocessable(
                "no preflight decision with this id in this org",
                code="unknown_decision",
                details=[{"path": "/decisionId", "message": f"not found: {decision_id}"}],
            )
        if data.reason == BLOCKED_REASON and decision.allowed:
            raise Unprocessable(
                f"a {BLOCKED_REASON} trip must link a decision that blocked; this one allowed",
                code="decision_not_blocked",
                details=[{"path": "/decisionId", "message": "the decision allowed the run"}],
            )
        if agent_key is None:
            agent_key = decision.agent_key
    return agent_key


def _unset(value: Any) -> bool:
    """A field a record did not say: absent, null, or empty (fuseguard sends `[]` and `""`
    for what it has none of)."""
    return value is None or value in ("", [], {})


def _merge(
    session: Session,
    principal: Principal,
    found: FuseTrip,
    data: TripIn,
    occurred_at: datetime | None,
    digest: str,
) -> tuple[FuseTrip, TripOutcome]:
    """Fill the stored trip's unset fields from a later record of it (409 when a field both
    set differs); `replayed` when the record adds nothing."""
    # Locked (Postgres) so that two records merging at once cannot drop each other's fields.
    stored = session.scalar(
        select(FuseTrip)
        .where(FuseTrip.id == found.id)
        .with_for_update()
        .execution_options(populate_existing=True)  # what the lock's holder wrote, not before
    )
    assert stored is not None  # rows are never deleted but with their org
    sent = _said(data, occurred_at)
    have: dict[str, Any] = {
        "reason": stored.reason,
        "watchId": stored.watch_id,
        "agentId": stored.agent_key,
        "tool": stored.tool,
        "decisionId": stored.decision_id,
        "metadata": stored.trip_metadata,
        "occurredAt": _utc(stored.occurred_at),
    }
    guard_have = dict(stored.guard_fields or {})
    guard_sent = data.guard_fields()
    added = {k: v for k, v in sent.items() if not _unset(v) and _unset(have[k])}
    # The guard's fields are kept as sent: one it had not sent at all is kept even empty, so
    # both orders of the same two records store the same trip.
    added_guard = {
        k: v
        for k, v in guard_sent.items()
        if k not in guard_have or (not _unset(v) and _unset(guard_have[k]))
    }
    differ = [
        name
        for name, value in sent.items()
        if not _unset(value) and not _unset(have[name]) and not _same(value, have[name])
    ] + [
        f"guardFields.{name}"
        for name, value in guard_sent.items()
        if not _unset(value)
        and not _unset(guard_have.get(name))
        and not _same(value, guard_have[name])
    ]
    if differ:
        raise Conflict(
            f"trip {stored.trip_id!r} was already recorded with other content "
            f"({', '.join(differ)} differ); use a new tripId for a new trip",
            code="trip_id_reused",
        )
    if not added and not added_guard:
        return stored, "replayed"
    agent_key = _resolve(
        session, principal.org_id, data, added.get("watchId"), added.get("decisionId")
    )
    merged_guard = {**guard_have, **added_guard}
    _check_metadata(merged_guard, "/guardFields")
    stored.watch_id = stored.watch_id or added.get("watchId")
    stored.agent_key = stored.agent_key or agent_key
    stored.tool = stored.tool or added.get("tool")
    stored.decision_id = stored.decision_id or added.get("decisionId")
    if "metadata" in added:
        stored.trip_metadata = added["metadata"]
    if "occurredAt" in added:
        stored.occurred_at = added["occurredAt"]
    stored.guard_fields = merged_guard or None
    stored.digest = digest  # the newest record: its retry is a replay at once
    audit.by(
        session,
        principal,
        "fuse_trip.merge",
        stored.id,
        {
            "tripId": stored.trip_id,
            "added": sorted([*added, *(f"guardFields.{k}" for k in added_guard)]),
        },
    )
    return stored, "merged"


def _said(data: TripIn, occurred_at: datetime | None) -> dict[str, Any]:
    """The fields a trip record says, by their API names (what a later record may merge)."""
    return {
        "reason": data.reason,
        "watchId": data.watch_id,
        "agentId": data.agent_id,
        "tool": data.tool,
        "decisionId": data.decision_id,
        "metadata": data.metadata,
        "occurredAt": occurred_at,
    }


def _same(sent: Any, stored: Any) -> bool:
    """Equal as JSON (the store may give back a JSON value in another key order)."""
    if isinstance(sent, datetime) or isinstance(stored, datetime):
        return bool(sent == stored)
    return _canonical(sent) == _canonical(stored)


def trip_digest(data: TripIn, occurred_at: datetime | None) -> str:
    """SHA-256 of the canonical JSON of a trip's content as sent (absent and null are equal)."""
    said = _said(data, occurred_at)
    content = {
        "tripId": data.trip_id,
        **said,
        "occurredAt": occurred_at.isoformat() if occurred_at else None,
    }
    guard_fields = data.guard_fields()
    if guard_fields:  # absent for trips without them: their digests stay as they were
        content["guardFields"] = guard_fields
    return hashlib.sha256(_canonical(content).encode("utf-8")).hexdigest()


def trip_out(trip: FuseTrip) -> TripOut:
    return TripOut(
        id=trip.id,
        trip_id=trip.trip_id,
        reason=trip.reason,
        watch_id=trip.watch_id,
        agent_id=trip.agent_key,
        tool=trip.tool,
        decision_id=trip.decision_id,
        metadata=trip.trip_metadata,
        guard_fields=trip.guard_fields,
        occurred_at=trip.occurred_at,
        received_at=trip.received_at,
    )


def record_trip_batch(
    session: Session, principal: Principal, batch: TripBatchIn, now: datetime
) -> TripBatchOut:
    """Record each trip of a batch as `record_trip` does, in order; an event refused (a
    reused key, an unknown watch, metadata too large) is reported, and the others are kept."""
    results: list[TripEventResult] = []
    for event in batch.events:
        try:
            if event.idempotency_key and event.trip_id and event.idempotency_key != event.trip_id:
                raise Unprocessable(
                    "idempotencyKey and tripId differ; a trip has one key",
                    details=[{"path": "/tripId", "message": "differs from idempotencyKey"}],
                )
            with session.begin_nested():
                trip, outcome = record_trip(session, principal, event.as_trip(), now)
        except RequestError as refusal:
            results.append(
                TripEventResult(
                    idempotency_key=event.key,
                    status="refused",
                    id=None,
                    error=refusal.code,
                    message=refusal.message,
                )
            )
            continue
        results.append(TripEventResult(idempotency_key=event.key, status=outcome, id=trip.id))
    return TripBatchOut(
        created=sum(r.status == "created" for r in results),
        replayed=sum(r.status == "replayed" for r in results),
        merged=sum(r.status == "merged" for r in results),
        refused=sum(r.status == "refused" for r in results),
        results=results,
    )


def list_trips(session: Session, org_id: str, query: TripListQuery) -> TripList:
    """The org's trips, newest first, by a keyset cursor `<received µs>.<id>`."""
    stmt = select(FuseTrip).where(FuseTrip.org_id == org_id)
    if query.reason is not None:
        stmt = stmt.where(FuseTrip.reason == query.reason)
    if query.agent_id is not None:
        stmt = stmt.where(FuseTrip.agent_key == query.agent_id)
    rows, cursor = paging.newest_first(
        session, stmt, FuseTrip.received_at, FuseTrip.id, query.cursor, query.limit
    )
    return TripList(trips=[trip_out(r) for r in rows], next_cursor=cursor)


# Snapshots


def request_snapshot(
    session: Session, principal: Principal, data: SnapshotIn, now: datetime
) -> FuseSnapshot:
    """Record a snapshot request (`queued`) for a checkable watch of the org (404, 409)."""
    watch = get_watch(session, principal.org_id, data.watch_id)
    ensure_checkable(watch)
    snapshot = FuseSnapshot(
        org_id=principal.org_id,
        watch_id=watch.id,
        actor=principal.actor,
        reason=data.reason,
        status="queued",
        requested_at=now,
    )
    session.add(snapshot)
    session.flush()
    return snapshot


def finish_snapshot(
    session: Session, snapshot_id: str, job_id: int, job: Job | None, now: datetime
) -> SnapshotOut:
    """Store the outcome of the snapshot's check (`job`, as it stood after the wait) and the
    watch's state; `pending` when the check has not finished."""
    snapshot = session.get_one(FuseSnapshot, snapshot_id)
    watch = session.get(Watch, snapshot.watch_id)
    job_status = job.status if job is not None else "queued"
    outcome = (job.result or {}).get("outcome") if job is not None else None
    if job_status == "done":
        status: SnapshotStatus = "failed" if outcome in ("error", "skipped") else "completed"
    elif job_status == "failed":
        status = "failed"
    else:
        status = "pending"
    if watch is None:  # deleted while the check ran
        status = "failed" if status == "completed" else status
        snapshot.summary = None
    else:
        snapshot.summary = _summary(session, watch, job_id, job_status).model_dump(
            mode="json", by_alias=True
        )
    snapshot.status = status
    snapshot.job_id = job_id
    snapshot.finished_at = now if status in ("completed", "failed") else None
    session.flush()
    return snapshot_out(snapshot)


def snapshot_out(snapshot: FuseSnapshot) -> SnapshotOut:
    summary = snapshot.summary
    return SnapshotOut(
        id=snapshot.id,
        watch_id=snapshot.watch_id,
        reason=snapshot.reason,
        status=cast(SnapshotStatus, snapshot.status),
        requested_at=snapshot.requested_at,
        finished_at=snapshot.finished_at,
        summary=SnapshotSummary.model_validate(summary) if summary is not None else None,
    )


def list_snapshots(session: Session, org_id: str, query: SnapshotListQuery) -> SnapshotList:
    """The org's snapshots, newest first, by a keyset cursor `<requested µs>.<id>`."""
    stmt = select(FuseSnapshot).where(FuseSnapshot.org_id == org_id)
    if query.watch_id is not None:
        stmt = stmt.where(FuseSnapshot.watch_id == query.watch_id)
    rows, cursor = paging.newest_first(
        session, stmt, FuseSnapshot.requested_at, FuseSnapshot.id, query.cursor, query.limit
    )
    return SnapshotList(snapshots=[snapshot_out(r) for r in rows], next_cursor=cursor)


# Helpers


def _summary(session: Session, watch: Watch, job_id: int, job_status: str) -> SnapshotSummary:
    fingerprint = None
    if watch.last_snapshot_id is not None:
        fingerprint = session.scalar(
            select(Snapshot.fingerprint).where(Snapshot.id == watch.last_snapshot_id)
        )
    return SnapshotSummary(
        snapshot_id=watch.last_snapshot_id,
        fingerprint=fingerprint,
        drift_status=watch.drift_status,
        last_check_status=watch.last_check_status,
        last_checked_at=watch.last_checked_at,
        failure_class=watch.failure_class,
        open_changes=ChangeCounts(
            breaking=watch.open_breaking, warning=watch.open_warning, info=watch.open_info
        ),
        incident_id=watch.incident_id,
        job_id=job_id,
        job_status=job_status,
    )


def _find_trip(session: Session, org_id: str, trip_id: str) -> FuseTrip | None:
    return session.scalar(
        select(FuseTrip).where(FuseTrip.org_id == org_id, FuseTrip.trip_id == trip_id)
    )


def _check_names(data: TripIn) -> None:
    """A guard's name of a field that disagrees with driftgate's (both sent) is refused."""
    for alias, name in (("createdAt", "occurredAt"), ("toolName", "tool")):
        if getattr(data, "created_at" if alias == "createdAt" else "tool_name") is not None:
            raise Unprocessable(
                f"{alias} and {name} name the same thing and differ; send one of them",
                details=[{"path": f"/{alias}", "message": f"differs from {name}"}],
            )


def _check_metadata(metadata: dict[str, Any], where: str = "/metadata") -> None:
    """Metadata (or the guard's fields, at `where`) must fit the limit and be storable as JSON
    on every database."""
    size = len(_canonical(metadata).encode("utf-8", "surrogatepass"))
    name = where.lstrip("/")
    if size > METADATA_LIMIT:
        raise PayloadTooLarge(
            f"{name} is {size} bytes serialised; the limit is {METADATA_LIMIT}",
            details=[{"path": where, "message": f"at most {METADATA_LIMIT} bytes"}],
        )
    found = json_value_problem(metadata)
    if found is not None:
        path, problem = found
        raise Unprocessable(
            f"{name} cannot be stored: {problem}",
            details=[{"path": where + path, "message": problem}],
        )


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise Unprocessable(
            "occurredAt is out of range",
            details=[{"path": "/occurredAt", "message": "out of range"}],
        ) from None


def take_snapshot(
    database: Database, session: Session, principal: Principal, data: SnapshotIn, now: datetime
) -> SnapshotOut:
    """Record a snapshot request, commit it (the row exists before the check can finish), queue
    a check of the watch and wait up to `data.wait_seconds` for it; the snapshot as it then
    stands (`completed`, `failed` or `pending`)."""
    snapshot = request_snapshot(session, principal, data, now)
    session.commit()
    job_id = jobs.request_check(database, snapshot.watch_id, now)
    job = jobs.wait_for(database, job_id, data.wait_seconds)
    with database.transaction() as fresh:
        return finish_snapshot(fresh, snapshot.id, job_id, job, datetime.now(UTC))
