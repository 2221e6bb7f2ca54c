"""driftgate as a real process in tests: started in a session of its own and stopped with
everything it started, a free port, waiting until it answers `/health`, until it has taken the
connections a test holds open, and until controllers have gone round again and their work is
done.

Every wait here is on an event, with a generous timeout (`PATIENCE`) that only runs out when
something is really stuck: on a busy 2-core machine a `driftgate up` took over 30 s to answer
its first `/health`, and a wait that runs out early fails a test that is right."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func, select

from controller.store.db import Database
from controller.store.models import ControllerHeartbeat, Job, OutboxMessage

# The `driftgate` command as a child process runs it (the installed entry point's module).
DRIFTGATE = [sys.executable, "-m", "cli"]

# How long a wait on an event may take before the test fails: something is stuck by then.
PATIENCE = 120.0


def driftgate_env(database_url: str, tmp_path: Path, **settings: str) -> dict[str, str]:
    """The environment of a `driftgate` child process on the test's store: this process's
    environment, the store, a data directory under `tmp_path`, the test secret key, and
    `settings` as `DRIFTGATE_<NAME>` variables (`workers="2"` is `DRIFTGATE_WORKERS=2`)."""
    from tests.conftest import SECRET  # conftest imports the fixtures' modules, not this one

    return {
        **os.environ,
        "DRIFTGATE_DATABASE_URL": database_url,
        "DRIFTGATE_DATA_DIR": str(tmp_path / "data"),
        "DRIFTGATE_SECRET_KEY": SECRET,
        **{f"DRIFTGATE_{name.upper()}": value for name, value in settings.items()},
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(predicate: Callable[[], bool], timeout: float = PATIENCE) -> None:
    """Return once `predicate()` is true; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def wait_until_healthy(
    base: str, process: subprocess.Popen[Any], log: Path, timeout: float = PATIENCE
) -> None:
    """Return once `base/health` answers 200; fail with the server's log if it exits first or
    does not answer within `timeout` seconds (stopping it: left running, a server on the
    worker's Postgres database would go on writing there under the tests after this one)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            with contextlib.suppress(subprocess.TimeoutExpired):
                stop_process(process, timeout=10)
            raise AssertionError(log.read_text())
        time.sleep(0.05)


def wait_until_taken(*connections: socket.socket, timeout: float = PATIENCE) -> None:
    """Return once the server at the other end of each of `connections` has accepted it and
    read every byte sent on it so far, or has closed it: the moment a test may count on the
    server holding them (half a request, an idle keep-alive). Read from the kernel's table of
    TCP sockets (Linux's /proc/net/tcp), as the server process gives no sign of its own."""
    wait_until(lambda: all(_taken(connection) for connection in connections), timeout)


def _taken(connection: socket.socket) -> bool:
    """The server's end of `connection`: accepted (a socket not yet accepted has no inode),
    its receive queue empty, or no longer established."""
    server, client = (
        _tcp_address(*connection.getpeername()),
        _tcp_address(*connection.getsockname()),
    )
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if (fields[1], fields[2]) == (server, client):
            state, queues, inode = fields[3], fields[4], fields[9]
            established = state == "01"
            return not established or (inode != "0" and int(queues.split(":")[1], 16) == 0)
    return True  # gone: the server closed it and the kernel is done with it


def _tcp_address(host: str, port: int) -> str:
    """An IPv4 address and port as /proc/net/tcp writes them (the address in host order)."""
    return f"{int.from_bytes(socket.inet_aton(host), sys.byteorder):08X}:{port:04X}"


def controllers_ticked(database: Database, count: int, ticks: int = 2) -> Callable[[], bool]:
    """A condition for `wait_until`: `count` controllers have each written `ticks` heartbeats
    since this call (one a tick, the tick's first routine: `controller.checks.heartbeats_service`),
    so a round under way at the call has ended and each has gone round again since."""
    before = _beats(database)
    since: dict[str, set[datetime]] = {}

    def ticked() -> bool:
        for worker, beat_at in _beats(database).items():
            if beat_at != before.get(worker):
                since.setdefault(worker, set()).add(beat_at)
        return len(since) >= count and all(len(beats) >= ticks for beats in since.values())

    return ticked


def _beats(database: Database) -> dict[str, datetime]:
    with database.session() as session:
        rows = session.execute(select(ControllerHeartbeat.worker, ControllerHeartbeat.beat_at))
        return {worker: beat_at for worker, beat_at in rows}


def jobs_done(database: Database, kind: str) -> bool:
    """No job of `kind` is queued or running."""
    with database.session() as session:
        waiting = session.scalar(
            select(func.count())
            .select_from(Job)
            .where(Job.kind == kind, Job.status.in_(("queued", "running")))
        )
    return waiting == 0


def outbox_delivered(database: Database) -> bool:
    """No outbox message waits for a delivery (pending, or retrying after a failed one)."""
    with database.session() as session:
        waiting = session.scalar(
            select(func.count())
            .select_from(OutboxMessage)
            .where(OutboxMessage.status.in_(("pending", "retrying")))
        )
    return waiting == 0


def spawn(command: Sequence[str], **options: Any) -> subprocess.Popen[Any]:
    """`command` as a child process in a session of its own, so that its process group holds
    everything it starts (`driftgate up`: gunicorn's workers and the controller) and
    `stop_process` can end them all, whatever happened to the child itself."""
    return subprocess.Popen(list(command), start_new_session=True, **options)


@contextmanager
def started(
    command: Sequence[str], *, log: Path | None = None, timeout: float = PATIENCE, **options: Any
) -> Iterator[subprocess.Popen[Any]]:
    """`spawn(command)`, stopped with its process group when the block ends however it ends
    (a set-up that fails halfway included); `log` takes its stdout and stderr."""
    if log is not None:
        with log.open("wb") as out:  # the child keeps its own copy of the descriptor
            process = spawn(command, stdout=out, stderr=out, **options)
    else:
        process = spawn(command, **options)
    try:
        yield process
    finally:
        with suppress(subprocess.TimeoutExpired):
            stop_process(process, timeout=timeout)


def stop_process(process: subprocess.Popen[Any], timeout: float = PATIENCE) -> int:
    """SIGTERM, then SIGKILL after `timeout` seconds (the test then fails); its exit code.
    What is left of its process group (a child it did not stop) is killed once it has
    exited: a no-op for a process not started in a session of its own (`spawn`)."""
    try:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                return process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                kill_group(process)
                process.wait()
                raise
        return process.returncode
    finally:
        kill_group(process)


def kill_group(process: subprocess.Popen[Any]) -> None:
    """SIGKILL to the process group that `process` leads (started by `spawn`), if any is left."""
    with suppress(ProcessLookupError, PermissionError):
        if os.getpgid(process.pid) != process.pid:
            return  # not a group leader (or its pid is a zombie's): nothing of its own
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
