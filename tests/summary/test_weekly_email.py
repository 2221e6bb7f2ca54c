"""The weekly summary e-mail end to end: real checks make drift, a real controller sends the
week's e-mails through a real SMTP server on loopback (STARTTLS, AUTH), once per org and
week even with two controller processes racing; the unsubscribe link works; the relay's
password never appears in the store or the logs; another org's data never appears."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from controller.crypto import load_secret_box
from controller.model import summary_schedule as schedule
from controller.scheduler import Controller
from controller.settings import Settings
from controller.store.db import Database
from controller.store.models import Job
from controller.summary import service
from tests.conftest import ON_POSTGRES, OrgKey, make_settings
from tests.processes import (
    controllers_ticked,
    driftgate_env,
    jobs_done,
    outbox_delivered,
    started,
    wait_until,
)
from tests.servers import SpecServer
from tests.smtp_server import SmtpServer, smtp_server
from tests.specs import as_json, charges_spec
from tests.summary.conftest import stored_text
from tests.tls import self_signed_certificate

PASSWORD = "s3cret-relay-password-7f1c"
USER = "driftgate-relay"
TODAY = schedule.WEEKDAYS[datetime.now(UTC).weekday()]


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    return self_signed_certificate(tmp_path)


@pytest.fixture
def relay(certificate: tuple[Path, Path]) -> Iterator[SmtpServer]:
    with smtp_server(tls=certificate, username=USER, password=PASSWORD) as running:
        yield running


@pytest.fixture
def mail_settings(tmp_path: Path, database: Database, certificate: tuple[Path, Path]) -> Settings:
    # Checks reach the spec server and the relay on loopback; the relay's certificate is
    # trusted through the operator's CA bundle, as an internal CA would be.
    return make_settings(
        tmp_path,
        database_url=database.url,
        allow_private_targets=True,
        ca_bundle=certificate[0],
        public_base_url="https://driftgate.example.com",
    )


@pytest.fixture
def mail_client(mail_settings: Settings, database: Database) -> FlaskClient:
    from web.app import create_app

    app: Flask = create_app(mail_settings, database=database)
    return app.test_client()


class Clock:
    """The controller's clock: now, or `ahead` of it (the week after)."""

    def __init__(self) -> None:
        self.ahead = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.ahead


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def controller(mail_settings: Settings, database: Database, clock: Clock) -> Iterator[Controller]:
    running = Controller(
        mail_settings,
        database,
        load_secret_box(mail_settings),
        concurrency=2,
        tick_seconds=0.2,
        clock=clock,
    )
    running.start()
    yield running
    running.stop(grace=5)


def drifted_watch(client: FlaskClient, who: OrgKey, spec: SpecServer, name: str) -> str:
    """A watch named `name`, checked twice: the second contract drops an endpoint."""
    url = spec.set(f"/{name}.json", as_json(charges_spec()))
    created = client.post("/api/watches", json={"name": name, "url": url}, headers=who.headers)
    assert created.status_code == 201, created.get_json()
    watch_id: str = created.get_json()["id"]
    assert (
        client.post(f"/api/watches/{watch_id}/check?wait=60", headers=who.headers).status_code
        == 200
    )
    spec.set(f"/{name}.json", as_json(charges_spec(refunds=False)))
    second = client.post(f"/api/watches/{watch_id}/check?wait=60", headers=who.headers)
    assert second.get_json()["watch"]["driftStatus"] == "drifted", second.get_json()
    return watch_id


def opt_in(
    client: FlaskClient,
    who: OrgKey,
    relay: SmtpServer,
    recipients: list[str],
    *,
    security: str = "starttls",
    username: str | None = USER,
) -> None:
    smtp = {
        "host": relay.host,
        "port": relay.port,
        "security": security,
        "fromAddress": "driftgate@example.com",
    }
    if username is not None:
        smtp.update(username=username, password=PASSWORD)
    answer = client.put("/api/org/smtp", json=smtp, headers=who.headers)
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json()["passwordSet"] is (username is not None)
    assert "password" not in answer.get_json()
    weekly = {"enabled": True, "recipients": recipients, "weekday": TODAY, "hourUtc": 0}
    answer = client.put(
        "/api/org/notification-defaults", json={"weeklySummary": weekly}, headers=who.headers
    )
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json()["weeklySummary"] == weekly


def summary_jobs(database: Database) -> list[tuple[str, str, str]]:
    with database.session() as session:
        rows = session.execute(
            select(Job.key, Job.period, Job.status).where(Job.kind == service.WEEKLY_SUMMARY)
        ).all()
    return [tuple(r) for r in rows]  # type: ignore[misc]


def test_the_weekly_summary_goes_out_once_and_can_be_unsubscribed(
    mail_client: FlaskClient,
    make_org: Callable[..., OrgKey],
    server: SpecServer,
    relay: SmtpServer,
    controller: Controller,
    clock: Clock,
    database: Database,
    capfd: pytest.CaptureFixture[str],
) -> None:
    client = mail_client
    acme, globex = make_org("acme", "pro"), make_org("globex", "free")
    drifted_watch(client, acme, server, "payments")
    drifted_watch(client, globex, server, "globex-ledger")
    opt_in(client, acme, relay, ["lead@example.com", "oncall@example.com"])
    opt_in(client, globex, relay, ["ops@globex.example"])
    routine = controller.routines.get("weekly_summaries")
    assert routine is not None
    controller.run_routine(routine)

    wait_until(lambda: len(relay.messages()) >= 3)
    # More rounds of the routine, as every replica and every minute runs it: nothing more.
    for _ in range(3):
        controller.run_routine(routine)
    # Whatever those rounds queued has run and gone out.
    wait_until(
        lambda: jobs_done(database, service.WEEKLY_SUMMARY) and outbox_delivered(database),
        timeout=30,
    )
    assert len(relay.messages()) == 3
    week = schedule.iso_week(datetime.now(UTC))
    assert sorted(summary_jobs(database)) == sorted(
        [(f"summary:{acme.org_id}", week, "done"), (f"summary:{globex.org_id}", week, "done")]
    )
    # STARTTLS, then AUTH with the stored password: only to this relay.
    assert set(relay.logins) == {(USER, PASSWORD)}

    (lead,) = relay.to("lead@example.com")
    (ops,) = relay.to("ops@globex.example")
    assert lead["Subject"].startswith(f"driftgate weekly summary for acme, {week}: 1 breaking")
    assert lead["From"] == "driftgate@example.com"
    assert lead["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    plain = lead.get_body(preferencelist=("plain",)).get_content()  # type: ignore[union-attr]
    html = lead.get_body(preferencelist=("html",)).get_content()  # type: ignore[union-attr]
    assert "payments" in plain and "payments" in html
    assert "1 open, 0 acknowledged" in plain
    # Org scoping: each org's e-mail holds its own watches only.
    assert "globex" not in plain and "globex" not in html
    assert "payments" not in ops.get_body(preferencelist=("plain",)).get_content()  # type: ignore[union-attr]

    # Deliveries count in the alert stats, as channel email.
    stats = client.get("/api/alerts/stats", headers=acme.headers).get_json()
    assert stats["byChannel"]["email"]["successful"] == 2, stats

    # One click: the mail client POSTs the header's link (no API key).
    link = lead["List-Unsubscribe"].strip("<>")
    parts = urlsplit(link)
    assert link.startswith("https://driftgate.example.com/api/summary/unsubscribe?token=")
    page = client.get(f"{parts.path}?{parts.query}")
    assert page.status_code == 200 and "l…@example.com" in page.get_data(as_text=True)
    done = client.post(
        f"{parts.path}?{parts.query}",
        data="List-Unsubscribe=One-Click",
        content_type="application/x-www-form-urlencoded",
    )
    assert done.status_code == 200, done.get_json()
    assert done.get_json() == {
        "unsubscribed": True,
        "recipient": "l…@example.com",
        "remaining": 1,
        "enabled": True,
    }
    again = client.post(f"{parts.path}?{parts.query}")
    assert again.get_json()["remaining"] == 1
    defaults = client.get("/api/org/notification-defaults", headers=acme.headers).get_json()
    assert defaults["weeklySummary"]["recipients"] == ["oncall@example.com"]
    forged = client.post(f"{parts.path}?token={parts.query[-20:]}")
    assert forged.status_code == 404 and forged.get_json()["error"] == "invalid_unsubscribe_link"

    # Next week: only the address still listed gets it.
    clock.ahead = timedelta(days=7)
    controller.run_routine(routine)
    wait_until(lambda: len(relay.messages()) >= 5)
    assert len(relay.to("lead@example.com")) == 1
    assert len(relay.to("oncall@example.com")) == 2

    # The password: encrypted in the store, never in a log line.
    assert PASSWORD not in stored_text(database)
    logs = capfd.readouterr()
    assert PASSWORD not in logs.out and PASSWORD not in logs.err


def test_what_cannot_be_sent_is_refused_when_it_is_set(client: FlaskClient, acme: OrgKey) -> None:
    weekly = {"enabled": True, "recipients": ["a@example.com"]}

    def put_weekly(body: dict[str, object]) -> tuple[int, str]:
        answer = client.put(
            "/api/org/notification-defaults", json={"weeklySummary": body}, headers=acme.headers
        )
        return answer.status_code, (answer.get_json() or {}).get("error", "")

    assert put_weekly(weekly) == (422, "smtp_not_configured")
    assert put_weekly({**weekly, "enabled": False}) == (200, "")
    bad_host = {"host": "0177.0.0.1", "fromAddress": "d@example.com"}
    answer = client.put("/api/org/smtp", json=bad_host, headers=acme.headers)
    assert answer.status_code == 422 and answer.get_json()["error"] == "smtp_host"
    assert client.get("/api/org/smtp", headers=acme.headers).status_code == 404
    relay = {"host": "smtp.example.com", "fromAddress": "d@example.com", "password": "pw"}
    assert client.put("/api/org/smtp", json=relay, headers=acme.headers).status_code == 200
    assert put_weekly({**weekly, "recipients": []}) == (422, "summary_recipients")
    twice = {**weekly, "recipients": ["a@example.com", "A@example.com"]}
    assert put_weekly(twice) == (422, "summary_recipients")
    assert put_weekly(weekly) == (200, "")
    # The summary sends through the relay: it cannot go while the summary is on.
    deleted = client.delete("/api/org/smtp", headers=acme.headers)
    assert deleted.status_code == 409 and deleted.get_json()["error"] == "smtp_in_use"
    # Same host and user: the password stays; another host: it does not follow.
    kept = client.put(
        "/api/org/smtp", json={**relay, "password": None} | {"port": 2525}, headers=acme.headers
    )
    assert kept.get_json()["passwordSet"] is False  # an explicit null clears it
    client.put("/api/org/smtp", json=relay, headers=acme.headers)
    same = {k: v for k, v in relay.items() if k != "password"}
    assert client.put("/api/org/smtp", json=same, headers=acme.headers).get_json()["passwordSet"]
    moved = {**same, "host": "smtp.elsewhere.example"}
    assert not client.put("/api/org/smtp", json=moved, headers=acme.headers).get_json()[
        "passwordSet"
    ]
    assert put_weekly({**weekly, "enabled": False}) == (200, "")
    assert client.delete("/api/org/smtp", headers=acme.headers).status_code == 204


def test_an_org_relay_on_a_private_address_is_refused_by_default(
    tmp_path: Path, database: Database, make_org: Callable[..., OrgKey]
) -> None:
    from web.app import create_app

    acme = make_org("acme", "pro")
    settings = make_settings(tmp_path, database_url=database.url)  # no private targets
    client = create_app(settings, database=database).test_client()
    with smtp_server() as relay:
        opt_in(client, acme, relay, ["lead@example.com"], security="none", username=None)
        sent = subprocess.run(
            [sys.executable, "-m", "cli", "summary", "--org", "acme", "--send"],
            env=driftgate_env(database.url, tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert sent.returncode == 1, sent.stderr
        assert "not sent to l…@example.com: blocked_target" in sent.stderr
        assert relay.messages() == []
    stats = client.get("/api/alerts/stats", headers=acme.headers).get_json()
    assert stats["byChannel"]["email"]["retrying"] == 1, stats


def test_driftgate_summary_prints_and_sends_now(
    tmp_path: Path, database: Database, make_org: Callable[..., OrgKey]
) -> None:
    from web.app import create_app

    make_org("acme", "pro")
    acme_key = make_org("initech", "pro")
    with smtp_server() as relay:
        settings = make_settings(
            tmp_path,
            database_url=database.url,
            private_target_allowlist=f"127.0.0.1:{relay.port}",
        )
        client = create_app(settings, database=database).test_client()
        env = driftgate_env(
            database.url, tmp_path, private_target_allowlist=f"127.0.0.1:{relay.port}"
        )

        def cli(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "cli", "summary", *args],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )

        printed = cli("--org", "initech")
        assert printed.returncode == 0, printed.stderr
        assert printed.stdout.startswith("Subject: driftgate weekly summary for initech")
        assert "0 breaking, 0 warning, 0 info (0 events)" in printed.stdout
        as_json = cli("--org", "initech", "--format", "json")
        assert '"orgName": "initech"' in as_json.stdout
        refused = cli("--org", "initech", "--send")
        assert refused.returncode == 2 and "no weekly summary recipients" in refused.stderr
        opt_in(client, acme_key, relay, ["a@example.com"], security="none", username=None)
        sent = cli("--org", "initech", "--send")
        assert sent.returncode == 0, sent.stderr
        assert sent.stdout.strip() == "sent to a…@example.com"
        assert len(relay.to("a@example.com")) == 1
        missing = cli("--org", "nobody")
        assert missing.returncode == 2


@pytest.mark.skipif(not ON_POSTGRES, reason="SQLite serves one controller process at a time")
def test_two_controller_processes_send_a_week_once(
    tmp_path: Path,
    database: Database,
    make_org: Callable[..., OrgKey],
) -> None:
    from web.app import create_app

    acme = make_org("acme", "pro")
    with smtp_server() as relay:
        allow = f"127.0.0.1:{relay.port}"
        settings = make_settings(
            tmp_path, database_url=database.url, private_target_allowlist=allow
        )
        client = create_app(settings, database=database).test_client()
        recipients = [f"r{i}@example.com" for i in range(3)]
        opt_in(client, acme, relay, recipients, security="none", username=None)
        env = driftgate_env(
            database.url, tmp_path, private_target_allowlist=allow, log_format="text"
        )
        processes = []
        with ExitStack() as stack:
            for index in range(2):
                processes.append(
                    stack.enter_context(
                        started(
                            [sys.executable, "-m", "cli", "controller", "--tick", "0.2"],
                            env=env,
                            log=tmp_path / f"controller-{index}.log",
                        )
                    )
                )
            wait_until(lambda: len(relay.messages()) >= 3)
            # Both processes have gone round twice since (each ran the routine when it
            # started), and whatever they queued has run and gone out.
            ticked = controllers_ticked(database, 2)
            wait_until(
                lambda: (
                    ticked()
                    and jobs_done(database, service.WEEKLY_SUMMARY)
                    and outbox_delivered(database)
                )
            )
        assert sorted(r for m in relay.messages() for r in m.rcpt_tos) == recipients
        with database.session() as session:
            count = session.scalar(
                select(func.count()).select_from(Job).where(Job.kind == service.WEEKLY_SUMMARY)
            )
        assert count == 1
        assert [p.returncode for p in processes] == [0, 0]
