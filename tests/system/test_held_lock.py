"""A SQLite write lock held by another process (issue 40, point 7), against a real
`driftgate serve`: readiness, the API's reads and console pages answer while it is held;
writes answer 503 with `Retry-After` within their deadline, counted from their arrival;
readiness answers on threads of its own while every worker thread waits on the lock."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import update

from controller.accounts import service as accounts
from controller.orgs.service import get_org
from controller.store.db import Database
from controller.store.models import ApiKey, ConsoleSession
from controller.store.types import utcnow
from tests.conftest import OrgKey
from tests.processes import (
    DRIFTGATE,
    PATIENCE,
    driftgate_env,
    free_port,
    spawn,
    started,
    stop_process,
    wait_until,
    wait_until_healthy,
)

pytestmark = pytest.mark.slow

SPEC_URL = "https://api.example.com/openapi.json"
HOLDER = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.readline()  # until the test says so, or ends
connection.execute("ROLLBACK")
"""


class Serve:
    def __init__(self, base: str, key: OrgKey) -> None:
        self.base = base
        self.api = httpx.Client(
            base_url=base,
            headers={**key.headers, "User-Agent": "driftgate-tests"},
            timeout=30,
        )


@pytest.fixture
def serve(
    request: pytest.FixtureRequest, tmp_path: Path, database: Database, acme: OrgKey
) -> Iterator[Serve]:
    """`driftgate serve` with one worker of one thread, and the settings the test names."""
    if not database.is_sqlite:
        pytest.skip("a held write lock is SQLite's")
    port = free_port()
    env = driftgate_env(
        database.url, tmp_path, workers="1", threads="1", api_key_cache_seconds="0", **request.param
    )
    log_path = tmp_path / "server.log"
    with started([*DRIFTGATE, "serve", "--port", str(port)], env=env, log=log_path) as process:
        base = f"http://127.0.0.1:{port}"
        wait_until_healthy(base, process, log_path)
        server = Serve(base, acme)
        yield server
        server.api.close()


class Holder:
    """Another process holding SQLite's write lock (`BEGIN IMMEDIATE`) until `release`."""

    def __init__(self, database: Database) -> None:
        path = database.engine.url.database
        assert path is not None
        self.process = spawn(
            [sys.executable, "-c", HOLDER, path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def wait_held(self) -> None:
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "held"

    def is_held(self) -> bool:
        return self.process.poll() is None

    def release(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.write("release\n")
            self.process.stdin.close()
        assert self.process.wait(timeout=PATIENCE) == 0
        if self.process.stdout is not None:
            self.process.stdout.close()


@pytest.fixture
def hold(database: Database) -> Iterator[Callable[[], Holder]]:
    """Take the lock in another process (released at the latest when the test ends)."""
    held: list[Holder] = []

    def take() -> Holder:
        held.append(Holder(database))
        held[-1].wait_held()
        return held[-1]

    try:
        yield take
        for made in held:
            made.release()
    finally:
        for made in held:
            stop_process(made.process)
            for pipe in (made.process.stdin, made.process.stdout):
                if pipe is not None:
                    pipe.close()


def console_cookie(database: Database) -> str:
    """A signed-in console session whose idle clock is due a touch (a write on a read)."""
    with database.transaction() as session:
        org = get_org(session, "acme")
        _user, token = accounts.create_user(
            session, org, "lead@example.com", "admin", actor="test", now=utcnow()
        )
        accounts.set_password(session, token, "correct horse battery staple", utcnow())
        cookie, signed = accounts.sign_in(
            session, "lead@example.com", "correct horse battery staple", "127.0.0.1", utcnow()
        )
        session.execute(
            update(ConsoleSession)
            .where(ConsoleSession.id == signed.session_id)
            .values(last_seen_at=utcnow() - timedelta(minutes=10))
        )
    return cookie


# The request deadline: writes waiting on the lock are answered within about one of them,
# where waiting a whole one each would answer the last of five after five.
DEADLINE = 3


@pytest.mark.parametrize("serve", [{"request_deadline_seconds": str(DEADLINE)}], indirect=True)
def test_reads_and_readiness_answer_and_writes_are_refused_in_time_while_a_lock_is_held(
    serve: Serve, database: Database, acme: OrgKey, hold: Callable[[], Holder]
) -> None:
    created = serve.api.post("/api/watches", json={"name": "stripe", "url": SPEC_URL})
    assert created.status_code == 201
    watch = created.json()["id"]
    cookie = console_cookie(database)
    with database.transaction() as session:  # the key's last use is due a touch too
        session.execute(update(ApiKey).where(ApiKey.id == acme.key_id).values(last_used_at=None))

    held = hold()
    ready = httpx.get(f"{serve.base}/health/ready", timeout=30)
    listed = serve.api.get("/api/watches")
    page = httpx.get(
        f"{serve.base}/console/",
        cookies={"driftgate_session": cookie},
        headers={"User-Agent": "driftgate-tests"},
        timeout=30,
    )
    # Five writes at once on one thread: each waits for the lock at most what is left of its
    # deadline (3 s) when the thread takes it up, so all are answered in about 3 s, where
    # waiting a whole deadline each would take 15.
    with ThreadPoolExecutor(5) as pool:
        writes = list(pool.map(lambda n: _timed_patch(serve, watch, n), range(5)))
    assert held.is_held()  # everything above was answered while the lock was held

    assert ready.status_code == 200
    assert (ready.json()["status"], ready.json()["database"]) == ("ok", "ok")
    assert listed.status_code == 200 and [w["id"] for w in listed.json()["watches"]] == [watch]
    assert page.status_code == 200 and "lead@example.com" in page.text  # signed in
    for answer, seconds in writes:
        assert answer.status_code == 503, answer.text
        assert answer.json()["error"] in ("store_unavailable", "server_busy")
        assert answer.headers["Retry-After"] == "5"
        assert seconds < 3 * DEADLINE, writes  # a generous margin, and not 5 deadlines

    held.release()
    assert _timed_patch(serve, watch, 0)[0].status_code == 200


@pytest.mark.parametrize("serve", [{"request_deadline_seconds": "60"}], indirect=True)
def test_readiness_answers_while_every_worker_thread_waits_on_the_lock(
    serve: Serve, database: Database, acme: OrgKey, hold: Callable[[], Holder]
) -> None:
    created = serve.api.post("/api/watches", json={"name": "stripe", "url": SPEC_URL})
    watch = created.json()["id"]
    held = hold()
    with ThreadPoolExecutor(1) as pool:
        write = pool.submit(_timed_patch, serve, watch, 1)
        # The one worker thread is taken once a read no longer gets it.
        wait_until(lambda: not _answers(serve, "/api/watches", 0.5))
        ready = httpx.get(f"{serve.base}/health/ready", timeout=30)
        assert not write.done() and held.is_held()
        assert ready.status_code == 200
        held.release()
        assert write.result(timeout=30)[0].status_code == 200


def _timed_patch(serve: Serve, watch: str, n: int) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    answer = serve.api.patch(f"/api/watches/{watch}", json={"intervalMinutes": 15 + n})
    return answer, time.monotonic() - started


def _answers(serve: Serve, path: str, timeout: float) -> bool:
    try:
        serve.api.get(path, timeout=timeout)
    except httpx.TimeoutException:
        return False
    return True
