"""A reconcile's span and its result's log line (`controller.tracing`): the source, the
revision, the result and the controller that ran it; a revision that fails is an error span
and a line with its status message, never a header's value from the environment."""

from __future__ import annotations

import json
import logging

from opentelemetry.trace import StatusCode

from controller import tracing
from controller.logs import JsonFormatter
from tests.conftest import OrgKey
from tests.factories import ENV, FILES, Make, run
from tests.gitrepos import RepoBuilder
from tests.logrecords import Lines
from tests.traces import recording

CONTROLLER = "host:7:beef"


def test_each_reconcile_is_a_span_and_a_line_naming_its_controller(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey
) -> None:
    applied = repo.commit(FILES)
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    reconciler.controller = CONTROLLER
    logged = Lines(JsonFormatter())
    logger = logging.getLogger("driftgate.reconcile")
    logger.addHandler(logged)
    logger.setLevel(logging.INFO)
    try:
        with recording() as exporter:
            assert run(reconciler, settings).result == "applied"
            broken = repo.commit({**FILES, ".driftgate/agents.yaml": "version: [1"})
            assert run(reconciler, settings).result == "stalled"
        spans = exporter.get_finished_spans()
    finally:
        logger.removeHandler(logged)
        logger.setLevel(logging.NOTSET)
    assert [s.name for s in spans] == ["reconcile", "reconcile"]
    ok, stalled = spans
    assert dict(ok.attributes or {}) == {
        tracing.SOURCE_ID: "fleet",
        tracing.CONTROLLER_ID: CONTROLLER,
        tracing.REVISION: applied,
        tracing.RECONCILE_RESULT: "applied",
    }
    assert ok.status.status_code == StatusCode.UNSET
    assert (stalled.attributes or {})[tracing.REVISION] == broken
    assert (stalled.status.status_code, stalled.status.description) == (
        StatusCode.ERROR,
        "stalled",
    )
    first, second = (json.loads(line) for line in logged.lines)
    assert {k: first[k] for k in ("event", "source", "result", "revision", "controller")} == {
        "event": "reconcile.complete",
        "source": "fleet",
        "result": "applied",
        "revision": applied,
        "controller": CONTROLLER,
    }
    assert first["traceId"] == f"{ok.context.trace_id:032x}"
    assert {k: second[k] for k in ("result", "revision", "message", "problems")} == {
        "result": "stalled",
        "revision": broken,
        "message": "invalid revision",
        "problems": 1,
    }
    assert second["traceId"] == f"{stalled.context.trace_id:032x}"
    secret = ENV["GITHUB_TOKEN"].split()[-1]
    assert secret not in "".join(logged.lines)
