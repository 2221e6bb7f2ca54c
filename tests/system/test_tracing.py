"""Traces end to end (issue 43, point 2): `driftgate up` with the standard OpenTelemetry
variables pointing at a real OTLP/HTTP receiver on loopback, which decodes the protobuf it is
sent. A check's trace arrives with its four stages, a request's span continues the caller's
`traceparent`, and a failing check logs one line with its ids and trace id, and none of the
credentials the watch carries (in its URL's query, in its headers), there or in any span."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from controller import tracing
from controller.store.db import Database
from controller.store.models import Watch
from tests.processes import (
    DRIFTGATE,
    driftgate_env,
    free_port,
    spawn,
    stop_process,
    wait_until_healthy,
)
from tests.servers import spec_server
from tests.specs import as_json, charges_spec
from tests.traces import OtlpReceiver, Received

# Real processes end to end: left out of `make check`, run by `make test`.
pytestmark = pytest.mark.slow

TRACE = "0af7651916cd43dd8448eb211c80319c"
CALLER = "b7ad6b7169203331"
SECRETS = ("query-secret-41", "header-secret-42", "bearer-secret-43")
STAGES = ["fetch", "parse", "diff", "record"]
SERVER, INTERNAL, ERROR = 2, 1, 2  # the protobuf's SpanKind and StatusCode values


@pytest.fixture
def collector() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver()
    try:
        yield receiver
    finally:
        receiver.close()


def driftgate(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [*DRIFTGATE, *args], env=env, check=True, capture_output=True, text=True, timeout=60
    )
    return done.stdout.strip()


def children(spans: list[Received], parent: Received) -> list[Received]:
    return [s for s in spans if s.parent_id == parent.span_id and s.trace_id == parent.trace_id]


def a_check(result: str, watch_id: str) -> object:
    """A finder for `OtlpReceiver.wait_for`: the watch's check span with `result` whose
    children have all arrived too (each stage ends, and is exported, before its check)."""

    def found(spans: list[Received]) -> Received | None:
        for span in spans:
            attributes = span.attributes
            if (
                span.name == "check"
                and attributes.get(tracing.WATCH_ID) == watch_id
                and attributes.get(tracing.CHECK_RESULT) == result
            ):
                return span
        return None

    return found


def test_up_exports_a_checks_trace_and_a_requests_span_to_an_otlp_receiver(
    tmp_path: Path, database: Database, collector: OtlpReceiver
) -> None:
    port = free_port()
    env = driftgate_env(database.url, tmp_path, workers="1", allow_private_targets="true")
    env.update(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "200",  # milliseconds between exports
        }
    )
    log_path = tmp_path / "server.log"
    base = f"http://127.0.0.1:{port}"
    with log_path.open("w") as log, spec_server() as vendor:
        process = spawn([*DRIFTGATE, "up", "--port", str(port)], env=env, stdout=log, stderr=log)
        try:
            wait_until_healthy(base, process, log_path)
            driftgate(env, "orgs", "create", "acme", "--plan", "pro")
            key = driftgate(env, "keys", "create", "--org", "acme")
            auth = {"Authorization": f"Bearer {key}", "User-Agent": "driftgate-tests"}
            with httpx.Client(base_url=base, headers=auth, timeout=60) as http:
                url = vendor.set("/openapi.json", as_json(charges_spec()))
                watch = http.post("/api/watches", json={"name": "local", "url": url}).json()
                first = http.post(f"/api/watches/{watch['id']}/check?wait=60").json()
                assert first["watch"]["driftStatus"] == "ok", first
                vendor.set("/openapi.json", as_json(charges_spec(refunds=False)))
                traced = {"traceparent": f"00-{TRACE}-{CALLER}-01"}
                second = http.post(f"/api/watches/{watch['id']}/check?wait=60", headers=traced)
                assert second.json()["watch"]["driftStatus"] == "drifted"
                gone = http.post(
                    "/api/watches",
                    json={
                        "name": "gone",
                        "url": vendor.url(f"/gone.json?token={SECRETS[0]}"),
                        "watchType": "openapi",
                        "headers": {
                            "X-Api-Key": SECRETS[1],
                            "Authorization": f"Bearer {SECRETS[2]}",
                        },
                    },
                ).json()
                failed = http.post(f"/api/watches/{gone['id']}/check?wait=60").json()
                assert failed["result"]["outcome"] == "error", failed
            changed = collector.wait_for(a_check("changed", watch["id"]))
            failing = collector.wait_for(a_check("error", gone["id"]))
            request = collector.wait_for(
                lambda spans: next((s for s in spans if s.trace_id == TRACE), None)
            )
        finally:
            stop_process(process, timeout=60)
    spans = list(collector.spans)

    # The check's trace: the check span, its four stages as children, one trace.
    with database.session() as session:
        org_id = session.get(Watch, watch["id"]).org_id  # type: ignore[union-attr]
    assert changed.parent_id == "" and changed.kind == INTERNAL
    stages = children(spans, changed)
    assert [s.name for s in stages] == STAGES
    assert {s.resource["driftgate.process"] for s in [changed, *stages]} == {"controller"}
    assert changed.resource["service.name"] == "driftgate"
    controller_id = changed.attributes[tracing.CONTROLLER_ID]
    assert changed.attributes == {
        tracing.WATCH_ID: watch["id"],
        tracing.CONTROLLER_ID: controller_id,
        tracing.ORG_ID: org_id,
        tracing.WATCH_TYPE: "openapi",
        tracing.CHECK_RESULT: "changed",
    }
    assert changed.status != ERROR and all(s.status != ERROR for s in stages)

    # The request that asked for it: a server span under the caller's traceparent.
    assert request.parent_id == CALLER and request.kind == SERVER
    assert request.name == "POST /api/watches/<watch_id>/check"
    assert request.resource["driftgate.process"] == "web"
    assert request.attributes[tracing.HTTP_ROUTE] == "/api/watches/<watch_id>/check"
    assert request.attributes[tracing.HTTP_STATUS] == 200

    # The failing check: an error span whose fetch saw the 404.
    assert (failing.status, failing.status_message) == (ERROR, "http_error")
    assert failing.attributes[tracing.HTTP_STATUS] == 404
    assert [s.name for s in children(spans, failing)] == ["fetch", "record"]

    # Its log line: the ids, the controller, the trace; no credential anywhere.
    text = log_path.read_text()
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    started = [x["process"] for x in lines if x["event"] == "tracing.started"]
    assert sorted(started) == ["controller", "web"]
    # One line a failed check: the check asked for, and on a busy machine maybe the
    # controller's own first round of the new watch as well.
    failures = [x for x in lines if x["event"] == "check.failed"]
    assert failures
    for line in failures:
        assert {k: line[k] for k in ("watchId", "orgId", "type", "failureClass", "httpStatus")} == {
            "watchId": gone["id"],
            "orgId": org_id,
            "type": "openapi",
            "failureClass": "http_error",
            "httpStatus": 404,
        }
        assert line["controller"] == controller_id
    assert failing.trace_id in {line["traceId"] for line in failures}
    exported = json.dumps([(s.name, s.attributes, s.status_message) for s in spans])
    assert [secret for secret in SECRETS if secret in text + exported] == []
