"""End to end: `driftgate up` under real gunicorn, driven over HTTP like a user with curl."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from controller.store.db import Database
from tests.processes import (
    DRIFTGATE,
    driftgate_env,
    free_port,
    started,
    stop_process,
    wait_until,
    wait_until_healthy,
)

# Real processes end to end: left out of `make check`, run by `make test`.
pytestmark = pytest.mark.slow


@pytest.fixture
def server(tmp_path: Path, database: Database) -> Iterator[tuple[str, dict[str, str]]]:
    port = free_port()
    env = driftgate_env(database.url, tmp_path, workers="2", allow_private_targets="true")
    log = tmp_path / "server.log"
    # Stopped with its gunicorn workers and controller however the set-up or the test ends.
    with started([*DRIFTGATE, "up", "--port", str(port)], env=env, log=log) as process:
        base = f"http://127.0.0.1:{port}"
        wait_until_healthy(base, process, log)
        yield base, env
        assert stop_process(process) == 0
    # Everything the server logged after its start-up banner is one JSON object per line.
    lines = log.read_text().splitlines()[1:]
    events = [json.loads(line)["event"] for line in lines if line.strip()]
    assert "http.request" in events and "Starting gunicorn" in " ".join(events)


def driftgate(env: dict[str, str], *args: str) -> str:
    """Run a driftgate command like an operator would; return what it printed."""
    done = subprocess.run([*DRIFTGATE, *args], env=env, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def test_a_user_session_against_the_running_server(server: tuple[str, dict[str, str]]) -> None:
    base, env = server
    driftgate(env, "orgs", "create", "acme", "--plan", "pro")
    key = driftgate(env, "keys", "create", "--org", "acme")
    auth = {"Authorization": f"Bearer {key}", "User-Agent": "driftgate-tests"}
    with httpx.Client(base_url=base, headers=auth, timeout=60) as http:
        ready = http.get("/health/ready").json()
        assert (ready["status"], ready["database"]) == ("ok", "ok")
        assert ready["controller"]["state"] in ("alive", "absent")  # `up` starts one
        created = http.post(
            "/api/watches", json={"name": "stripe", "url": "https://api.example.com/openapi.json"}
        )
        assert created.status_code == 201
        watch_id = created.json()["id"]
        listed = http.get("/api/watches").json()
        assert [w["id"] for w in listed["watches"]] == [watch_id]
        assert http.post(f"/api/watches/{watch_id}/pause").json()["driftStatus"] == "disabled"
        assert http.delete(f"/api/watches/{watch_id}").status_code == 204
        mistakes = [
            http.post(
                "/api/watches", content=b"{oops", headers={"Content-Type": "application/json"}
            ),
            http.post("/api/watches", json={"name": "x", "url": "not a url"}),
            http.get(f"/api/watches/{watch_id}"),
            http.put("/api/watches"),
            http.get("/api/watches", headers={"Authorization": "Bearer dg_wrong"}),
            http.post(
                "/api/watches",
                content=b"x" * 2_000_000,
                headers={"Content-Type": "application/json"},
            ),
        ]
        assert [m.status_code for m in mistakes] == [400, 400, 404, 405, 401, 413]
        for mistake in mistakes:
            assert mistake.headers["content-type"] == "application/json"
            assert set(mistake.json()) >= {"error", "message"}
            assert mistake.headers["X-Service-Correlation-Id"]
        document = http.get("/openapi.json").json()
        assert document["openapi"] == "3.1.0" and "/api/watches" in document["paths"]


def test_up_watches_a_local_spec_and_delivers_a_signed_webhook(
    server: tuple[str, dict[str, str]],
) -> None:
    from tests.receivers import Receiver
    from tests.servers import spec_server
    from tests.specs import as_json, charges_spec

    base, env = server
    driftgate(env, "orgs", "create", "acme", "--plan", "pro")
    key = driftgate(env, "keys", "create", "--org", "acme")
    secret = driftgate(env, "orgs", "webhook-secret", "acme")
    receiver = Receiver(secret=secret)
    auth = {"Authorization": f"Bearer {key}", "User-Agent": "driftgate-tests"}
    try:
        with spec_server() as specs, httpx.Client(base_url=base, headers=auth, timeout=90) as http:
            url = specs.set("/openapi.json", as_json(charges_spec()))
            http.put(
                "/api/org/notification-defaults",
                json={"destination": {"kind": "webhook", "url": receiver.url}},
            )
            watch = http.post("/api/watches", json={"name": "local", "url": url}).json()
            first = http.post(f"/api/watches/{watch['id']}/check?wait=60").json()
            assert first["watch"]["driftStatus"] == "ok"
            specs.set("/openapi.json", as_json(charges_spec(refunds=False)))
            second = http.post(f"/api/watches/{watch['id']}/check?wait=60").json()
            assert second["watch"]["driftStatus"] == "drifted"
            wait_until(lambda: len(receiver.received) >= 2)
        kinds = sorted(m["body"]["type"] for m in receiver.received)
        assert kinds == ["drift.detected", "incident.open"] and receiver.rejected == []
    finally:
        receiver.close()


@pytest.mark.parametrize("command", ["up", "serve"])
def test_a_port_in_use_is_refused_before_anything_starts(
    tmp_path: Path, database: Database, command: str
) -> None:
    """`up` beside a `make run` already serving its port: one clear line and exit 2 before
    the controller starts or the store is touched, not gunicorn's five retries."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*DRIFTGATE, command, "--port", str(port)],
            env=driftgate_env(database.url, tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"driftgate: error: port {port} on 127.0.0.1 is already in use (another driftgate, "
        "such as `make run`, may be serving it): stop that server or pass --port\n"
    )


@pytest.mark.parametrize("command", ["up", "serve", "controller"])
def test_a_github_app_key_that_is_not_a_pem_key_is_refused_at_start(
    tmp_path: Path, database: Database, command: str
) -> None:
    """The App's private key is checked when settings load (issue 31, point 6): one line
    naming the setting and exit 2, never a 500 when an installation is first linked. The
    key's text is never echoed."""
    env = driftgate_env(
        database.url,
        tmp_path,
        github_app_id="424242",
        github_app_private_key="-----BEGIN RSA PRIVATE KEY-----\nc2VjcmV0LWlzaA==\n",
    )
    port = free_port()
    args = ["--port", str(port)] if command != "controller" else []
    done = subprocess.run(
        [*DRIFTGATE, command, *args], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(
        "driftgate: error: invalid settings: DRIFTGATE_GITHUB_APP_PRIVATE_KEY: "
    ), done.stderr
    assert "not a PEM private key" in done.stderr and "c2VjcmV0" not in done.stderr
    assert done.stdout == ""
