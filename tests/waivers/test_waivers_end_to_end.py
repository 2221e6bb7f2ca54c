"""Issue 44's goal for waivers, end to end through git: a watch declared in a real git
repository, its vendor's contract served on 127.0.0.1, a breaking change that a committed
waiver accepts: preflight allows, no incident opens, the finding is shown waived with its
reason; a week before the expiry the owner's notice is queued, at the expiry the gate blocks
at once (before anything ran), the controller's routine counts the finding again (incident,
drifted) and queues the expiry notice, once, however often it runs."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from flask.testing import FlaskClient
from sqlalchemy import delete, select

from controller.checks.engine import http_fetcher, run_check
from controller.crypto import load_secret_box
from controller.events.channels import delivering
from controller.events.delivery import deliver_due
from controller.gate.service import PreflightRequest, preflight
from controller.model.principal import Principal
from controller.sources.http import make_client
from controller.store.db import Database
from controller.store.models import AuditEntry, DriftEvent, Incident, OutboxMessage, Watch
from controller.store.snapshots import decode_changes
from controller.waivers import service as waivers
from controller.waivers.service import WAIVER_EMAIL, run_due
from tests.conftest import OrgKey
from tests.factories import Make, make_user, run, sign_in
from tests.gitrepos import RepoBuilder
from tests.servers import SpecServer
from tests.smtp_server import SmtpServer, smtp_server
from tests.specs import as_json, charges_spec

WAIVERS = """\
version: 1
waivers:
  - watch: production            # the watch set's name
    rule: endpoint-removed
    operation: "GET /v1/refunds*"
    owner: payments-team@example.com
    reason: "we never call refunds (TICKET-123)"
    expires: {expires}
"""


def sets(url: str) -> str:
    return (
        "version: 1\nwatchSets:\n  - name: production\n    watches:\n"
        f"      - name: stripe-api\n        url: {url}\n        watchType: openapi\n"
    )


@pytest.fixture
def mail() -> Iterator[SmtpServer]:
    """The server's SMTP relay (the operator's `smtp_*` settings), on 127.0.0.1."""
    with smtp_server() as running:
        yield running


def test_a_waived_breaking_change_allows_until_its_waiver_expires(
    repo: RepoBuilder,
    make_reconciler: Make,
    acme: OrgKey,
    database: Database,
    server: SpecServer,
    client: FlaskClient,
    mail: SmtpServer,
) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    expires = (now + timedelta(days=30)).date()
    url = server.set("/openapi.json", as_json(charges_spec()))
    repo.commit(
        {
            ".driftgate/watch-sets.yaml": sets(url),
            ".driftgate/waivers.yaml": WAIVERS.format(expires=expires.isoformat()),
        }
    )
    reconciler, settings = make_reconciler(
        {"name": "fleet", "org": "acme", "url": repo.url},
        allow_private_targets=True,
        smtp_host=mail.host,
        smtp_port=mail.port,
        smtp_security="none",
        smtp_from_address="driftgate@example.com",
    )
    assert run(reconciler, settings).result == "applied"
    box = load_secret_box(settings)
    with database.session() as session:
        watch_id = session.scalars(select(Watch.id).where(Watch.name == "stripe-api")).one()
        audited = session.scalars(
            select(AuditEntry.action).where(AuditEntry.target_type == "waiver")
        ).all()
    assert audited == ["waiver.create"]
    # The owner's notices go to the org's destinations.
    response = client.put(
        "/api/org/notification-defaults",
        json={"destination": {"kind": "webhook", "url": "https://hooks.example.com/driftgate"}},
        headers=acme.headers,
    )
    assert response.status_code == 200, response.get_json()

    http = make_client(allow_private=True, timeout=5.0)
    fetcher = http_fetcher(settings, http)
    principal = Principal(acme.org_id, acme.org_name, "pro", frozenset(), "api_key", acme.key_id)

    def check(at: datetime) -> str | None:
        return run_check(database, watch_id, box=box, fetcher=fetcher, now=at).status

    def gate(at: datetime) -> tuple[bool, list[list[str]]]:
        outcome = preflight(
            database, principal, PreflightRequest(watch_ids=[watch_id]), at, time.perf_counter()
        )
        return outcome.decision.allowed, [row.reasons for row in outcome.decision.blocked]

    def incidents() -> list[str]:
        with database.session() as session:
            return list(
                session.scalars(select(Incident.status).where(Incident.watch_id == watch_id))
            )

    def outbox(kind: str) -> list[dict[str, object]]:
        with database.session() as session:
            rows = session.scalars(
                select(OutboxMessage).where(
                    OutboxMessage.event_type == kind, OutboxMessage.channel != WAIVER_EMAIL
                )
            ).all()
            return [row.payload["data"] for row in rows]

    def send_mail(at: datetime) -> list[str]:
        """Deliver the owners' e-mails queued so far; the subjects the relay received."""
        with database.session() as session:
            ids = list(
                session.scalars(
                    select(OutboxMessage.id).where(OutboxMessage.channel == WAIVER_EMAIL)
                )
            )
        channels = delivering(waivers.channels(settings, database, box), 10)
        deliver_due(database, box, None, at, ids=ids, channels=channels)
        return [m["Subject"] for m in mail.to("payments-team@example.com")]

    assert check(now) == "ok"  # the first good check: the baseline
    server.set("/openapi.json", as_json(charges_spec(refunds=False)))
    at = now + timedelta(minutes=15)
    assert check(at) == "ok"

    # Waived: allowed, no incident, the finding shown waived with its reason.
    assert gate(at) == (True, [])
    assert incidents() == []
    with database.session() as session:
        watch = session.get_one(Watch, watch_id)
        assert (watch.drift_status, watch.open_breaking) == ("ok", 0)
        assert watch.waived_until == datetime(expires.year, expires.month, expires.day, tzinfo=UTC)
        event = session.scalars(select(DriftEvent).where(DriftEvent.watch_id == watch_id)).one()
        assert event.breaking_count == 0
    [change] = decode_changes(event.changes)
    assert change["rule"] == "endpoint-removed" and change["severity"] == "breaking"
    assert change["waived"] is True and change["ignored"] is True
    assert change["waiver"] == {
        "owner": "payments-team@example.com",
        "reason": "we never call refunds (TICKET-123)",
        "expires": expires.isoformat(),
    }
    served = client.get(f"/api/drift/events/{event.id}", headers=acme.headers)
    assert served.status_code == 200, served.get_data(as_text=True)
    [shown] = served.get_json()["changes"]
    assert shown["waived"] is True and shown["waiver"]["reason"].startswith("we never call")
    # A served change goes back to the explanation as it is, and stays waived there.
    explained = client.post(
        "/api/drift/explain", json={"changes": [shown]}, headers=acme.headers
    ).get_json()
    assert explained["changes"][0]["waived"] is True and explained["counts"]["breaking"] == 0
    assert explained["changes"][0]["waiver"]["owner"] == "payments-team@example.com"
    listed = client.get("/api/waivers", headers=acme.headers).get_json()["items"]
    assert [(w["watches"], w["expired"], [f["rule"] for f in w["findings"]]) for w in listed] == [
        (["stripe-api"], False, ["endpoint-removed"])
    ]

    # The console: the watch page lists the waiver, the drift event shows the finding waived.
    sign_in(client, make_user(database, acme.org_id, "admin@example.com") and "admin@example.com")
    page = client.get(f"/console/watches/{watch_id}").get_data(as_text=True)
    assert "Waivers" in page and "payments-team@example.com" in page
    assert "we never call refunds (TICKET-123)" in page and str(expires) in page
    shown_page = client.get(f"/console/watches/{watch_id}/events/{event.id}").get_data(as_text=True)
    assert "waived</span> by payments-team@example.com until" in shown_page

    # A week before: the owner is told once, however many controllers run the routine.
    week_before = datetime(expires.year, expires.month, expires.day, tzinfo=UTC) - timedelta(7)
    assert run_due(database, box, week_before, 0, settings=settings)["expiring"] == 1
    assert run_due(database, box, week_before + timedelta(hours=1), 0)["expiring"] == 0
    assert send_mail(week_before) == [
        f"driftgate: your waiver of endpoint-removed expires on {expires.isoformat()}"
    ]
    [expiring] = outbox("waiver.expiring")
    assert expiring["owner"] == "payments-team@example.com"
    assert expiring["watches"] == ["stripe-api"]
    assert check(week_before) == "ok"  # the same contract: nothing counted again
    assert gate(week_before) == (True, [])

    # At the expiry the gate blocks at once (nothing has counted the finding yet) ...
    end = datetime(expires.year, expires.month, expires.day, tzinfo=UTC)
    assert check(end) == "ok"
    allowed, reasons = gate(end)
    assert not allowed and reasons == [["waiver_expired"]]
    # ... and the routine counts it: drifted, an incident, the owner told once.
    counted = run_due(database, box, end, 0, settings=settings)
    assert counted == {"expiring": 0, "expired": 1, "reevaluated": 1}
    assert run_due(database, box, end + timedelta(minutes=1), 0, settings=settings)["expired"] == 0
    assert send_mail(end)[1:] == [
        f"driftgate: your waiver of endpoint-removed expired on {expires.isoformat()}"
    ]
    [expired_mail] = mail.to("payments-team@example.com")[1:]
    assert "the findings it covered count again" in expired_mail.get_content()
    assert len(outbox("waiver.expired")) == 1
    assert incidents() == ["open"]
    with database.session() as session:
        watch = session.get_one(Watch, watch_id)
        assert (watch.drift_status, watch.open_breaking, watch.waived_until) == ("drifted", 1, None)
    allowed, reasons = gate(end + timedelta(minutes=1))
    assert not allowed and reasons == [["breaking_drift"]]
    assert [d["counts"]["breaking"] for d in outbox("drift.detected")] == [1]
    http.close()


def test_a_waiver_beyond_the_maximum_is_a_problem_and_keeps_the_last_good_set(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    today = datetime.now(UTC).date()
    repo.commit(
        {
            ".driftgate/watch-sets.yaml": sets("http://127.0.0.1:9/openapi.json"),
            ".driftgate/waivers.yaml": WAIVERS.format(expires=(today + timedelta(10)).isoformat()),
        }
    )
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    assert run(reconciler, settings).result == "applied"
    far = (today + timedelta(days=400)).isoformat()
    repo.commit({".driftgate/waivers.yaml": WAIVERS.format(expires=far)})
    result = run(reconciler, settings)
    assert result.result == "stalled"
    latest = (today + timedelta(days=180)).isoformat()
    assert [(p.file, p.line, p.column, p.message) for p in result.problems] == [
        (
            ".driftgate/waivers.yaml",
            8,
            14,
            f"expires {far} is more than 180 days away (setting waiver_max_days): "
            f"the latest allowed is {latest}",
        )
    ]
    listed = _waivers(database)
    assert listed == [(today + timedelta(10))]


def _waivers(database: Database) -> list[object]:
    from controller.store.models import WaiverRow

    with database.session() as session:
        return list(session.scalars(select(WaiverRow.expires)))


def test_a_waiver_removed_from_git_stops_hiding_its_finding_at_once(
    repo: RepoBuilder,
    make_reconciler: Make,
    acme: OrgKey,
    database: Database,
    server: SpecServer,
) -> None:
    """Taking a waiver out of the file blocks the watch from the revision on (fail closed);
    the controller's next round counts the finding: drifted, an incident, audited."""
    now = datetime.now(UTC).replace(microsecond=0)
    expires = (now + timedelta(days=30)).date()
    url = server.set("/openapi.json", as_json(charges_spec()))
    repo.commit(
        {
            ".driftgate/watch-sets.yaml": sets(url),
            ".driftgate/waivers.yaml": WAIVERS.format(expires=expires.isoformat()),
        }
    )
    reconciler, settings = make_reconciler(
        {"name": "fleet", "org": "acme", "url": repo.url}, allow_private_targets=True
    )
    assert run(reconciler, settings).result == "applied"
    box = load_secret_box(settings)
    principal = Principal(acme.org_id, acme.org_name, "pro", frozenset(), "api_key", acme.key_id)
    with database.session() as session:
        watch_id = session.scalars(select(Watch.id).where(Watch.name == "stripe-api")).one()
    with make_client(allow_private=True, timeout=5.0) as http:
        fetcher = http_fetcher(settings, http)
        assert run_check(database, watch_id, box=box, fetcher=fetcher, now=now).status == "ok"
        server.set("/openapi.json", as_json(charges_spec(refunds=False)))
        assert run_check(database, watch_id, box=box, fetcher=fetcher, now=now).status == "ok"

    def gate() -> tuple[bool, list[list[str]]]:
        at = datetime.now(UTC)
        outcome = preflight(
            database, principal, PreflightRequest(watch_ids=[watch_id]), at, time.perf_counter()
        )
        return outcome.decision.allowed, [row.reasons for row in outcome.decision.blocked]

    assert gate() == (True, [])
    repo.commit({".driftgate/waivers.yaml": "version: 1\nwaivers: []\n"})
    assert run(reconciler, settings).result == "applied"
    assert gate() == (False, [["waiver_expired"]])
    assert run_due(database, box, datetime.now(UTC), 0)["reevaluated"] == 1
    assert gate() == (False, [["breaking_drift"]])
    with database.session() as session:
        watch = session.get_one(Watch, watch_id)
        assert (watch.drift_status, watch.waived_until) == ("drifted", None)
        actions = session.scalars(
            select(AuditEntry.action)
            .where(AuditEntry.target_type == "waiver")
            .order_by(AuditEntry.created_at)
        ).all()
    assert list(actions) == ["waiver.create", "waiver.delete"]


def test_a_waiver_ends_even_when_its_drift_event_was_pruned(
    repo: RepoBuilder,
    make_reconciler: Make,
    acme: OrgKey,
    database: Database,
    server: SpecServer,
) -> None:
    """With no drift event left to hold the comparison, the routine diffs the stored snapshots
    again: the finding still counts at the waiver's end (never an allow by omission)."""
    now = datetime.now(UTC).replace(microsecond=0)
    expires = (now + timedelta(days=3)).date()
    url = server.set("/openapi.json", as_json(charges_spec()))
    repo.commit(
        {
            ".driftgate/watch-sets.yaml": sets(url),
            ".driftgate/waivers.yaml": WAIVERS.format(expires=expires.isoformat()),
        }
    )
    reconciler, settings = make_reconciler(
        {"name": "fleet", "org": "acme", "url": repo.url}, allow_private_targets=True
    )
    assert run(reconciler, settings).result == "applied"
    box = load_secret_box(settings)
    with database.session() as session:
        watch_id = session.scalars(select(Watch.id).where(Watch.name == "stripe-api")).one()
    with make_client(allow_private=True, timeout=5.0) as http:
        fetcher = http_fetcher(settings, http)
        assert run_check(database, watch_id, box=box, fetcher=fetcher, now=now).status == "ok"
        server.set("/openapi.json", as_json(charges_spec(refunds=False)))
        assert run_check(database, watch_id, box=box, fetcher=fetcher, now=now).status == "ok"
    with database.transaction() as session:
        session.execute(delete(DriftEvent).where(DriftEvent.watch_id == watch_id))
    end = datetime(expires.year, expires.month, expires.day, tzinfo=UTC)
    assert run_due(database, box, end, 0)["reevaluated"] == 1
    with database.session() as session:
        watch = session.get_one(Watch, watch_id)
        assert (watch.drift_status, watch.open_breaking, watch.waived_until) == ("drifted", 1, None)
        [event] = session.scalars(select(DriftEvent).where(DriftEvent.watch_id == watch_id)).all()
        assert event.breaking_count == 1 and event.incident_id is not None
