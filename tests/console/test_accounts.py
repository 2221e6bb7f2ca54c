"""Console accounts and sessions: sign-in, set-password links, CSRF, session fixation, roles,
org scoping, the sign-in rate limits, sign-out everywhere, and a session on the API."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import delete, select, update

from controller.accounts import service as accounts
from controller.orgs.service import get_org
from controller.store.db import Database
from controller.store.models import ApiKey, ConsoleSession, PreflightDecision, SignInAttempt
from controller.store.types import utcnow
from tests.conftest import OrgKey, make_settings
from tests.factories import PASSWORD, csrf_of, make_user, sign_in


def test_a_user_sets_a_password_once_and_signs_in(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    with database.transaction() as session:
        _user, token = accounts.create_user(
            session, get_org(session, "acme"), "Lead@Example.com", "admin", actor="t", now=utcnow()
        )
    form = client.get(f"/console/set-password?token={token}")
    assert form.status_code == 200 and "lead@example.com" in form.get_data(as_text=True)
    assert form.headers["Referrer-Policy"] == "no-referrer"
    short = client.post(
        "/console/set-password",
        data={
            "token": token,
            "password": "short",
            "confirm": "short",
            "csrf_token": csrf_of(form.get_data(as_text=True)),
        },
    )
    assert short.status_code == 422 and "at least 12" in short.get_data(as_text=True)
    again = client.get(f"/console/set-password?token={token}").get_data(as_text=True)
    done = client.post(
        "/console/set-password",
        data={
            "token": token,
            "password": PASSWORD,
            "confirm": PASSWORD,
            "csrf_token": csrf_of(again),
        },
    )
    assert done.status_code == 302
    # The link is spent.
    assert client.get(f"/console/set-password?token={token}").status_code == 404
    sign_in(client, "lead@example.com")
    overview = client.get("/console/")
    assert overview.status_code == 200
    text = overview.get_data(as_text=True)
    assert "Overview of acme" in text and "<svg" in text
    assert "default-src 'self'" in overview.headers["Content-Security-Policy"]


def test_the_session_cookie_is_fresh_at_sign_in_and_locked_down(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    make_user(database, "acme", "a@example.com")
    # A token planted before sign-in (session fixation) is never the one signed in.
    client.set_cookie("driftgate_session", "planted-by-someone-else")
    form = client.get("/console/sign-in").get_data(as_text=True)
    answer = client.post(
        "/console/sign-in",
        data={"email": "a@example.com", "password": PASSWORD, "csrf_token": csrf_of(form)},
    )
    cookie = answer.headers["Set-Cookie"]
    assert "driftgate_session=" in cookie and "planted-by-someone-else" not in cookie
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie
    with database.session() as session:
        assert session.get(ConsoleSession, "planted-by-someone-else") is None
    planted = Flask.test_client(client.application)
    planted.set_cookie("driftgate_session", "planted-by-someone-else")
    assert planted.get("/console/").status_code == 302


def test_cookies_are_secure_behind_https(tmp_path: Path, database: Database, acme: OrgKey) -> None:
    from web.app import create_app

    settings = make_settings(
        tmp_path, database_url=database.url, public_base_url="https://driftgate.example.com"
    )
    client = create_app(settings, database=database).test_client()
    make_user(database, "acme", "a@example.com")
    form = client.get("/console/sign-in")
    assert "Secure" in form.headers["Set-Cookie"]
    answer = client.post(
        "/console/sign-in",
        data={
            "email": "a@example.com",
            "password": PASSWORD,
            "csrf_token": csrf_of(form.get_data(as_text=True)),
        },
    )
    assert "Secure" in answer.headers["Set-Cookie"]


def test_forms_without_their_csrf_token_are_refused(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    make_user(database, "acme", "a@example.com")
    # Sign-in itself: the pre-session token must match its cookie.
    client.get("/console/sign-in")
    forged = client.post(
        "/console/sign-in",
        data={"email": "a@example.com", "password": PASSWORD, "csrf_token": "guess"},
    )
    assert forged.status_code == 403
    sign_in(client, "a@example.com")
    for data in ({"name": "x"}, {"name": "x", "csrf_token": "stale"}):
        refused = client.post("/console/settings/keys", data=data)
        assert refused.status_code == 403 and "CSRF" in refused.get_data(as_text=True)
    with database.session() as session:
        assert session.scalars(select(ApiKey).where(ApiKey.name == "x")).all() == []


def test_an_admin_creates_and_revokes_a_key_a_viewer_cannot(
    client: FlaskClient,
    acme: OrgKey,
    make_org: Callable[..., OrgKey],
    database: Database,
    app: Flask,
) -> None:
    make_user(database, "acme", "admin@example.com")
    make_user(database, "acme", "viewer@example.com", role="viewer")
    other = make_org("globex")
    sign_in(client, "admin@example.com")
    page = client.get("/console/settings/keys").get_data(as_text=True)
    created = client.post(
        "/console/settings/keys", data={"name": "ci", "csrf_token": csrf_of(page)}
    )
    assert created.status_code == 201
    key = re.search(r'<code id="new-key">(dg_[^<]+)</code>', created.get_data(as_text=True))
    assert key is not None
    api = client.application.test_client()  # no cookie: the key alone
    assert (
        api.get("/api/watches", headers={"Authorization": f"Bearer {key.group(1)}"}).status_code
        == 200
    )
    # Another org's key id is not this org's to revoke.
    refused = client.post(
        f"/console/settings/keys/{other.key_id}/revoke", data={"csrf_token": csrf_of(page)}
    )
    assert refused.status_code == 404
    viewer = sign_in(app.test_client(), "viewer@example.com")
    listing = viewer.get("/console/settings/keys").get_data(as_text=True)
    assert "Create a key" not in listing and "Revoke" not in listing
    denied = viewer.post(
        "/console/settings/keys", data={"name": "v", "csrf_token": csrf_of(listing)}
    )
    assert denied.status_code == 403 and "admin role" in denied.get_data(as_text=True)
    with database.session() as session:
        ids = session.scalars(select(ApiKey.id).where(ApiKey.name == "ci")).all()
    revoked = viewer.post(
        f"/console/settings/keys/{ids[0]}/revoke", data={"csrf_token": csrf_of(listing)}
    )
    assert revoked.status_code == 403
    assert (
        api.get("/api/watches", headers={"Authorization": f"Bearer {key.group(1)}"}).status_code
        == 200
    )


def attempt(
    who: FlaskClient,
    email: str,
    password: str,
    address: str = "127.0.0.1",
    forwarded_for: str | None = None,
) -> int:
    """One sign-in through the form from `address` (the socket's peer), or through a proxy
    at `address` for the client `forwarded_for`; the answer's status."""
    form = who.get("/console/sign-in").get_data(as_text=True)
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
    return who.post(
        "/console/sign-in",
        data={"email": email, "password": password, "csrf_token": csrf_of(form)},
        headers=headers,
        environ_base={"REMOTE_ADDR": address},
    ).status_code


def test_sign_in_is_rate_limited_per_account_and_per_address(
    client: FlaskClient, acme: OrgKey, database: Database, app: Flask
) -> None:
    make_user(database, "acme", "a@example.com")
    make_user(database, "acme", "b@example.com")

    for _ in range(accounts.PAIR_FAILURES):
        assert attempt(client, "a@example.com", "wrong password!") == 401
    # Locked for this account from this address, even with the right password; the account
    # from elsewhere and another account from here still work.
    assert attempt(client, "a@example.com", PASSWORD) == 429
    assert attempt(app.test_client(), "a@example.com", PASSWORD, "10.1.1.1") == 302
    assert attempt(app.test_client(), "b@example.com", PASSWORD) == 302
    # Per address: many accounts guessed from one address; its wrong passwords become 429s,
    # a right one still signs in, from there as from anywhere.
    for index in range(accounts.ADDRESS_FAILURES):
        attempt(app.test_client(), f"nobody{index}@example.com", "x" * 12, "10.9.9.9")
    assert attempt(app.test_client(), "b@example.com", "wrong password!", "10.9.9.9") == 429
    assert attempt(app.test_client(), "b@example.com", PASSWORD, "10.9.9.9") == 302
    assert attempt(app.test_client(), "b@example.com", PASSWORD, "10.1.1.1") == 302


def test_an_account_guessed_from_many_addresses_is_locked_everywhere(
    acme: OrgKey, database: Database, app: Flask
) -> None:
    make_user(database, "acme", "a@example.com")
    make_user(database, "acme", "b@example.com")
    # Below the per-address count each, over the account's count together.
    for index in range(accounts.ACCOUNT_FAILURES):
        address = f"10.2.0.{index // (accounts.PAIR_FAILURES - 1)}"
        assert attempt(app.test_client(), "a@example.com", "wrong password!", address) == 401
    assert attempt(app.test_client(), "a@example.com", PASSWORD, "10.3.3.3") == 429
    assert attempt(app.test_client(), "b@example.com", PASSWORD, "10.3.3.3") == 302


def test_past_the_instance_ceiling_wrong_passwords_slow_down_and_right_ones_sign_in(
    acme: OrgKey, database: Database, app: Flask
) -> None:
    make_user(database, "acme", "a@example.com")
    # A guesser spread over many clients and accounts, each below its own counts (written as
    # the attempts' rows: hashing that many wrong passwords would take minutes).
    with database.transaction() as session:
        session.add_all(
            SignInAttempt(
                email=f"user{i}@example.com",
                address=f"10.7.{i // 250}.{i % 250}",
                at=utcnow(),
                success=False,
            )
            for i in range(accounts.GLOBAL_FAILURES)
        )
    assert attempt(app.test_client(), "a@example.com", "wrong password!", "10.8.8.8") == 429
    assert attempt(app.test_client(), "nobody@example.com", "x" * 12, "10.8.8.9") == 429
    assert attempt(app.test_client(), "a@example.com", PASSWORD, "10.8.8.10") == 302


def test_behind_a_proxy_made_up_accounts_lock_no_one_out(
    tmp_path: Path, acme: OrgKey, database: Database
) -> None:
    """The issue's finding: 20 failed sign-ins with made-up e-mails through the TLS proxy
    made every sign-in answer 429, right passwords included."""
    from web.app import create_app

    make_user(database, "acme", "a@example.com")
    proxy = "10.0.0.2"
    for hops in (1, 0):  # the proxy declared, and not (every client is the proxy's address)
        app = create_app(
            make_settings(tmp_path, database_url=database.url, trusted_proxy_hops=hops),
            database=database,
        )
        for index in range(accounts.ADDRESS_FAILURES + 1):
            made_up = f"made-up-{hops}-{index}@example.com"
            status = attempt(app.test_client(), made_up, "x" * 12, proxy, "203.0.113.66")
            assert status == (401 if index < accounts.ADDRESS_FAILURES else 429)
        # The right password from the same client, and from another one, signs in.
        assert attempt(app.test_client(), "a@example.com", PASSWORD, proxy, "203.0.113.66") == 302
        assert attempt(app.test_client(), "a@example.com", PASSWORD, proxy, "198.51.100.4") == 302
        with database.transaction() as session:
            session.execute(delete(SignInAttempt))


def test_behind_a_proxy_an_account_guesser_is_stopped_by_its_own_address(
    tmp_path: Path, acme: OrgKey, database: Database
) -> None:
    from web.app import create_app

    make_user(database, "acme", "a@example.com")
    app = create_app(
        make_settings(tmp_path, database_url=database.url, trusted_proxy_hops=1),
        database=database,
    )
    proxy, guesser, owner = "10.0.0.2", "203.0.113.66", "198.51.100.4"
    for _ in range(accounts.PAIR_FAILURES):
        assert attempt(app.test_client(), "a@example.com", "wrong password!", proxy, guesser) == 401
    assert attempt(app.test_client(), "a@example.com", PASSWORD, proxy, guesser) == 429
    # A client cannot step around its count by naming another address before its own.
    spoofed = f"{owner}, {guesser}"
    assert attempt(app.test_client(), "a@example.com", PASSWORD, proxy, spoofed) == 429
    assert attempt(app.test_client(), "a@example.com", PASSWORD, proxy, owner) == 302
    with database.transaction() as session:
        rows = session.scalars(select(SignInAttempt.address)).all()
    assert set(rows) == {guesser, owner}  # the clients' addresses, never the proxy's


def test_sign_out_everywhere_ends_every_session_and_idle_ones_end(
    acme: OrgKey, database: Database, app: Flask
) -> None:
    make_user(database, "acme", "a@example.com")
    laptop, phone = (
        sign_in(app.test_client(), "a@example.com"),
        sign_in(app.test_client(), "a@example.com"),
    )
    assert laptop.get("/console/").status_code == 200 and phone.get("/console/").status_code == 200
    page = phone.get("/console/settings/keys").get_data(as_text=True)
    assert (
        phone.post("/console/sign-out-everywhere", data={"csrf_token": csrf_of(page)}).status_code
        == 302
    )
    assert laptop.get("/console/").status_code == 302
    assert phone.get("/console/").status_code == 302
    idle = sign_in(app.test_client(), "a@example.com")
    with database.transaction() as session:
        session.execute(
            update(ConsoleSession).values(
                last_seen_at=utcnow() - accounts.IDLE_TTL - timedelta(seconds=1)
            )
        )
    assert idle.get("/console/").status_code == 302


def test_a_session_reads_the_api_and_calls_preflight_with_its_csrf_token(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    make_user(database, "acme", "a@example.com", role="viewer")
    sign_in(client, "a@example.com")
    assert client.get("/api/watches").status_code == 200
    page = client.get("/console/").get_data(as_text=True)
    token = csrf_of(page)
    body = {"agentId": "no-such-agent"}
    refused = client.post("/api/preflight", json=body)
    assert refused.status_code == 403 and refused.get_json()["error"] == "csrf_failed"
    answered = client.post("/api/preflight", json=body, headers={"X-CSRF-Token": token})
    assert answered.status_code == 404, answered.get_json()  # an agent the org does not have
    assert "no-such-agent" in answered.get_json()["message"]
    # Writes stay with API keys.
    write = client.post(
        "/api/watches",
        json={"name": "x", "url": "https://example.com/o.json"},
        headers={"X-CSRF-Token": token},
    )
    assert write.status_code == 401


def test_driftgate_users_prints_a_link_that_sets_the_password(
    tmp_path: Path, acme: OrgKey, database: Database, client: FlaskClient
) -> None:
    import subprocess
    import sys

    from tests.processes import driftgate_env

    env = driftgate_env(database.url, tmp_path, public_base_url="https://dg.example.com")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cli", "users", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    made = cli("create", "--org", "acme", "--email", "Ops@Example.com", "--role", "admin")
    assert made.returncode == 0, made.stderr
    link = re.search(r"https://dg\.example\.com(/console/set-password\?token=\S+)", made.stdout)
    assert link is not None, made.stdout
    header, row = cli("list", "--org", "acme").stdout.splitlines()
    assert header.split()[:3] == ["EMAIL", "ROLE", "STATE"]
    assert row.split()[:3] == ["ops@example.com", "admin", "invited"]
    again = cli("create", "--org", "acme", "--email", "ops@example.com")
    assert again.returncode == 2 and "exists" in again.stderr
    assert cli("create", "--org", "nope", "--email", "x@example.com").returncode == 2
    assert client.get(link.group(1)).status_code == 200
    reset = cli("reset", "--email", "ops@example.com")
    assert reset.returncode == 0
    assert client.get(link.group(1)).status_code == 404  # the first link no longer works


def test_the_hourly_prune_drops_ended_sessions_and_old_attempts(
    acme: OrgKey, database: Database, app: Flask
) -> None:
    make_user(database, "acme", "a@example.com")
    live = sign_in(app.test_client(), "a@example.com")
    sign_in(app.test_client(), "a@example.com")
    later = utcnow() + accounts.IDLE_TTL + timedelta(minutes=1)
    with database.transaction() as session:
        first = session.scalars(select(ConsoleSession)).first()
        assert first is not None
        first.last_seen_at = later  # one of the two was used recently
        assert accounts.prune(session, later) == 1
    with database.transaction() as session:
        assert accounts.prune(session, later + timedelta(days=2)) >= 2  # the session, attempts
    assert live.get("/console/").status_code == 302


def test_a_session_preflight_is_answered_and_holds_no_other_org_back(
    app: Flask, acme: OrgKey, database: Database, make_org: Callable[..., OrgKey]
) -> None:
    # The session is looked up outside the request's own transaction: on SQLite a writing
    # request's transaction holds the write lock, and the run gate records its decision on a
    # connection of its own (the lookup inside it made this a 500 after the busy timeout,
    # with every writer of every org waiting meanwhile).
    client = app.test_client()
    launched = client.post(
        "/api/watches/from-template",
        json={
            "templateId": "system/openapi-json",
            "url": "https://gate.example.com/openapi.json",
            "agent": {"id": "console-bot"},
        },
        headers=acme.headers,
    )
    assert launched.status_code == 201, launched.get_json()
    other = make_org("globex")
    make_user(database, "acme", "a@example.com", role="viewer")
    sign_in(client, "a@example.com")
    token = csrf_of(client.get("/console/").get_data(as_text=True))
    # The next lookup writes too (the idle clock's touch is due).
    with database.transaction() as session:
        session.execute(
            update(ConsoleSession).values(last_seen_at=utcnow() - accounts.SESSION_TOUCH)
        )

    answers: dict[str, tuple[int, Any]] = {}
    start = threading.Barrier(2)

    def by_session() -> None:
        start.wait()
        answer = client.post(
            "/api/preflight", json={"agentId": "console-bot"}, headers={"X-CSRF-Token": token}
        )
        answers["session"] = (answer.status_code, answer.get_json())

    def by_key() -> None:
        start.wait()
        answer = app.test_client().post(
            "/api/preflight", json={"watchIds": []}, headers=other.headers
        )
        answers["key"] = (answer.status_code, answer.get_json())

    threads = [threading.Thread(target=by_session), threading.Thread(target=by_key)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    status, body = answers["session"]
    assert status == 200, body
    assert body["allowed"] is False and body["agent"]["id"] == "console-bot"
    assert answers["key"][0] == 200 and answers["key"][1]["allowed"] is True
    with database.session() as session:
        recorded = set(session.scalars(select(PreflightDecision.id)))
        seen = session.scalars(select(ConsoleSession.last_seen_at)).one()
    assert {body["decisionId"], answers["key"][1]["decisionId"]} <= recorded
    if utcnow() - seen >= accounts.SESSION_TOUCH:
        # The touch is best effort (issue 40, point 7): skipped while another writer held the
        # lock, it is taken by the next request of the session.
        again = client.post(
            "/api/preflight", json={"agentId": "console-bot"}, headers={"X-CSRF-Token": token}
        )
        assert again.status_code == 200, again.get_json()
        with database.session() as session:
            seen = session.scalars(select(ConsoleSession.last_seen_at)).one()
    assert utcnow() - seen < accounts.SESSION_TOUCH  # the touch was committed
