"""The fleet guard: trip events and on-demand snapshots under `/v1/fuse` (org-scoped)."""

from __future__ import annotations

from controller.fuse import service
from web.api import REGISTRY
from web.routes import Call, Reply

route = REGISTRY.tagged("fuse")

# Each snapshot runs a check against the vendor, so the route is throttled per org and client.
SNAPSHOTS_PER_MINUTE = 30
SNAPSHOT_BURST = 10


@route(
    "POST /v1/fuse/trips",
    "Record a fleet-guard trip",
    body=service.TripIn,
    responses={200: service.TripOut, 201: service.TripOut},
    errors=(409, 413, 422),
)
def record_trip(call: Call) -> Reply:
    """Records a trip (201). Idempotent by `tripId`: the same trip again, or a record of it
    that adds nothing, answers the stored one (200, header `Idempotent-Replayed: true`); a
    record of it that sets fields the stored one left unset (null or empty) fills them and
    answers the merged trip (200); a `tripId` reused with a different value for a field both
    set is 409 `trip_id_reused`. `decisionId` links the preflight decision the trip came from (a
    `contract_drift_blocked` trip needs one that blocked: 422 `decision_not_blocked`); without
    `agentId` the decision's agent is taken. A watch or decision the org does not have is 422
    (`unknown_watch`, `unknown_decision`); metadata over 16 KB serialised is 413."""
    trip, outcome = service.record_trip(call.session, call.principal_required, call.body, call.now)
    if outcome == "created":
        return Reply(201, service.trip_out(trip))
    if outcome == "merged":
        return Reply(200, service.trip_out(trip))
    return Reply(200, service.trip_out(trip), {"Idempotent-Replayed": "true"})


@route("POST /v1/fuse/trips/batch", "Record fleet-guard trips in a batch", body=service.TripBatchIn)
def record_trip_batch(call: Call) -> service.TripBatchOut:
    """Records 1-100 trips (`events`), each as `POST /v1/fuse/trips` records one, keyed by its
    `idempotencyKey` (else `tripId`): 200 with one result per event, in order: `created`,
    `replayed` (the same trip again, nothing written), `merged` (a trip recorded before, whose
    unset fields this event filled) or `refused` with the error code a single
    report would get (`trip_id_reused`, `unknown_watch`, `payload_too_large` ...); a refused
    event leaves the others recorded. A body that breaks the schema is a 400 for the batch."""
    return service.record_trip_batch(call.session, call.principal_required, call.body, call.now)


@route("GET /v1/fuse/trips", "List fleet-guard trips", query=service.TripListQuery)
def list_trips(call: Call) -> service.TripList:
    """The org's trips, newest first, filtered by `reason` and `agentId`; `limit` 1-200 (50),
    `cursor` from `nextCursor`."""
    return service.list_trips(call.session, call.org_id, call.query)


@route(
    "POST /v1/fuse/snapshots",
    "Snapshot a watch now",
    body=service.SnapshotIn,
    status=201,
    errors=(404, 409, 429),
)
def create_snapshot(call: Call) -> service.SnapshotOut:
    """Runs a check of the watch now and waits up to `waitSeconds` (0-30, default 10) for it;
    answers 201 with the snapshot: `completed`, `failed` (the check could not fetch or parse the
    contract) or `pending` (still running; follow the watch). Rate limited per org and client
    (30 a minute, bursts of 10). Another org's watch is 404; a paused watch 409
    `watch_paused`."""
    call.rate_limit(
        f"fuse.snapshots:{call.org_id}", per_minute=SNAPSHOTS_PER_MINUTE, burst=SNAPSHOT_BURST
    )
    return service.take_snapshot(
        call.database, call.session, call.principal_required, call.body, call.now
    )


@route("GET /v1/fuse/snapshots", "List fleet-guard snapshots", query=service.SnapshotListQuery)
def list_snapshots(call: Call) -> service.SnapshotList:
    """The org's snapshots, newest first, optionally of one watch; `limit` 1-200 (50),
    `cursor` from `nextCursor`."""
    return service.list_snapshots(call.session, call.org_id, call.query)
