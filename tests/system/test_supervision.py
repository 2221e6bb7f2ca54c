"""`driftgate up` keeps its controller running (issue 40, point 4): a real `up` on the test's
store, its controller killed with SIGKILL, restarted, logged, and checking again; one that
keeps dying at once makes `up` give up and exit 3."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from controller.store import migrate
from controller.store.db import Database
from tests.processes import (
    DRIFTGATE,
    PATIENCE,
    driftgate_env,
    free_port,
    spawn,
    stop_process,
    wait_until,
    wait_until_healthy,
)

pytestmark = pytest.mark.slow


@dataclass
class Up:
    process: subprocess.Popen[bytes]
    base: str
    env: dict[str, str]
    log: Path

    def events(self, name: str) -> list[dict[str, Any]]:
        """The JSON log lines of event `name`, in order (the banner is not JSON)."""
        found = []
        for line in self.log.read_text().splitlines():
            if line.startswith("{"):
                record = json.loads(line)
                if record.get("event") == name:
                    found.append(record)
        return found

    def controller_pids(self) -> list[int]:
        """The pids of the controllers that said they started (`worker` is host:pid:id)."""
        return [
            int(e["worker"].split(":")[1])
            for e in self.events("controller.started")
            if "worker" in e
        ]


def start_up(tmp_path: Path, database: Database, cleanup: list[Up], **settings: str) -> Up:
    """`driftgate up` on the test's store, stopped by `cleanup` (its set-up failing included)."""
    port = free_port()
    env = driftgate_env(
        database.url, tmp_path, workers="1", allow_private_targets="true", **settings
    )
    log = tmp_path / "up.log"
    with log.open("w") as out:
        process = spawn([*DRIFTGATE, "up", "--port", str(port)], env=env, stdout=out, stderr=out)
    up = Up(process, f"http://127.0.0.1:{port}", env, log)
    cleanup.append(up)
    # Generous: `up` migrates and starts two Python processes, on a machine that may be busy.
    wait_until_healthy(up.base, process, log)
    wait_until(lambda: len(up.controller_pids()) == 1)
    return up


@pytest.fixture
def cleanup() -> Iterator[list[Up]]:
    """Every `up` a test started, stopped with its children when the test ends."""
    started: list[Up] = []
    yield started
    for up in started:
        with suppress(subprocess.TimeoutExpired):
            stop_process(up.process)


def driftgate(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([*DRIFTGATE, *args], env=env, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def test_a_killed_controller_is_restarted_logged_and_checks_again(
    tmp_path: Path, database: Database, cleanup: list[Up]
) -> None:
    from tests.servers import spec_server
    from tests.specs import as_json, charges_spec

    up = start_up(tmp_path, database, cleanup)
    driftgate(up.env, "orgs", "create", "acme", "--plan", "pro")
    key = driftgate(up.env, "keys", "create", "--org", "acme")
    auth = {"Authorization": f"Bearer {key}", "User-Agent": "driftgate-tests"}
    with spec_server() as specs, httpx.Client(base_url=up.base, headers=auth, timeout=90) as http:
        url = specs.set("/openapi.json", as_json(charges_spec()))
        watch = http.post("/api/watches", json={"name": "local", "url": url}).json()
        first = http.post(f"/api/watches/{watch['id']}/check?wait=60").json()["watch"]
        assert first["driftStatus"] == "ok"
        assert http.get("/health/ready").json()["controller"]["state"] == "alive"

        (victim,) = up.controller_pids()
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda: len(up.events("controller.died")) == 1)
        (died,) = up.events("controller.died")
        assert (died["pid"], died["signal"], died["exitCode"]) == (victim, "SIGKILL", None)
        assert died["attempt"] == 1 and died["nextDelaySeconds"] == 1.0
        assert died["level"] == "warning"
        wait_until(lambda: len(up.controller_pids()) == 2)
        assert up.controller_pids()[1] != victim

        # The new controller runs checks: the vendor drifted, and the check sees it.
        specs.set("/openapi.json", as_json(charges_spec(refunds=False)))
        second = http.post(f"/api/watches/{watch['id']}/check?wait=60").json()["watch"]
        assert second["driftStatus"] == "drifted"
        assert second["lastCheckedAt"] > first["lastCheckedAt"]
    assert up.process.poll() is None  # `up` serves on
    assert stop_process(up.process) == 0
    assert up.events("controller.gave_up") == []


def test_up_gives_up_on_a_controller_that_keeps_dying_and_exits_3(
    tmp_path: Path, database: Database, cleanup: list[Up]
) -> None:
    """A controller that cannot start (here: the schema was put back to an older revision
    under it, so each new controller refuses to run) dies at once, again and again: after
    `controller_restart_limit` deaths in a row `up` logs why and exits with status 3."""
    up = start_up(
        tmp_path,
        database,
        cleanup,
        controller_restart_delay_seconds="0.1",
        controller_restart_limit="3",
    )
    head = migrate.head_revision(database)
    with database.transaction() as session:
        session.execute(text("UPDATE alembic_version SET version_num = '0019'"))
    try:
        (victim,) = up.controller_pids()
        os.kill(victim, signal.SIGKILL)
        assert up.process.wait(timeout=PATIENCE) == 3
    finally:
        # On Postgres the database is the worker's template, reused by the tests after this.
        with database.transaction() as session:
            session.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": head})
    died = up.events("controller.died")
    assert [d["attempt"] for d in died] == [1, 2]
    assert died[0]["signal"] == "SIGKILL" and died[1]["exitCode"] == 2
    (gave_up,) = up.events("controller.gave_up")
    assert gave_up["level"] == "error" and gave_up["attempt"] == 3 and gave_up["exitCode"] == 2
    assert "died 3 times in a row" in gave_up["reason"]
    assert "run `driftgate db upgrade`" in up.log.read_text()
