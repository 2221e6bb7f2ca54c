"""`driftgate preflight` against a real server on 127.0.0.1: exit codes 0/1/2, the text and
json formats, `--wait`, `--dry-run`, `--ignore`, and what the request carries."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpx
import pytest
from flask import Flask

from controller import __version__
from controller.store.db import Database
from tests.cli.preflights import (
    Clock,
    add_agent,
    api_client,
    create_watch,
    drift,
    mark_checked,
    run,
)
from tests.conftest import OrgKey
from tests.servers import WsgiServer as Server
from tests.servers import serving

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.events: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.events.append({"event": record.getMessage(), **getattr(record, "fields", {})})


@pytest.fixture
def server_log(monkeypatch: pytest.MonkeyPatch) -> _Records:
    """The server's structured log, kept off stderr (CliRunner swaps `sys.stderr` for the
    whole process while a command runs, and the server thread logs there)."""
    records = _Records()
    monkeypatch.setattr(logging.getLogger("driftgate"), "handlers", [records])
    return records


@pytest.fixture
def server(app: Flask, server_log: _Records) -> Iterator[Server]:
    with serving(app) as running:
        yield running


@pytest.fixture
def api(server: Server, acme: OrgKey) -> Iterator[httpx.Client]:
    with api_client(server.url, acme) as client:
        yield client


@pytest.fixture
def fresh(api: httpx.Client) -> str:
    """A watch that was never run."""
    return create_watch(api, "fresh")


@pytest.fixture
def healthy(api: httpx.Client, database: Database) -> str:
    """A watch checked once, `ok`."""
    watch_id = create_watch(api, "healthy")
    mark_checked(database, watch_id)
    return watch_id


@pytest.fixture
def paused(api: httpx.Client) -> str:
    watch_id = create_watch(api, "paused")
    assert api.post(f"/api/watches/{watch_id}/pause").json()["driftStatus"] == "disabled"
    return watch_id


def test_allowed_exits_0_and_identifies_the_cli(
    server: Server, server_log: _Records, acme: OrgKey, healthy: str
) -> None:
    result = run(server.url, acme.key, "--watch", healthy)
    assert result.exit_code == 0, result.output
    first, *rest = result.stdout.splitlines()
    assert first.startswith("allowed decision ") and rest == []
    assert result.stderr == ""
    (request,) = server.preflights()
    assert request["user_agent"] == f"driftgate-cli/{__version__}"
    assert request["source"] == "driftgate-cli"
    assert request["authorization"] == f"Bearer {acme.key}"
    (logged,) = [e for e in server_log.events if e.get("path") == "/api/preflight"]
    assert logged["event"] == "http.request" and logged["source"] == "driftgate-cli"


def test_blocked_exits_1_with_one_line_per_blocked_watch(
    server: Server, acme: OrgKey, healthy: str, fresh: str, paused: str
) -> None:
    result = run(server.url, acme.key, "--watch", healthy, "--watch", fresh, "--watch", paused)
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("blocked decision ")
    assert lines[1:] == [
        f"  fresh ({fresh}): never_run: never_checked -> wait_for_first_check",
        f"  paused ({paused}): disabled: disabled -> resume_watch",
    ]
    assert acme.key not in result.output + result.stderr


def test_an_unknown_id_is_blocked_by_its_id(server: Server, acme: OrgKey) -> None:
    result = run(server.url, acme.key, "--watch", "no-such-watch")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[1] == "  no-such-watch: -: not_found -> check_watch_id"


def test_a_watch_may_be_named(server: Server, acme: OrgKey, healthy: str, fresh: str) -> None:
    """Names become ids with one listing; a name the org lacks stays as given: not_found."""
    allowed = run(server.url, acme.key, "--watch", "healthy")
    assert allowed.exit_code == 0, allowed.output
    mixed = run(server.url, acme.key, "--watch", healthy, "--watch", "fresh", "--watch", "nope")
    assert mixed.exit_code == 1
    assert f"fresh ({fresh})" in mixed.stdout and "nope: -: not_found" in mixed.stdout


def test_ignore_moves_a_row_aside_and_allows(
    server: Server, acme: OrgKey, paused: str, healthy: str
) -> None:
    result = run(
        server.url, acme.key, "--watch", paused, "--watch", healthy,
        "--ignore", f"{paused}:maintenance window: until 5pm",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("allowed decision ")
    assert lines[1:] == [
        f"  ignored paused ({paused}): disabled: disabled -> resume_watch "
        "(ignored: maintenance window: until 5pm)"
    ]


def test_json_format_prints_the_servers_answer(server: Server, acme: OrgKey, fresh: str) -> None:
    result = run(server.url, acme.key, "--watch", fresh, "--format", "json")
    assert result.exit_code == 1
    answer = json.loads(result.stdout)
    assert answer["allowed"] is False and answer["policyBlocked"] is False
    assert [row["watchId"] for row in answer["blocked"]] == [fresh]
    assert answer["blocked"][0]["reasons"] == ["never_checked"]
    assert set(answer) >= {"decisionId", "evaluatedAt", "durationMs", "ignored", "agent"}


def test_an_agent_policy_block_is_409_and_exit_1(
    server: Server, acme: OrgKey, database: Database, api: httpx.Client
) -> None:
    watch_id = create_watch(api, "stripe")
    incident_id = drift(database, acme, watch_id)
    add_agent(database, acme, "billing", [watch_id])
    result = run(server.url, acme.key, "--agent", "billing")
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("blocked (policy) decision ")
    assert lines[1] == (
        f"  stripe ({watch_id}): drifted: breaking_drift, policy_block:block_new_runs"
        " -> ack_incident"
    )
    answer = json.loads(run(server.url, acme.key, "--agent", "billing", "--format", "json").stdout)
    assert answer["policyBlocked"] is True and answer["blocked"][0]["incidentId"] == incident_id
    # A policy block cannot be ignored by the caller.
    ignored = run(server.url, acme.key, "--agent", "billing", "--ignore", f"{watch_id}:hotfix")
    assert ignored.exit_code == 1 and ignored.stdout.startswith("blocked (policy)")


def test_a_killed_agent_is_blocked_with_its_reason(
    server: Server, acme: OrgKey, database: Database, healthy: str
) -> None:
    add_agent(database, acme, "reports", [healthy], runtime_state="killed")
    result = run(server.url, acme.key, "--agent", "reports")
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[1:] == ["  agent reports: agent_killed -> unblock_agent"]
    assert result.stdout.startswith("blocked (policy) decision ")


def test_dry_run_never_answers_409_exits_0_and_never_waits(
    server: Server, acme: OrgKey, database: Database, api: httpx.Client, clock: Clock
) -> None:
    watch_id = create_watch(api, "stripe")
    drift(database, acme, watch_id)
    add_agent(database, acme, "billing", [watch_id])
    result = run(server.url, acme.key, "--agent", "billing", "--dry-run", "--format", "json")
    assert result.exit_code == 0  # the break-glass: the decision is reported, not enforced
    answer = json.loads(result.stdout)
    assert answer["policyBlocked"] is False and answer["wouldPolicyBlock"] is True
    assert answer["dryRun"] is True and answer["allowed"] is False
    assert result.stderr == (
        f"driftgate: dry run: the run would be blocked; exit 0 (the decision "
        f"{answer['decisionId']} is recorded and audited)\n"
    )
    text = run(server.url, acme.key, "--agent", "billing", "--dry-run")
    assert text.exit_code == 0
    assert text.stdout.startswith("blocked (dry run, policy would block) decision ")
    fresh = create_watch(api, "fresh")
    before = len(server.preflights())
    waited = run(server.url, acme.key, "--watch", fresh, "--dry-run", "--wait", "5")
    assert waited.exit_code == 0 and clock.now == 0
    assert len(server.preflights()) == before + 1
    assert "no effect with --dry-run" in waited.stderr


def test_more_than_100_watches_is_a_usage_error_without_a_request(
    server: Server, acme: OrgKey
) -> None:
    args = [arg for i in range(101) for arg in ("--watch", f"w{i}")]
    result = run(server.url, acme.key, *args)
    assert result.exit_code == 2
    assert "at most 100 --watch ids" in result.stderr
    assert server.requests == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give --watch ID (repeatable) or --agent ID"),
        (("--watch", "a", "--agent", "b"), "--watch and --agent are exclusive"),
        (("--watch", "a", "--ignore", "a"), "'a' is not ID:REASON"),
        (("--watch", "a", "--format", "yaml"), "'yaml' is not one of"),
    ],
)
def test_usage_errors_exit_2(
    server: Server, acme: OrgKey, args: tuple[str, ...], message: str
) -> None:
    result = run(server.url, acme.key, *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert server.requests == []


def test_missing_url_or_key_exits_2_before_any_request(server: Server, acme: OrgKey) -> None:
    no_key = run(server.url, None, "--watch", "a")
    assert no_key.exit_code == 2
    assert no_key.stderr == (
        "driftgate: error: no API key: set DRIFTGATE_API_KEY (or pass --api-key)\n"
    )
    no_url = run(None, acme.key, "--watch", "a")
    assert no_url.exit_code == 2
    assert "no server URL: set DRIFTGATE_URL" in no_url.stderr
    assert server.requests == []


def test_the_url_and_key_options_work_without_the_environment(
    server: Server, acme: OrgKey, healthy: str
) -> None:
    result = run(None, None, "--url", server.url + "/", "--api-key", acme.key, "--watch", healthy)
    assert result.exit_code == 0, result.output


def test_a_bad_key_is_exit_2_with_the_servers_message(server: Server, healthy: str) -> None:
    secret = "dg_not-a-real-key-0123456789"
    result = run(server.url, secret, "--watch", healthy)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("driftgate: error: ")
    assert "(HTTP 401" in result.stderr
    assert secret not in result.stderr
    unprintable = run(server.url, "dg_two words", "--watch", healthy)
    assert unprintable.exit_code == 2 and "dg_two" not in unprintable.stderr


def test_a_request_the_server_refuses_is_exit_2(server: Server, acme: OrgKey) -> None:
    result = run(server.url, acme.key, "--watch", "a", "--ignore", "a:" + "x" * 501)
    assert result.exit_code == 2
    assert result.stderr.startswith("driftgate: error: invalid request ")
    assert "(HTTP 400" in result.stderr


def test_an_unknown_agent_is_exit_2(server: Server, acme: OrgKey) -> None:
    result = run(server.url, acme.key, "--agent", "nobody")
    assert result.exit_code == 2
    assert "Agent not found: no agent with id or slug 'nobody' in this org (HTTP 404" in (
        result.stderr
    )


def test_a_server_that_is_down_is_exit_2(acme: OrgKey) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = run(f"http://127.0.0.1:{port}", acme.key, "--watch", "a")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"driftgate: error: cannot reach http://127.0.0.1:{port}")
    assert acme.key not in result.stderr


def test_a_url_that_is_not_http_is_exit_2(acme: OrgKey) -> None:
    result = run("ftp://example.com", acme.key, "--watch", "a")
    assert result.exit_code == 2
    assert "must be an http:// or https:// URL" in result.stderr


def _answering(status: str, body: bytes, content_type: str = "application/json") -> WSGIApp:
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        start_response(status, [("Content-Type", content_type)])
        return [body]

    return app


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        ("200 OK", b"<html>hello</html>", "answered HTTP 200 without a preflight result"),
        ("200 OK", b'{"allowed": "yes", "blocked": []}', "without a preflight result"),
        ("409 Conflict", b'{"error": "conflict", "message": "busy"}', "busy (HTTP 409, conflict)"),
        ("503 Service Unavailable", b"down", "answered HTTP 503"),
        (
            "500 Internal Server Error",
            b'{"error": "internal", "message": "boom"}',
            "boom (HTTP 500, internal)",
        ),
    ],
)
def test_answers_that_are_not_a_preflight_result_are_exit_2(
    status: str, body: bytes, message: str
) -> None:
    with serving(_answering(status, body)) as fake:
        result = run(fake.url, "dg_key", "--watch", UUID_SHAPED)
        by_name = run(fake.url, "dg_key", "--watch", "payments")  # needs the watch list first
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stdout == ""
    assert by_name.exit_code == 2 and by_name.stdout == ""


UUID_SHAPED = "0b6a3c52-8f5e-4a7e-9d0c-2f1e3d4c5b6a"


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    from cli.commands import preflight

    moved = Clock()
    monkeypatch.setattr(preflight, "time", moved)
    return moved


def test_wait_asks_again_until_the_first_check(
    server: Server, acme: OrgKey, database: Database, fresh: str, healthy: str, clock: Clock
) -> None:
    clock.at(1.0, lambda: mark_checked(database, fresh))
    result = run(
        server.url, acme.key, "--watch", fresh, "--watch", healthy,
        "--wait", "10", "--interval", "0.2",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("allowed decision ")
    # Asked every 0.2 s until the check at 1 s, then no longer.
    assert clock.now == pytest.approx(1.0)
    assert len(server.preflights()) == 6
    assert result.stderr == (
        "driftgate: 1 watch(es) not checked yet; asking again every 0.2s for up to 10s\n"
    )


def test_wait_gives_up_blocked_at_the_deadline(
    server: Server, acme: OrgKey, fresh: str, clock: Clock
) -> None:
    result = run(server.url, acme.key, "--watch", fresh, "--wait", "1", "--interval", "0.2")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[1] == (
        f"  fresh ({fresh}): never_run: never_checked -> wait_for_first_check"
    )
    # Asked at 0, 0.2 ... 1 s: the last answer, at the deadline, is the one shown.
    assert clock.now == pytest.approx(1.0)
    assert len(server.preflights()) == 6


def test_wait_does_not_retry_on_other_reasons(
    server: Server, acme: OrgKey, fresh: str, paused: str, clock: Clock
) -> None:
    result = run(
        server.url, acme.key, "--watch", fresh, "--watch", paused,
        "--wait", "5", "--interval", "0.2",
    )  # fmt: skip
    assert result.exit_code == 1
    assert clock.now == 0  # never waited
    assert len(server.preflights()) == 1
    assert result.stderr == ""
