"""Checks end to end: a real loopback server whose spec the test changes, every transition."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from controller.checks import engine as checks_module
from controller.checks.engine import CheckResult, Fetched, http_fetcher, run_check
from controller.crypto import load_secret_box
from controller.diffs.loader import MAX_NESTING
from controller.diffs.rules import CATALOG
from controller.model.watch import WatchCreate
from controller.sources.http import make_client
from controller.store.db import Database
from controller.store.models import DriftEvent, Incident, OutboxMessage, Snapshot, Watch
from controller.store.snapshots import decode_changes
from controller.watches import service as watch_service
from tests.checks.conftest import Harness, serve
from tests.conftest import OrgKey, make_settings
from tests.servers import SpecServer
from tests.specs import as_json, charges_spec


def test_first_check_sets_the_baseline_then_unchanged_is_cheap(harness: Harness) -> None:
    serve(harness)
    watch_id = harness.watch(webhookUrl="https://hooks.example.com/drift")
    assert harness.get(watch_id).drift_status == "never_run"
    first = harness.check(watch_id)
    assert first.outcome == "baseline" and first.status == "ok"
    watch = harness.get(watch_id)
    assert watch.baseline_snapshot_id == watch.last_snapshot_id is not None
    assert watch.etag and watch.last_check_status == "ok"
    again = harness.check(watch_id)
    assert again.outcome == "unchanged" and again.status == "ok"
    # The second fetch was conditional and the server answered 304.
    assert harness.server.requests[-1][2].get("If-None-Match") == watch.etag
    assert harness.events() == []


def test_breaking_drift_opens_an_incident_and_a_revert_resolves_it(harness: Harness) -> None:
    serve(harness)
    watch_id = harness.watch(webhookUrl="https://hooks.example.com/drift")
    harness.check(watch_id)
    serve(harness, required=("id",), refunds=False)
    drifted = harness.check(watch_id)
    assert drifted.status == "drifted" and drifted.counts["breaking"] >= 2
    watch = harness.get(watch_id)
    assert watch.open_breaking == drifted.counts["breaking"] and watch.incident_id
    with harness.database.session() as session:
        incident = session.get(Incident, watch.incident_id)
        assert incident is not None and incident.status == "open"
        event = session.get(DriftEvent, drifted.drift_event_id)
        assert event is not None and event.incident_id == incident.id
        rules = {c["rule"] for c in decode_changes(event.changes)}
    assert "endpoint-removed" in rules
    assert harness.events() == ["incident.open", "drift.detected"]
    with harness.database.session() as session:
        payload = session.scalars(
            select(OutboxMessage.payload).where(OutboxMessage.event_type == "drift.detected")
        ).one()
    sent = {c["rule"]: c["hint"] for c in payload["data"]["changes"]}
    # What a client sees fail, then the rule's hint (issue 41, point 5).
    assert sent["endpoint-removed"].startswith("A request to `GET /v1/")
    assert sent["endpoint-removed"].endswith(" " + CATALOG["endpoint-removed"].hint)

    serve(harness)  # the vendor reverts
    reverted = harness.check(watch_id)
    assert reverted.status == "ok"
    watch = harness.get(watch_id)
    assert watch.incident_id is None and watch.open_breaking == 0
    with harness.database.session() as session:
        incident = session.scalars(select(Incident)).one()
        assert incident.status == "resolved" and incident.resolution == "reverted"
    assert harness.events()[-2:] == ["incident.resolved", "drift.cleared"]


def test_warning_only_keeps_ok_and_the_baseline(harness: Harness) -> None:
    serve(harness)
    watch_id = harness.watch(webhookUrl="https://hooks.example.com/drift")
    harness.check(watch_id)
    baseline = harness.get(watch_id).baseline_snapshot_id
    serve(harness, status_enum=("paid", "failed", "refunded"))  # a new enum value in a response
    result = harness.check(watch_id)
    assert result.status == "ok" and result.counts["warning"] == 1 and result.drift_event_id
    watch = harness.get(watch_id)
    assert watch.baseline_snapshot_id == baseline and watch.open_warning == 1
    assert harness.events() == ["drift.detected"]


def test_info_only_advances_the_baseline(harness: Harness) -> None:
    serve(harness)
    watch_id = harness.watch()
    harness.check(watch_id)
    before = harness.get(watch_id).baseline_snapshot_id
    serve(harness, description="A charge, documented better")
    result = harness.check(watch_id)
    assert result.status == "ok"
    watch = harness.get(watch_id)
    assert watch.baseline_snapshot_id != before and watch.baseline_accepted_by == "auto:info-only"
    assert watch.open_warning == watch.open_info == 0


@pytest.mark.parametrize(
    ("route", "failure_class"),
    [
        ({"body": "oops", "status": 500}, "http_error"),
        ({"body": "openapi: [unclosed", "content_type": "application/yaml"}, "invalid_contract"),
        ({"body": '{"openapi": "3.0.0", "paths": {"/a": {"$ref": "#/nope"}}}'}, "invalid_contract"),
        ({"body": "{}", "delay": 1.5}, "timeout"),
    ],
)
def test_failures_set_error_and_keep_the_baseline(
    harness: Harness, route: dict[str, object], failure_class: str
) -> None:
    serve(harness)
    watch_id = harness.watch(webhookUrl="https://hooks.example.com/drift")
    harness.check(watch_id)
    baseline = harness.get(watch_id).baseline_snapshot_id
    harness.server.set("/openapi.json", **route)  # type: ignore[arg-type]
    failed = harness.check(watch_id)
    assert failed.status == "error" and failed.failure_class == failure_class
    watch = harness.get(watch_id)
    assert watch.baseline_snapshot_id == baseline and watch.failure_class == failure_class
    harness.check(watch_id)  # still failing: no second alert
    serve(harness)
    recovered = harness.check(watch_id)
    assert recovered.status == "ok" and harness.get(watch_id).failure_class is None


def test_error_before_any_good_check_stays_error_then_recovers(harness: Harness) -> None:
    harness.server.set("/openapi.json", "nope", status=503)
    watch_id = harness.watch()
    assert harness.check(watch_id).status == "error"
    serve(harness)
    assert harness.check(watch_id).outcome == "baseline"
    assert harness.get(watch_id).drift_status == "ok"


def test_oversize_and_redirect_loop(harness: Harness) -> None:
    harness.server.set("/openapi.json", "", status=302, headers={"Location": "/openapi.json"})
    watch_id = harness.watch()
    looped = harness.check(watch_id)
    assert looped.failure_class == "http_error" and "redirects" in (looped.error or "")
    harness.server.set("/openapi.json", "x" * 2000)
    # The configured byte limit (`fetch_max_bytes`), at its least.
    settings = harness.settings.model_copy(update={"fetch_max_bytes": 1024})
    harness.fetcher = http_fetcher(settings, harness.client)
    assert harness.check(watch_id).failure_class == "too_large"


def test_private_addresses_are_refused_by_default(
    tmp_path: Path, database: Database, acme: OrgKey, server: SpecServer
) -> None:
    settings = make_settings(tmp_path, database_url=database.url)
    guarded = Harness(database, settings, acme, server)
    try:
        serve(guarded)
        watch_id = guarded.watch()
        result = guarded.check(watch_id)
        assert result.failure_class == "blocked_target" and server.requests == []
    finally:
        guarded.client.close()


def test_paused_watches_are_not_checked(harness: Harness) -> None:
    serve(harness)
    watch_id = harness.watch()
    with harness.database.transaction() as session:
        watch_service.pause_watch(session, harness.principal, watch_id)
    assert harness.check(watch_id).outcome == "skipped"
    assert harness.server.requests == []


def test_snapshots_are_deduplicated_by_fingerprint(harness: Harness) -> None:
    serve(harness)
    watch_id = harness.watch()
    harness.check(watch_id)
    serve(harness, required=("id",))
    harness.check(watch_id)
    serve(harness)
    harness.check(watch_id)
    serve(harness, required=("id",))
    harness.check(watch_id)
    with harness.database.session() as session:
        assert len(list(session.scalars(select(Snapshot.id)))) == 2


def test_headers_are_sent_decrypted(harness: Harness) -> None:
    serve(harness)
    watch_id = harness.watch(headers={"Authorization": "Bearer vendor-token"})
    harness.check(watch_id)
    assert harness.server.requests[0][2]["Authorization"] == "Bearer vendor-token"


def test_mcp_watch_drifts_when_a_tool_is_removed(harness: Harness, tmp_path: Path) -> None:
    from controller.checks.engine import contract_fetcher
    from tests.mcp_servers import COUNT, SEARCH, SdkServer, full_surface

    surface = full_surface(tmp_path / "surface.json")
    with SdkServer("streamable", surface) as mcp_server:
        data = WatchCreate.model_validate(
            {"name": "tools", "url": mcp_server.url, "watchType": "mcp"}
        )
        with harness.database.transaction() as session:
            watch_id = watch_service.create_watch(session, harness.principal, data, harness.box).id
        fetcher = contract_fetcher(harness.settings, harness.client)

        def check() -> CheckResult:
            harness.now += timedelta(minutes=15)
            return run_check(
                harness.database, watch_id, box=harness.box, fetcher=fetcher, now=harness.now
            )

        assert check().outcome == "baseline"
        assert check().outcome == "unchanged"
        assert harness.get(watch_id).protocol_version
        full_surface(surface, tools=[SEARCH, COUNT])  # the vendor drops delete_item
        drifted = check()
    assert drifted.status == "drifted" and drifted.counts["breaking"] == 1
    with harness.database.session() as session:
        event = session.get(DriftEvent, drifted.drift_event_id)
        assert event is not None
        (change,) = decode_changes(event.changes)
    assert change["rule"] == "tool-removed" and change["location"] == {"tool": "delete_item"}
    assert change["agentAction"] == "remove_tool_usage"


def test_a_fetch_that_crashes_is_a_failed_check(harness: Harness) -> None:
    # A fetcher failing in a way nobody foresaw still ends the check: error, a failure
    # class, a message that quotes nothing the exception carried (it may hold a secret).
    serve(harness)
    watch_id = harness.watch()
    good = harness.fetcher

    def crashing(check: Any) -> Any:
        raise UnicodeEncodeError("ascii", "secret-value-é", 13, 14, "ordinal not in range")

    harness.fetcher = crashing
    failed = harness.check(watch_id)
    assert failed.outcome == "error" and failed.failure_class == "internal_error"
    assert "UnicodeEncodeError" in (failed.error or "") and "secret" not in (failed.error or "")
    watch = harness.get(watch_id)
    assert watch.drift_status == "error" and watch.failure_class == "internal_error"
    assert watch.last_error == failed.error
    harness.fetcher = good
    assert harness.check(watch_id).outcome == "baseline"


def test_a_parsed_document_from_a_fetcher_is_bounded_in_nesting(harness: Harness) -> None:
    # MCP servers' tool lists arrive parsed (by the MCP client): bounded like parsed text.
    watch_id = harness.watch("/mcp", watchType="mcp")
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(MAX_NESTING + 5):
        inner["a"] = {}
        inner = inner["a"]
    harness.fetcher = lambda check: Fetched(None, document={"tools": [{"inputSchema": deep}]})
    failed = harness.check(watch_id)
    assert failed.outcome == "error" and failed.failure_class == "invalid_contract"
    assert f"nests deeper than {MAX_NESTING} levels" in (failed.error or "")
    assert harness.get(watch_id).drift_status == "error"


def test_a_check_judges_sunset_windows_on_its_own_clock(harness: Harness) -> None:
    """The check passes its date to the engine: removing a deprecated operation before its
    x-sunset date is breaking, after it a warning."""
    spec = charges_spec()
    spec["paths"]["/v1/refunds"]["get"].update(
        {"deprecated": True, "x-sunset": (harness.now + timedelta(days=40)).date().isoformat()}
    )
    harness.server.set("/openapi.json", as_json(spec))
    early, late = harness.watch(), harness.watch(name="late")
    harness.check(early)
    harness.check(late)
    del spec["paths"]["/v1/refunds"]
    harness.server.set("/openapi.json", as_json(spec))
    assert harness.check(early).counts["breaking"] == 1
    assert harness.check(late, minutes=60 * 24 * 60).counts == {
        "breaking": 0,
        "warning": 1,
        "info": 0,
    }
    with harness.database.session() as session:
        rules = {
            c["rule"]
            for event in session.scalars(select(DriftEvent))
            for c in decode_changes(event.changes)
        }
    assert rules == {"endpoint-removed-before-sunset", "endpoint-removed-deprecated"}


def test_a_drift_event_holds_one_change_per_cause(harness: Harness) -> None:
    """A property removed from a schema two operations return is one change of the drift
    event, with both operations; the counts count causes."""
    spec = charges_spec()
    answer = {"application/json": {"schema": {"$ref": "#/components/schemas/Charge"}}}
    spec["paths"]["/v1/charges"] = {
        "post": {"responses": {"200": {"description": "ok", "content": answer}}}
    }
    harness.server.set("/openapi.json", as_json(spec))
    watch_id = harness.watch()
    harness.check(watch_id)
    charge = spec["components"]["schemas"]["Charge"]
    del charge["properties"]["amount"]
    charge["required"] = ["id"]
    harness.server.set("/openapi.json", as_json(spec))
    drifted = harness.check(watch_id)
    assert drifted.counts["breaking"] == 1
    with harness.database.session() as session:
        event = session.get_one(DriftEvent, drifted.drift_event_id)
        changes = decode_changes(event.changes)
    (removed,) = [c for c in changes if c["severity"] == "breaking"]
    assert removed["affected"] == ["GET /v1/charges/{id}", "POST /v1/charges"]
    assert removed["affectedCount"] == 2


class CountingParser:
    """The check's real parse step, counting its calls: a check that recognises the bytes it
    fetched does not parse them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = checks_module._parse

        def parse(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(checks_module, "_parse", parse)


def serve_plain(h: Harness, **knobs: object) -> None:
    """The spec as most vendors serve it: a 200 every time, no ETag, no Last-Modified."""
    h.server.set("/openapi.json", as_json(charges_spec(**knobs)), etag=False)  # type: ignore[arg-type]


def test_the_same_bytes_without_etag_are_recognised_before_parsing(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    parser = CountingParser(monkeypatch)
    serve_plain(harness)
    watch_id = harness.watch(webhookUrl="https://hooks.example.com/drift")
    assert harness.check(watch_id).outcome == "baseline" and parser.calls == 1
    first = harness.get(watch_id)
    assert first.etag is None and first.last_modified is None and first.source_hash

    again = harness.check(watch_id)
    assert again.outcome == "unchanged" and again.status == "ok"
    assert parser.calls == 1  # recognised by the hash of its bytes, never parsed
    # A plain GET (nothing to make it conditional), answered 200 with the whole body.
    assert "If-None-Match" not in harness.server.requests[-1][2]
    watch = harness.get(watch_id)
    assert watch.last_checked_at == watch.last_success_at == harness.now
    assert (watch.last_check_status, watch.failure_class, watch.drift_status) == ("ok", None, "ok")
    assert watch.source_hash == first.source_hash
    assert watch.last_snapshot_id == first.last_snapshot_id
    assert harness.events() == []
    with harness.database.session() as session:
        assert len(session.scalars(select(Snapshot)).all()) == 1


def test_changed_bytes_without_etag_take_the_full_path(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    parser = CountingParser(monkeypatch)
    serve_plain(harness)
    watch_id = harness.watch(webhookUrl="https://hooks.example.com/drift")
    harness.check(watch_id)
    before = harness.get(watch_id).source_hash

    serve_plain(harness, required=("id",), refunds=False)
    drifted = harness.check(watch_id)
    assert parser.calls == 2
    assert drifted.outcome == "changed" and drifted.status == "drifted"
    assert drifted.counts["breaking"] >= 2 and drifted.drift_event_id
    assert harness.events() == ["incident.open", "drift.detected"]
    assert harness.get(watch_id).source_hash not in (None, before)
    # The new bytes are now the ones recognised.
    assert harness.check(watch_id).outcome == "unchanged" and parser.calls == 2


def test_the_hash_of_the_last_bytes_survives_a_restart(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    parser = CountingParser(monkeypatch)
    serve_plain(harness)
    watch_id = harness.watch()
    harness.check(watch_id)
    harness.database.dispose()
    harness.client.close()

    # A new controller process: its own engine and HTTP client, nothing kept in memory.
    restarted = Database(harness.database.url)
    client = make_client(allow_private=True, timeout=1.0)
    try:
        result = run_check(
            restarted,
            watch_id,
            box=load_secret_box(harness.settings),
            fetcher=http_fetcher(harness.settings, client),
            now=harness.now + timedelta(minutes=15),
        )
    finally:
        client.close()
        restarted.dispose()
    assert result.outcome == "unchanged" and result.status == "ok"
    assert parser.calls == 1


def test_a_missing_hash_takes_the_full_path(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    parser = CountingParser(monkeypatch)
    serve_plain(harness)
    watch_id = harness.watch()
    harness.check(watch_id)
    with harness.database.transaction() as session:
        watch = session.get(Watch, watch_id)
        assert watch is not None
        watch.source_hash = None  # a watch checked before the hash was kept, say
    again = harness.check(watch_id)
    assert again.outcome == "unchanged" and parser.calls == 2  # parsed, same fingerprint
    assert harness.get(watch_id).source_hash is not None
    assert harness.check(watch_id).outcome == "unchanged" and parser.calls == 2


def test_a_new_incident_asks_for_the_bound_agents_once(harness: Harness) -> None:
    """`incident.open` and `drift.detected` both name the affected agents; the check asks the
    store for them once."""
    from sqlalchemy import event

    serve(harness)
    watch_id = harness.watch(webhookUrl="https://hooks.example.com/drift")
    harness.check(watch_id)
    serve(harness, required=("id",), refunds=False)
    asked: list[str] = []

    def seen(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        if statement.startswith("SELECT DISTINCT agents.") and "agent_watches" in statement:
            asked.append(statement)

    event.listen(harness.database.engine, "before_cursor_execute", seen)
    try:
        drifted = harness.check(watch_id)
    finally:
        event.remove(harness.database.engine, "before_cursor_execute", seen)
    assert drifted.status == "drifted"
    assert harness.events() == ["incident.open", "drift.detected"]
    assert len(asked) == 1, asked


def test_another_url_is_fetched_and_parsed_in_full(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hash of the last body stands for one contract: pointed elsewhere, even at the same
    bytes, the watch parses what it fetches again."""
    from controller.model.watch import WatchUpdate

    parser = CountingParser(monkeypatch)
    serve_plain(harness)
    harness.server.set("/mirror.json", as_json(charges_spec()), etag=False)
    watch_id = harness.watch()
    harness.check(watch_id)
    assert harness.check(watch_id).outcome == "unchanged" and parser.calls == 1
    with harness.database.transaction() as session:
        update = WatchUpdate.model_validate({"url": harness.server.url("/mirror.json")})
        watch_service.update_watch(session, harness.principal, watch_id, update, harness.box)
    assert harness.get(watch_id).source_hash is None
    assert harness.check(watch_id).outcome == "unchanged" and parser.calls == 2
    assert harness.check(watch_id).outcome == "unchanged" and parser.calls == 2
