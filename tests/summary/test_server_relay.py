"""The server's SMTP relay: set once by the operator (environment or config file), used for
every org without a relay of its own, overridden by an org's relay. Real loopback SMTP servers
(STARTTLS with AUTH for the server's, in clear for an org's), `driftgate summary --send`. The
relays' passwords never appear in logs, API answers, the console or the store."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from cli.main import main
from controller.errors import ConfigError
from controller.settings import Settings, load_settings
from controller.sources.http import FetchError
from controller.store.db import Database
from controller.summary import service, smtp
from tests.conftest import OrgKey, make_settings
from tests.factories import csrf_of, make_user, sign_in
from tests.processes import driftgate_env
from tests.smtp_server import SmtpServer, smtp_server
from tests.summary.conftest import stored_text
from tests.tls import self_signed_certificate

SERVER_PASSWORD = "operator-relay-pw-5d2e9a"
SERVER_USER = "driftgate-operator"
ORG_PASSWORD = "org-relay-pw-81bb"
WEEKLY = {"enabled": True, "recipients": ["lead@example.com"], "weekday": "monday"}


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.getMessage()} {record.__dict__}")


def test_the_relay_settings_come_from_the_environment_and_the_config_file(
    tmp_path: Path,
) -> None:
    config = tmp_path / "driftgate.yaml"
    config.write_text(
        "smtp_host: SMTP.Internal.Example\nsmtp_port: 465\nsmtp_security: tls\n"
        "smtp_username: mailer\nsmtp_from_address: driftgate@example.com\n"
    )
    settings = load_settings(env={"DRIFTGATE_SMTP_PASSWORD": SERVER_PASSWORD}, config_file=config)
    relay = service.server_relay(settings)
    assert relay == smtp.Relay(
        host="smtp.internal.example",
        port=465,
        security="tls",
        sender="driftgate@example.com",
        username="mailer",
        password=SERVER_PASSWORD,
        operator=True,
    )
    assert SERVER_PASSWORD not in repr(settings) and SERVER_PASSWORD not in repr(relay)
    assert service.server_relay(load_settings(env={"DRIFTGATE_SMTP_HOST": ""})) is None

    def refused(env: dict[str, str]) -> str:
        with pytest.raises(ConfigError) as info:
            load_settings(env=env)
        assert SERVER_PASSWORD not in info.value.message
        return info.value.message

    host = {"DRIFTGATE_SMTP_HOST": "smtp.example.com"}
    assert "smtp_host (DRIFTGATE_SMTP_HOST) is set without smtp_from_address" in refused(host)
    sender = {"DRIFTGATE_SMTP_FROM_ADDRESS": "d@example.com"}
    assert "smtp_password (DRIFTGATE_SMTP_PASSWORD) is set without smtp_username" in refused(
        {**host, **sender, "DRIFTGATE_SMTP_PASSWORD": SERVER_PASSWORD}
    )
    assert "smtp_username (DRIFTGATE_SMTP_USERNAME) is set without smtp_host" in refused(
        {"DRIFTGATE_SMTP_USERNAME": "mailer"}
    )
    assert "DRIFTGATE_SMTP_HOST: Value error, host '0177.0.0.1' is not a canonical" in refused(
        {**sender, "DRIFTGATE_SMTP_HOST": "0177.0.0.1"}
    )
    assert "DRIFTGATE_SMTP_FROM_ADDRESS: Value error, must be an e-mail address" in refused(
        {**host, "DRIFTGATE_SMTP_FROM_ADDRESS": "Driftgate <d@example.com>"}
    )
    assert "DRIFTGATE_SMTP_SECURITY" in refused(
        {**host, **sender, "DRIFTGATE_SMTP_SECURITY": "ssl"}
    )


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    return self_signed_certificate(tmp_path)


def relay_settings(operator: SmtpServer, certificate: tuple[Path, Path]) -> dict[str, str]:
    """The server relay (STARTTLS, login) as settings; loopback is not allowed to checks."""
    return {
        "smtp_host": operator.host,
        "smtp_port": str(operator.port),
        "smtp_security": "starttls",
        "smtp_username": SERVER_USER,
        "smtp_password": SERVER_PASSWORD,
        "smtp_from_address": "ops@driftgate.example",
        "ca_bundle": str(certificate[0]),
    }


def test_the_server_relay_serves_orgs_without_their_own_and_an_org_relay_overrides_it(
    tmp_path: Path,
    database: Database,
    make_org: Callable[..., OrgKey],
    certificate: tuple[Path, Path],
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from web.app import create_app

    acme, globex = make_org("acme", "pro"), make_org("globex", "pro")
    with (
        smtp_server(tls=certificate, username=SERVER_USER, password=SERVER_PASSWORD) as operator,
        smtp_server(username="globex-mailer", password=ORG_PASSWORD) as own,
    ):
        values = relay_settings(operator, certificate)
        # Only the org relay's port is allowed among private addresses: the server's relay is
        # the operator's and needs no allowance.
        allow = f"127.0.0.1:{own.port}"
        settings = make_settings(
            tmp_path, database_url=database.url, private_target_allowlist=allow, **values
        )
        client = create_app(settings, database=database).test_client()
        # Every record of driftgate's loggers from here on, DEBUG included, with its fields.
        records = Records()
        logger = logging.getLogger("driftgate")
        monkeypatch.setattr(logger, "handlers", [records])
        monkeypatch.setattr(logger, "level", logging.DEBUG)

        # acme has no relay: the server's applies, and the summary can be switched on.
        shown = client.get("/api/org/smtp", headers=acme.headers)
        assert shown.status_code == 200, shown.get_json()
        assert shown.get_json() == {
            "source": "server",
            "host": "127.0.0.1",
            "port": operator.port,
            "security": "starttls",
            "username": None,
            "passwordSet": True,
            "fromAddress": "ops@driftgate.example",
            "updatedAt": None,
            "serverRelaySet": True,
        }
        answers = [shown.get_data(as_text=True)]
        for who in (acme, globex):
            on = client.put(
                "/api/org/notification-defaults",
                json={"weeklySummary": {**WEEKLY, "recipients": [f"lead@{who.org_name}.example"]}},
                headers=who.headers,
            )
            assert on.status_code == 200, on.get_json()

        # globex sets its own relay: it wins.
        org_relay = {
            "host": own.host,
            "port": own.port,
            "security": "none",
            "username": "globex-mailer",
            "password": ORG_PASSWORD,
            "fromAddress": "alerts@globex.example",
        }
        put = client.put("/api/org/smtp", json=org_relay, headers=globex.headers)
        assert put.status_code == 200, put.get_json()
        assert put.get_json()["source"] == "org" and put.get_json()["serverRelaySet"] is True
        answers += [put.get_data(as_text=True)]
        answers += [client.get("/api/org/smtp", headers=globex.headers).get_data(as_text=True)]

        env = driftgate_env(database.url, tmp_path, private_target_allowlist=allow, **values)

        def send(org: str) -> Result:
            # `driftgate summary --send`: delivered now, through the relay that applies.
            sent = CliRunner().invoke(main, ["summary", "--org", org, "--send"], env=env)
            assert sent.exit_code == 0, (sent.output, sent.stderr)
            assert SERVER_PASSWORD not in sent.output and ORG_PASSWORD not in sent.output
            return sent

        assert send("acme").stdout.strip() == "sent to l…@acme.example"
        assert send("globex").stdout.strip() == "sent to l…@globex.example"
        (to_acme,) = operator.to("lead@acme.example")
        assert to_acme["From"] == "ops@driftgate.example"
        assert operator.to("lead@globex.example") == []
        (to_globex,) = own.to("lead@globex.example")
        assert to_globex["From"] == "alerts@globex.example"
        # STARTTLS, then each relay's own login: a password goes only to its relay.
        assert set(operator.logins) == {(SERVER_USER, SERVER_PASSWORD)}
        assert set(own.logins) == {("globex-mailer", ORG_PASSWORD)}

        # globex removes its relay while the summary is on: the server's takes over.
        assert client.delete("/api/org/smtp", headers=globex.headers).status_code == 204
        fallback = client.get("/api/org/smtp", headers=globex.headers).get_json()
        assert fallback["source"] == "server"
        send("globex")
        assert len(operator.to("lead@globex.example")) == 1
        stats = client.get("/api/alerts/stats", headers=globex.headers).get_json()
        assert stats["byChannel"]["email"]["successful"] == 2, stats

    for answer in answers:
        assert SERVER_PASSWORD not in answer and SERVER_USER not in answer
        assert ORG_PASSWORD not in answer
    assert SERVER_PASSWORD not in stored_text(database)
    logs = capfd.readouterr()
    assert SERVER_PASSWORD not in logs.out + logs.err
    logged = "\n".join(records.lines)
    assert "/api/org/smtp" in logged, logged  # the relay's PUT was logged
    assert SERVER_PASSWORD not in logged and ORG_PASSWORD not in logged


def test_a_refused_login_names_the_relay_never_the_password(
    tmp_path: Path, certificate: tuple[Path, Path]
) -> None:
    with smtp_server(tls=certificate, username=SERVER_USER, password=SERVER_PASSWORD) as operator:
        values = {**relay_settings(operator, certificate), "smtp_password": "wrong-" + "pw-0a1b"}
        settings: Settings = make_settings(tmp_path, **values)
        relay = service.server_relay(settings)
        assert relay is not None
        with pytest.raises(FetchError) as info:
            smtp.send(relay, "lead@example.com", b"Subject: x\r\n\r\nx\r\n", settings)
    assert info.value.failure_class == "smtp_auth"
    assert str(info.value) == f"SMTP relay 127.0.0.1:{operator.port} refused the credentials (535)"
    assert operator.received == []


def test_without_any_relay_the_summary_cannot_be_switched_on(
    client: FlaskClient, acme: OrgKey
) -> None:
    missing = client.get("/api/org/smtp", headers=acme.headers)
    assert missing.status_code == 404
    assert "the server has none" in missing.get_json()["message"]
    on = client.put(
        "/api/org/notification-defaults", json={"weeklySummary": WEEKLY}, headers=acme.headers
    )
    assert on.status_code == 422 and on.get_json()["error"] == "smtp_not_configured"
    assert "or the server's (smtp_host)" in on.get_json()["message"]


def test_the_console_says_which_relay_applies(
    tmp_path: Path,
    database: Database,
    make_org: Callable[..., OrgKey],
    certificate: tuple[Path, Path],
) -> None:
    from web.app import create_app

    make_org("acme", "pro")
    make_user(database, "acme", "admin@example.com")
    values = {
        "smtp_host": "smtp.internal.example",
        "smtp_username": SERVER_USER,
        "smtp_password": SERVER_PASSWORD,
        "smtp_from_address": "ops@driftgate.example",
    }
    settings = make_settings(tmp_path, database_url=database.url, **values)
    admin = sign_in(create_app(settings, database=database).test_client(), "admin@example.com")
    page = admin.get("/console/settings").get_data(as_text=True)
    assert "Sent through smtp.internal.example:587 from ops@driftgate.example" in page
    assert "the server&#39;s relay" in page or "the server's relay" in page
    # The form is the org's own relay: empty, never the operator's values.
    assert 'name="host" required maxlength="253" value=""' in page
    assert SERVER_PASSWORD not in page and SERVER_USER not in page
    weekly = admin.post(
        "/console/settings/notifications",
        data={
            "csrf_token": csrf_of(page),
            "severity": "breaking",
            "weeklyEnabled": "1",
            "recipients": "a@example.com",
        },
    )
    assert weekly.status_code == 302, weekly.get_data(as_text=True)
