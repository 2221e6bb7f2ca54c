"""Every recording site of `controller.metrics`, in one process: a real controller checking a
loopback vendor, a preflight through the app, a delivery to a loopback webhook receiver, and
reconciles of a real git repository (one applied, one stalled), read back from the app's own
`/metrics` and parsed with prometheus_client's parser. The values are the process's (no run
directory here): each test compares before and after."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask

from controller.scheduler import Controller
from controller.store.db import Database
from tests.conftest import OrgKey, make_settings
from tests.factories import AGENTS, FILES, Make, run
from tests.gitrepos import RepoBuilder
from tests.receivers import Receiver
from tests.scrapes import Scrape
from tests.servers import SpecServer
from tests.specs import as_json, charges_spec

# The labels a driftgate series may carry; no watch, URL or key ever is one (cardinality).
LABELS = {"type", "result", "decision", "channel", "source", "kind", "reason", "status", "state"}
LABELS |= {"le", "version"}  # a histogram's bucket bound; the build's version


def scrape_app(app: Flask) -> Scrape:
    answer = app.test_client().get("/metrics")
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return Scrape.parse(answer.get_data(as_text=True))


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    try:
        yield running
    finally:
        running.close()


def test_a_check_a_preflight_a_delivery_and_reconciles_each_move_their_metrics(
    live_app: Flask,
    controller: Controller,
    database: Database,
    acme: OrgKey,
    server: SpecServer,
    receiver: Receiver,
    repo: RepoBuilder,
    make_reconciler: Make,
) -> None:
    before = scrape_app(live_app)
    assert before.value("driftgate_database_up") == 1
    http = live_app.test_client()
    headers = {**acme.headers, "User-Agent": "driftgate-tests"}

    # A check (the baseline), then drift: a second check, an incident, two deliveries.
    url = server.set("/openapi.json", as_json(charges_spec()))
    assert (
        http.put(
            "/api/org/notification-defaults",
            json={"destination": {"kind": "webhook", "url": receiver.url}},
            headers=headers,
        ).status_code
        == 200
    )
    watch = http.post("/api/watches", json={"name": "local", "url": url}, headers=headers).json
    assert watch is not None
    first = http.post(f"/api/watches/{watch['id']}/check?wait=60", headers=headers).json
    assert first is not None and first["watch"]["driftStatus"] == "ok"
    server.set("/openapi.json", as_json(charges_spec(refunds=False)))
    second = http.post(f"/api/watches/{watch['id']}/check?wait=60", headers=headers).json
    assert second is not None and second["watch"]["driftStatus"] == "drifted"
    # A preflight on the drifted watch.
    gate = http.post("/api/preflight", json={"watchIds": [watch["id"]]}, headers=headers)
    assert gate.status_code == 200 and gate.json is not None and not gate.json["allowed"]
    deadline = time.monotonic() + 30
    while len(receiver.received) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(receiver.received) == 2
    # Reconciles of a real repository: applied, then stalled on an unknown policy.
    repo.commit(FILES)
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    assert run(reconciler, settings).result == "applied"
    repo.commit({".driftgate/agents.yaml": AGENTS.replace("policy: careful", "policy: x")})
    assert run(reconciler, settings).result == "stalled"

    after = scrape_app(live_app)
    grew = {
        ("driftgate_checks_total", "type", "openapi"),
        ("driftgate_check_duration_seconds_count", "type", "openapi"),
        ("driftgate_preflight_total", "decision", "blocked"),
        ("driftgate_preflight_duration_seconds_count", None, None),
        ("driftgate_deliveries_total", "channel", "webhook"),
        ("driftgate_delivery_duration_seconds_count", "channel", "webhook"),
        ("driftgate_reconciles_total", "source", "fleet"),
        ("driftgate_reconcile_duration_seconds_count", "source", "fleet"),
        ("driftgate_reconcile_errors_total", "source", "fleet"),
        ("driftgate_jobs_claimed_total", "kind", "check"),
    }
    for name, label, value in sorted(grew, key=str):
        labels = {label: value} if label and value else {}
        assert after.value(name, **labels) > before.value(name, **labels), (name, labels)
    assert after.value("driftgate_checks_total", result="baseline") > before.value(
        "driftgate_checks_total", result="baseline"
    )
    assert after.value("driftgate_checks_total", result="changed") > before.value(
        "driftgate_checks_total", result="changed"
    )
    assert (
        after.value("driftgate_deliveries_total", result="success")
        >= before.value("driftgate_deliveries_total", result="success") + 2
    )
    assert after.value("driftgate_reconciles_total", source="fleet", result="stalled") == (
        before.value("driftgate_reconciles_total", source="fleet", result="stalled") + 1
    )
    # The store's gauges: the reconciled watches are new, the local one drifted and its
    # incident is open.
    assert after.value("driftgate_watches", status="drifted") == 1
    assert after.value("driftgate_watches") == 3
    assert after.value("driftgate_incidents_open", state="open") == 1
    assert before.value("driftgate_incidents_open") == 0
    # No series names a watch, a URL or anything else per object.
    assert after.label_names() <= LABELS, after.label_names() - LABELS
    assert watch["id"] not in str(after.samples)


def test_the_org_label_is_off_by_default_and_can_be_switched_on(
    app: Flask, database: Database, acme: OrgKey, tmp_path: Path
) -> None:
    """Off: no series has an `org` label. On (`metrics_org_label`, for a process that starts
    with it): the preflight's series and the store's gauges are each org's."""
    from controller import metrics
    from web.app import create_app

    headers = {**acme.headers, "User-Agent": "driftgate-tests"}
    watch = (
        app.test_client()
        .post(
            "/api/watches",
            json={"name": "w", "url": "https://api.example.com/openapi.json"},
            headers=headers,
        )
        .json
    )
    assert watch is not None
    assert "org" not in scrape_app(app).label_names()
    try:
        labelled = create_app(
            make_settings(tmp_path, database_url=database.url, metrics_org_label=True),
            database=database,
        )
        http = labelled.test_client()
        assert http.post("/api/preflight", json={"watchIds": [watch["id"]]}, headers=headers)
        scraped = scrape_app(labelled)
        assert scraped.value("driftgate_preflight_total", org=acme.org_id) == 1
        assert scraped.value("driftgate_preflight_duration_seconds_count", org=acme.org_id) == 1
        assert scraped.value("driftgate_watches", status="never_run", org=acme.org_id) == 1
        assert not scraped.has("driftgate_preflight_total", org="")
    finally:
        metrics.configure(org_label=False)
    assert "org" not in scrape_app(app).label_names()
