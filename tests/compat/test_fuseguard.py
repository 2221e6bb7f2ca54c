"""fuseguard (the hosted product's circuit breaker for agents), unchanged, against a live
driftgate: every operation of it that calls the server (docs/compat.md)."""

from __future__ import annotations

import json
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.compat.clients import require_clients
from tests.compat.conftest import AGENT, AGENT_WATCH, Live
from tests.specs import as_json, charges_spec

require_clients()

from fuseguard.config import FuseConfig  # noqa: E402
from fuseguard.ingress_gate import IngressValidateGate  # noqa: E402
from fuseguard.local_store import LocalStore  # noqa: E402
from fuseguard.monitor import FuseMonitor  # noqa: E402
from fuseguard.sync_client import SyncClient  # noqa: E402
from fuseguard.trip import FuseTrip  # noqa: E402

pytestmark = pytest.mark.slow

PROFILE = {
    "id": "charge-in",
    "version": 1,
    "schema": {
        "type": "object",
        "required": ["id", "amount"],
        "properties": {"id": {"type": "string"}, "amount": {"type": "integer"}},
    },
    "normalization": {"aliases": {"charge_id": "id"}},  # the hosted profile format's map
}


@pytest.fixture(scope="module", autouse=True)
def client_environment(live: Live) -> Iterator[None]:
    """The clients' own environment: a HOME of their own (~/.fuseguard), no hosted key."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(live.home))
        patch.setenv("NO_PROXY", "127.0.0.1")
        for name in ("DRIFTGUARD_API_KEY", "DRIFTGUARD_API", "FUSEGUARD_AGENT_ID"):
            patch.delenv(name, raising=False)
        yield


@pytest.fixture(scope="module")
def drifted(live: Live) -> str:
    return live.drifted_watch("payments")


@pytest.fixture(scope="module")
def healthy(live: Live) -> str:
    url = live.specs.set("/healthy.json", as_json(charges_spec()))
    with live.http() as http:
        watch = http.post("/api/watches", json={"name": "healthy", "url": url}).json()
        checked = http.post(f"/api/watches/{watch['id']}/check?wait=60").json()
    assert checked["watch"]["driftStatus"] == "ok", checked
    watch_id: str = watch["id"]
    return watch_id


def config(live: Live, tmp_path: Path, key: str | None = None, **values: Any) -> FuseConfig:
    return FuseConfig(
        api_key=key or live.key,
        api_base=live.base,
        local_db_path=str(tmp_path / "trips.db"),
        preflight_cache_ttl_sec=0,
        **values,
    )


def trips(live: Live, **query: str) -> list[dict[str, Any]]:
    with live.http() as http:
        answer = http.get("/v1/fuse/trips", params=query)
    assert answer.status_code == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["trips"]
    return found


def test_the_drift_gate_trips_on_drift_and_reports_the_trip(
    live: Live, drifted: str, tmp_path: Path
) -> None:
    monitor = FuseMonitor(config=config(live, tmp_path, watch_ids=(drifted,)))
    with pytest.raises(FuseTrip) as tripped:
        monitor.assert_pre_call_gates("create_charge", {"amount": 5})
    trip = tripped.value.trip
    assert (trip.reason, trip.watch_id) == ("contract_drift_blocked", drifted)
    row = trip.metadata["preflight"]["blocked"][0]
    assert row["reasons"] == ["breaking_drift"] and row["driftStatus"] == "drifted"
    # The primary action is the first, and driftgate puts the fix before the waivers.
    assert trip.agent_action == row["agentActions"][0]
    assert trip.agent_action not in ("accept_baseline", "ack_incident")
    assert row["agentActions"].index("ack_incident") < len(row["agentActions"])
    # Reported through the events batch (`sync_on_trip`): nothing is left to send, and
    # driftgate lists the trip with the guard's index fields.
    assert monitor.store is not None and monitor.store.pending_sync() == []
    stored = [
        t for t in trips(live, reason="contract_drift_blocked") if t["tripId"] == trip.trip_id
    ]
    assert len(stored) == 1
    assert stored[0]["guardFields"]["decision"] == "block"
    assert stored[0]["guardFields"]["deviceId"] == "local"


def test_the_agent_gate_trips_on_its_policys_409_until_the_incident_is_acknowledged(
    live: Live, tmp_path: Path
) -> None:
    watch_id = live.watch_id(AGENT_WATCH)  # declared in acme's git source
    live.drift(watch_id, f"/{AGENT_WATCH}.json")
    monitor = FuseMonitor(config=config(live, tmp_path, agent_id=AGENT))
    with pytest.raises(FuseTrip) as tripped:
        monitor.assert_pre_call_gates("post_ledger_entry", {"amount": 5})
    trip = tripped.value.trip
    assert trip.reason == "contract_drift_blocked" and trip.watch_id == watch_id
    assert trip.metadata["policyBlocked"] is True  # the 409 of `staging-strict`
    row = trip.metadata["blocked"][0]
    assert row["reasons"] == ["breaking_drift", "policy_block:block_new_runs"]
    assert trip.agent_action == row["agentActions"][0] != "accept_baseline"
    stored = [
        t for t in trips(live, reason="contract_drift_blocked") if t["tripId"] == trip.trip_id
    ]
    assert len(stored) == 1
    # Acknowledged (as a person does after review), the agent runs again.
    with live.http() as http:
        acked = http.post(f"/api/agents/{AGENT}/ack", json={"note": "reviewed"})
    assert acked.status_code == 200, acked.text
    FuseMonitor(config=config(live, tmp_path, agent_id=AGENT)).assert_pre_call_gates(
        "post_ledger_entry", {"amount": 5}
    )


def test_a_healthy_watch_list_lets_the_call_through(
    live: Live, healthy: str, tmp_path: Path
) -> None:
    monitor = FuseMonitor(config=config(live, tmp_path, watch_ids=(healthy,)))
    monitor.assert_pre_call_gates("create_charge", {"amount": 5})  # no trip


def test_another_orgs_watch_is_not_found_and_trips(
    live: Live, drifted: str, tmp_path: Path
) -> None:
    monitor = FuseMonitor(config=config(live, tmp_path, key=live.beta_key, watch_ids=(drifted,)))
    with pytest.raises(FuseTrip) as tripped:
        monitor.assert_contract_drift_clear()
    row = tripped.value.trip.metadata["blocked"][0]
    assert (row["reasons"], row["agentActions"]) == (["not_found"], ["check_watch_id"])
    assert "name" not in row or row["name"] is None  # nothing of acme's watch is told


def test_a_retried_trip_event_is_recorded_once(live: Live, tmp_path: Path) -> None:
    store = LocalStore.open(tmp_path / "trips.db")
    client = SyncClient(api_base=live.base, api_key=live.key, store=store)
    event = {
        "tripId": "fg_retry000001",
        "deviceId": "laptop-7",
        "reason": "budget_exceeded",
        "tool": "search",
        "argsHash": "0f3c",
        "decision": "block",
        "createdAt": "2026-11-27T01:02:03+00:00",
        "evalTrace": [],
        "policyRuleIds": [],
        "idempotencyKey": "fg_retry000001",
    }
    store.enqueue_sync("block", event)
    store.enqueue_sync("block", event)  # the answer was lost: the guard sends it again
    assert client.push_pending() == 2 and store.pending_sync() == []
    stored = [t for t in trips(live, reason="budget_exceeded") if t["tripId"] == event["tripId"]]
    assert len(stored) == 1 and stored[0]["tool"] == "search"
    # The same key for other content is reported as refused; the batch itself is accepted.
    with live.http() as http:
        answer = http.post(
            "/v1/fuseguard/events/batch", json={"events": [{**event, "reason": "x"}]}
        ).json()
    assert answer["results"][0]["status"] == "refused"
    assert answer["results"][0]["error"] == "trip_id_reused"


def test_a_trip_log_is_accepted_by_the_trip_route(live: Live, tmp_path: Path) -> None:
    log = tmp_path / "trip.json"
    monitor = FuseMonitor(config=config(live, tmp_path, trip_log_path=str(log), sync_on_trip=False))
    with pytest.raises(FuseTrip):
        for _ in range(5):
            monitor.record_call(tool="search", args={"q": "refunds"}, status_code=500)
    record = json.loads(log.read_text())
    assert record["reason"] == "loop_detected" and record["calls"]
    with live.http() as http:
        created = http.post("/v1/fuse/trips", json=record)
        again = http.post("/v1/fuse/trips", json=record)
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["tool"] == "search" and body["occurredAt"] is not None
    assert body["guardFields"]["calls"] == record["calls"]
    assert body["guardFields"]["runId"] == record["runId"]
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"


def test_a_trip_log_after_the_synced_trip_fills_in_its_watch_and_action(
    live: Live, drifted: str, tmp_path: Path
) -> None:
    """fuseguard reports a trip through the batch (`sync_on_trip`) and writes its trip log;
    the log posted afterwards fills what the index row lacked (issue 40, point 10: before,
    409 `trip_id_reused`, and the trip kept `watchId: null` and empty metadata)."""
    log = tmp_path / "trip.json"
    monitor = FuseMonitor(
        config=config(live, tmp_path, watch_ids=(drifted,), trip_log_path=str(log))
    )
    with pytest.raises(FuseTrip) as tripped:
        monitor.assert_pre_call_gates("create_charge", {"amount": 5})
    trip = tripped.value.trip
    assert monitor.store is not None and monitor.store.pending_sync() == []  # synced first
    [synced] = [t for t in trips(live) if t["tripId"] == trip.trip_id]
    assert synced["watchId"] is None and synced["metadata"] == {}
    record = json.loads(log.read_text())
    with live.http() as http:
        merged = http.post("/v1/fuse/trips", json=record)
        again = http.post("/v1/fuse/trips", json=record)
    assert merged.status_code == 200, merged.text
    body = merged.json()
    assert (body["id"], body["watchId"]) == (synced["id"], drifted)
    assert body["guardFields"]["agentAction"] == trip.agent_action
    assert body["guardFields"]["decision"] == "block"  # the index row's, kept
    assert body["metadata"]["preflight"]["allowed"] is False
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert [t for t in trips(live) if t["tripId"] == trip.trip_id] == [body]


def test_the_ingress_gate_validates_with_driftgate(live: Live, tmp_path: Path) -> None:
    gate = IngressValidateGate(config(live, tmp_path, ingress_profile=PROFILE))
    good = gate.validate_payload({"charge_id": "ch_1", "amount": 5})
    assert (good.ok, good.status_code) == (True, 200), good.payload
    bad = gate.validate_payload({"id": "ch_1"})
    assert (bad.ok, bad.status_code) == (False, 422)
    assert [e["path"] for e in bad.payload["errors"]] == ["/amount"]
    monitor = FuseMonitor(config=config(live, tmp_path, ingress_profile=PROFILE))
    with pytest.raises(FuseTrip) as tripped:
        monitor.assert_ingress_valid({"amount": "five"}, tool="create_charge")
    assert tripped.value.trip.reason == "ingress_validate_blocked"


def test_the_hosted_control_plane_routes_are_refused_by_design(live: Live, tmp_path: Path) -> None:
    store = LocalStore.open(tmp_path / "trips.db")
    client = SyncClient(api_base=live.base, api_key=live.key, store=store)
    assert client.pull_policy_bundle() is None  # the guard keeps its local bundle
    with pytest.raises(urllib.error.HTTPError) as refused:
        client.enroll("enrol-token", {"deviceId": "laptop-7", "platform": "linux"})
    assert refused.value.code == 501
    envelope = json.loads(refused.value.read())
    assert envelope["error"] == "not_self_hosted" and "driftgate keys create" in envelope["message"]
    assert client._post_json("/v1/fuseguard/devices/heartbeat", {"deviceId": "d"}) is False
    assert client.upload_trace("tr_1", "2026-01-01T00:00:00+00:00") is False
    assert not (live.home / ".fuseguard" / "device.json").exists()


def test_the_login_check_and_the_published_aliases(live: Live) -> None:
    with live.http() as http:
        me = http.get("/api/me").json()
        document = http.get("/openapi.json").json()
    assert (me["org"], me["plan"], me["products"]) == ("acme", "pro", ["replay_cloud"])
    assert me["credential"]["kind"] == "api_key" and live.key not in json.dumps(me)
    with live.http("dg_not_a_key") as http:
        assert http.get("/api/me").status_code == 401
    batch = document["paths"]["/v1/fuseguard/events/batch"]["post"]
    assert batch["x-driftgate-compat"] == {
        "client": "fuseguard",
        "aliasOf": "POST /v1/fuse/trips/batch",
    }
    enroll = document["paths"]["/v1/fuseguard/devices/enroll"]["post"]
    assert enroll["x-driftgate-compat"]["refused"] == "not_self_hosted"
    assert "501" in enroll["responses"]
