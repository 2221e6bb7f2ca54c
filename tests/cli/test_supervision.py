"""`driftgate up` as real processes: its children die with it, and one SQLite file serves one
controller (a second is refused; a `kill -9`ed one leaves no stale lock)."""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from controller.store.db import Database
from controller.store.lockfile import acquire_controller_lock, sqlite_file
from tests.conftest import ON_POSTGRES
from tests.processes import (
    DRIFTGATE,
    PATIENCE,
    driftgate_env,
    free_port,
    started,
    stop_process,
    wait_until,
    wait_until_healthy,
    wait_until_taken,
)

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads processes from /proc"
)

PR_SET_CHILD_SUBREAPER = 36


def process_state(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process from /proc; None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    state, ppid = stat.rsplit(")", 1)[1].split()[:2]
    return state, int(ppid)


def children_of(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            state = process_state(int(entry.name))
            if state is not None and state[1] == parent:
                found.append(int(entry.name))
    return sorted(found)


def command_line(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return []


def environment(database: Database, tmp_path: Path) -> dict[str, str]:
    return driftgate_env(database.url, tmp_path, workers="2", log_format="text")


def port_free(port: int) -> bool:
    with socket.socket() as again:
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            again.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextmanager
def adopting_orphans() -> Iterator[None]:
    """This process adopts the orphans of its descendants while the block runs (Linux's child
    subreaper), so that it can wait for them and read how each one ended."""
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0, ctypes.get_errno()
    try:
        yield
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def reap(pids: list[int], timeout: float = PATIENCE) -> dict[int, int]:
    """Wait for each of `pids` (children of this process) to end; pid -> its wait status."""
    statuses: dict[int, int] = {}
    deadline = time.monotonic() + timeout
    while len(statuses) < len(pids):
        for pid in pids:
            if pid not in statuses:
                ended, status = os.waitpid(pid, os.WNOHANG)
                if ended == pid:
                    statuses[pid] = status
        assert time.monotonic() < deadline, f"still running: {set(pids) - set(statuses)}"
        time.sleep(0.02)
    return statuses


@pytest.mark.slow
def test_the_children_of_up_are_killed_with_it_by_a_kill_9(
    database: Database, tmp_path: Path
) -> None:
    port = free_port()
    log_path = tmp_path / "up.log"
    command = [*DRIFTGATE, "up", "--port", str(port)]
    with (
        adopting_orphans(),
        started(command, env=environment(database, tmp_path), log=log_path) as up,
    ):
        wait_until_healthy(f"http://127.0.0.1:{port}", up, log_path)
        # Two web workers and the controller, which has taken the store (and its lock).
        wait_until(
            lambda: len(children_of(up.pid)) == 3 and "controller.started" in log_path.read_text()
        )
        children = children_of(up.pid)
        controllers = [pid for pid in children if "controller" in command_line(pid)]
        assert len(controllers) == 1, [command_line(pid) for pid in children]
        # What kept orphaned workers alive before: an idle connection (the gthread worker
        # waits for it during its graceful stop) and a request that never finishes its
        # headers.
        idle = socket.create_connection(("127.0.0.1", port))
        partial = socket.create_connection(("127.0.0.1", port))
        partial.sendall(b"GET /health HTTP/1.1\r\nHost: driftgate\r\n")
        wait_until_taken(idle, partial)
        try:
            up.kill()
            up.wait()
            # Orphaned, each child comes to this process (the subreaper), which reads how it
            # ended: by the kernel's SIGKILL on its parent's death, not a graceful stop of its
            # own (which took 13 s with the idle connection open, for ever with the request).
            ended = reap(children)
        finally:
            idle.close()
            partial.close()
    assert {
        pid: os.WIFSIGNALED(status) and os.WTERMSIG(status) for pid, status in ended.items()
    } == {pid: signal.SIGKILL for pid in children}
    # Nothing holds the port or the store: a restart can start at once. The kernel releases
    # a dead process's sockets a moment after it is reaped; an orphan would hold the port for
    # good.
    wait_until(lambda: port_free(port))
    lock = acquire_controller_lock(database.url)
    assert (lock is None) == ON_POSTGRES
    if lock is not None:
        lock.release()


def test_a_controller_whose_parent_is_already_gone_does_not_start(
    database: Database, tmp_path: Path
) -> None:
    """The parent died before the child asked for the parent-death signal: it exits at once."""
    done = subprocess.run(
        [*DRIFTGATE, "controller", "--parent", str(os.getpid() + 10**6)],
        env=environment(database, tmp_path),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == -signal.SIGKILL
    assert b"controller.started" not in done.stderr


@pytest.mark.slow
@pytest.mark.skipif(ON_POSTGRES, reason="several controllers share a Postgres store")
def test_a_second_controller_on_one_sqlite_file_is_refused(
    database: Database, tmp_path: Path
) -> None:
    env = environment(database, tmp_path)
    database_file = sqlite_file(database.url)
    assert database_file is not None
    lock_file = database_file.with_name(database_file.name + ".controller.lock")

    with ExitStack() as stack:

        def start() -> subprocess.Popen[bytes]:
            process = stack.enter_context(
                started(
                    [*DRIFTGATE, "controller", "--tick", "0.2"],
                    env=env,
                    log=tmp_path / f"controller-{time.monotonic_ns()}.log",
                )
            )
            wait_until(lambda: lock_file.exists() and lock_file.read_text() == f"{process.pid}\n")
            return process

        first = start()
        second = subprocess.run(
            [*DRIFTGATE, "controller"], env=env, capture_output=True, text=True, timeout=120
        )
        assert second.returncode == 2 and second.stdout == ""
        assert second.stderr == (
            f"driftgate: error: another controller (pid {first.pid}) is running on the SQLite "
            f"database {database_file}; SQLite serves one controller: stop that one first, or "
            f"use Postgres for several (lock file {lock_file})\n"
        )
        # A second `up` on the same file refuses the whole start, before it serves anything.
        second_up = subprocess.run(
            [*DRIFTGATE, "up", "--port", "1"], env=env, capture_output=True, text=True, timeout=120
        )
        assert second_up.returncode == 2
        assert second_up.stderr.startswith(
            f"driftgate: error: another controller (pid {first.pid})"
        )
        assert first.poll() is None
        first.kill()
        first.wait()
        # The kernel dropped the lock with the process: no stale lock, the next one starts.
        third = start()
        assert stop_process(third) == 0
