"""The matrix of misbehaving vendors: a check either completes and yields a contract, or fails.

For every registered vendor fake (tests/vendor_fakes.py: each watch type, MCP over each
transport, the key set a signed agent card's watch trusts) and every misbehaviour that
applies to it (5,000-deep JSON, a body over the configured byte limit, trickle, hang, an HTML
page with 200, a redirect loop, HTTP 500, invalid JSON or YAML, truncated, empty, a JSON-RPC
error, endless pagination, a crash
mid-handshake, missing result fields), the check, run through `controller.checks.engine` with the
controller's fetcher, ends `error` with a failure class (never `internal_error`: a misbehaving
vendor is not a defect of driftgate), stores no baseline, and preflight through the API blocks
the watch's `production-guard` agent with a `check_failed:` reason: both on the watch's first
check and on a watch that was `ok`.

Fetches of the misbehaving vendor have the fake's short deadline (0.5 s; 2 s for a stdio
child) and a 64 KiB byte limit, so a hang or a trickle costs that much; the good check before
uses a generous deadline, so a busy machine does not turn the `ok` start into a failure.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import update

from controller.agents import service as agent_service
from controller.checks.engine import CheckResult, Fetcher, contract_fetcher, run_check
from controller.crypto import load_secret_box
from controller.model.principal import Principal
from controller.model.watch import WatchCreate, WatchType
from controller.orgs import auth_service
from controller.orgs import service as org_service
from controller.sources import mcp as mcp_source
from controller.sources.http import configured_client
from controller.store.db import Database
from controller.store.models import Watch
from controller.watches import service as watch_service
from tests.conftest import OrgKey, empty_database, make_settings
from tests.logrecords import Records
from tests.servers import SpecServer, spec_server
from tests.vendor_fakes import BYTE_LIMIT, VENDOR_FAKES, VendorFake, matrix

GOOD_DEADLINE = 20.0
NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


class Matrix:
    """One database, app and pair of fetchers for the whole module (the cases are many and
    each would otherwise build its own app); every case empties the database first."""

    def __init__(self, root: Path, template: str, server: SpecServer) -> None:
        self.template = template
        if template.startswith("postgresql"):
            self.database = Database(template)
        else:
            self.database = Database(f"sqlite:///{root / 'matrix.db'}")
        self.settings = make_settings(
            root,
            database_url=self.database.url,
            allow_private_targets=True,
            allow_stdio_mcp=True,
            fetch_deadline_seconds=GOOD_DEADLINE,
            fetch_max_bytes=BYTE_LIMIT,
        )
        self.box = load_secret_box(self.settings, create=True)
        self.client = configured_client(self.settings)
        self.fetchers: dict[float, Fetcher] = {}
        self.server = server
        self.app: Flask | None = None
        self.now = NOW

    def fresh(self) -> OrgKey:
        """An empty database with one org and its API key; the app on it."""
        empty_database(self.database, self.template)
        if self.app is None:
            from web.app import create_app

            self.app = create_app(self.settings, database=self.database)
        with self.database.transaction() as session:
            org = org_service.create_org(session, f"org-{uuid.uuid4().hex[:8]}", "pro", actor="t")
            issued = auth_service.create_api_key(session, org, "test", actor="test")
            return OrgKey(org.id, org.name, issued.secret, issued.key.id)

    def watch(self, org: OrgKey, fake: VendorFake, name: str) -> tuple[str, str]:
        """A watch on the fake, bound to a `production-guard` agent: (watch id, agent key)."""
        principal = Principal(org.org_id, org.org_name, "pro", frozenset(), "api_key", org.key_id)
        target = fake.target()
        url = target if target.startswith("http") else "http://127.0.0.1:9/stdio"
        data = WatchCreate.model_validate(
            {"name": name, "url": url, "watchType": fake.watch_type, **fake.watch_fields()}
        )
        with self.database.transaction() as session:
            watch = watch_service.create_watch(session, principal, data, self.box)
            if url != target:
                # The API takes http(s) URLs; the fetcher also reaches `stdio:` targets.
                session.execute(update(Watch).where(Watch.id == watch.id).values(url=target))
            agent = agent_service.bind(
                session, principal, f"{name}-agent", watch, policy="production-guard"
            )
            return watch.id, agent.key

    def check(self, watch_id: str, deadline: float = GOOD_DEADLINE) -> CheckResult:
        """Check the watch as the controller does, with a fetch deadline of `deadline`."""
        self.now += timedelta(minutes=15)
        fetcher = self.fetchers.get(deadline)
        if fetcher is None:
            settings = self.settings.model_copy(update={"fetch_deadline_seconds": deadline})
            fetcher = self.fetchers[deadline] = contract_fetcher(settings, self.client)
        return run_check(self.database, watch_id, box=self.box, fetcher=fetcher, now=self.now)

    def stored(self, watch_id: str) -> Watch:
        with self.database.session() as session:
            watch = session.get(Watch, watch_id)
            assert watch is not None
            return watch

    def preflight(self, org: OrgKey, agent: str) -> dict[str, Any]:
        assert self.app is not None
        response = self.app.test_client().post(
            "/api/preflight", json={"agentId": agent}, headers=org.headers
        )
        body = response.get_json()
        assert response.status_code in (200, 409), body
        return dict(body)

    def close(self) -> None:
        self.client.close()
        self.database.dispose()


@pytest.fixture
def logs() -> Iterator[Records]:
    records = Records()
    driftgate = logging.getLogger("driftgate")
    level = driftgate.level
    driftgate.setLevel(logging.DEBUG)
    driftgate.addHandler(records)
    yield records
    driftgate.removeHandler(records)
    driftgate.setLevel(level)


@pytest.fixture(scope="module")
def world(_template_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Matrix]:
    with spec_server() as server:
        made = Matrix(tmp_path_factory.mktemp("matrix"), _template_database, server)
        try:
            yield made
        finally:
            made.close()


def test_every_watch_type_and_mcp_transport_has_a_vendor_fake() -> None:
    """A new watch type or MCP transport joins the matrix by registering a fake."""
    assert {entry.watch_type for entry in VENDOR_FAKES.values()} == {t.value for t in WatchType}
    channels = {c.transport for c in mcp_source._Channel.__subclasses__()}
    assert channels <= {entry.transport for entry in VENDOR_FAKES.values()}
    # Both eras of Streamable HTTP: the stateless revision and the initialize handshake.
    assert {"mcp/streamable-http-stateless", "mcp/streamable-http-handshake"} <= set(VENDOR_FAKES)


def failed_closed(
    world: Matrix, org: OrgKey, watch_id: str, agent: str, result: CheckResult, *, first: bool
) -> list[str]:
    """What is wrong with how a check of a misbehaving vendor ended (nothing: it failed,
    stored no baseline, and the gate blocks the agent with `check_failed:<class>`)."""
    if result.outcome != "error" or result.status != "error":
        return [f"open: the check ended {result.outcome!r}, the watch {result.status!r}"]
    problems = []
    if result.failure_class in (None, "internal_error"):
        # A vendor's misbehaviour is the vendor's, not a defect of driftgate.
        problems.append(f"failure class {result.failure_class}: {result.error}")
    if first and world.stored(watch_id).baseline_snapshot_id is not None:
        problems.append("a failed first check stored a baseline")
    decision = world.preflight(org, agent)
    rows = [r for r in decision.get("blocked", []) if r["watchId"] == watch_id]
    reason = f"check_failed:{result.failure_class}"
    if decision["allowed"] is not False or not rows or reason not in rows[0]["reasons"]:
        problems.append(f"preflight did not block with {reason}: {decision}")
    return problems


@pytest.mark.parametrize(("fake_name", "misbehaviour"), matrix())
def test_a_misbehaving_vendor_fails_the_check_and_the_gate_blocks(
    world: Matrix,
    tmp_path: Path,
    fake_name: str,
    misbehaviour: str,
    logs: Records,
) -> None:
    org = world.fresh()
    entry = VENDOR_FAKES[fake_name]
    fake = entry.start(world.server, tmp_path)
    try:
        fake.serve_good()
        was_ok, ok_agent = world.watch(org, fake, "was-ok")
        assert world.check(was_ok).status == "ok"
        first, first_agent = world.watch(org, fake, "first")

        fake.misbehave(misbehaviour)
        outcomes = {
            "first": (first, first_agent, world.check(first, entry.deadline)),
            "was ok": (was_ok, ok_agent, world.check(was_ok, entry.deadline)),
        }
    finally:
        fake.close()
    problems = [
        f"{start}: {problem}"
        for start, (watch_id, agent, result) in outcomes.items()
        for problem in failed_closed(world, org, watch_id, agent, result, first=start == "first")
    ]
    assert problems == [], f"{fake_name} {misbehaviour}"
    assert not [r for r in logs.records if r.getMessage() == "check.crashed"]


def test_a_deep_answer_is_one_log_line_without_a_trace(
    world: Matrix, tmp_path: Path, logs: Records
) -> None:
    """Issue 40, point 9: a 5,000-deep answer to `tools/list` is `invalid_contract`, logged
    once, without a stack trace."""
    org = world.fresh()
    entry = VENDOR_FAKES["mcp/streamable-http-handshake"]
    fake = entry.start(world.server, tmp_path)
    try:
        fake.serve_good()
        watch_id, _ = world.watch(org, fake, "deep")
        fake.misbehave("deep_json")
        result = world.check(watch_id, entry.deadline)
    finally:
        fake.close()
    assert result.failure_class == "invalid_contract", result
    assert "nests deeper than" in (result.error or "")
    assert not [r for r in logs.records if r.exc_info or r.levelno >= logging.ERROR]
