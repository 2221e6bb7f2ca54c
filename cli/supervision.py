"""The children of `driftgate up` die with it: the controller process and the web workers.

`driftgate up` is the parent of both: it starts the controller process and runs gunicorn's
arbiter, which forks the web workers. If it is killed outright (`kill -9`, the OOM killer), a
child left behind would keep serving HTTP with no arbiter, or keep running checks beside the
controller of the next `driftgate up` on the same SQLite file. So each child asks the kernel
to SIGKILL it when its parent dies (Linux `prctl(PR_SET_PDEATHSIG)`), then checks that the
parent is still the one it expects: a parent that died before the request leaves the child
already orphaned, and no signal would come. Elsewhere a daemon thread polls the parent's pid.

SIGKILL, not SIGTERM: the parent's own clean stop (SIGTERM, SIGINT) stops its children
gracefully before it exits, so the signal only fires when the parent died without doing
that; the children then go the way a crash goes (leases expire and are requeued, SQLite's
journal rolls back), at once and whatever they are doing. See docs/decisions.md.

The other way round, `up` watches its controller (`ControllerSupervisor`): a controller that
dies is logged and started again with backoff, and one that keeps dying at once makes `up`
give up and exit with status 3 (docs/operations.md).
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controller.logs import log

PR_SET_PDEATHSIG = 1
POLL_SECONDS = 0.25


def die_with_parent(parent: int) -> None:
    """Have this process killed when `parent` (the pid that started it) dies; if it already
    has, die now."""
    if not _request_death_signal(signal.SIGKILL):
        threading.Thread(
            target=_watch_parent, args=(parent,), name="driftgate-parent", daemon=True
        ).start()
    # The parent may have died before the request above: the child is then already
    # reparented (to init or a subreaper) and the kernel will never send the signal.
    if os.getppid() != parent:
        _die()


def post_fork(server: Any, worker: Any) -> None:
    """gunicorn `post_fork` hook: a web worker dies with the arbiter that forked it.

    Runs in the worker before it loads the app, whatever the worker class.
    """
    die_with_parent(worker.ppid)


def _request_death_signal(signum: int) -> bool:
    """Ask the kernel for `signum` when the parent dies; False where that is not possible."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        # The parent-death signal belongs to the thread that forked this process: the main
        # thread of `driftgate up` and of gunicorn's arbiter, which live as long as they do.
        return bool(
            libc.prctl(
                ctypes.c_int(PR_SET_PDEATHSIG),
                ctypes.c_ulong(signum),
                ctypes.c_ulong(0),
                ctypes.c_ulong(0),
                ctypes.c_ulong(0),
            )
            == 0
        )
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_SECONDS)
    _die()


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


# -- the controller of `driftgate up` (issue 40, point 4) ---------------------------------

logger = logging.getLogger("driftgate.supervisor")
GAVE_UP_EXIT = 3  # `up`'s exit status when its controller kept dying


@dataclass(frozen=True)
class RestartPolicy:
    """When a dead controller is started again: after `first_delay` seconds, doubling up to
    `longest_delay` while it keeps dying within `rapid_seconds` of its start; after `limit`
    such rapid deaths in a row, not at all (the caller gives up)."""

    first_delay: float = 1.0
    longest_delay: float = 30.0
    rapid_seconds: float = 60.0
    limit: int = 5

    def delay(self, failures: int) -> float:
        return float(min(self.first_delay * 2 ** (failures - 1), self.longest_delay))


class ControllerSupervisor:
    """Keeps the controller process of `driftgate up` running: each death is logged (what
    died, how, which attempt, when the next start is) and followed by a restart with backoff;
    `limit` rapid deaths in a row give up, and `step` then answers why.

    Driven by one thread, gunicorn's arbiter loop (`cli/server.py`): `reap` right before the
    arbiter's own `waitpid(-1)` (which reaps every child, ours too), `step` once per round."""

    def __init__(
        self,
        start: Callable[[], subprocess.Popen[bytes]],
        policy: RestartPolicy,
        clock: Callable[[], float] = time.monotonic,
        on_exit: Callable[[int], None] = lambda pid: None,
    ) -> None:
        self._start = start
        self.on_exit = on_exit  # told the pid of each controller that ended
        self.policy = policy
        self.clock = clock
        self.process: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.failures = 0  # rapid deaths in a row
        self.restart_at: float | None = None
        self.gave_up: str | None = None
        self.stopping = False

    def start(self) -> None:
        self.process = self._start()
        self.started_at = self.clock()
        log(logger, logging.INFO, "controller.started", pid=self.process.pid)

    def reap(self) -> None:
        """Collect the controller's exit if it died (without blocking)."""
        process = self.process
        if process is None:
            return
        try:
            pid, status = os.waitpid(process.pid, os.WNOHANG)
        except ChildProcessError:  # someone's `waitpid(-1)` reaped it first: status unknown
            pid, status = process.pid, None
        if pid == 0:
            return
        process.returncode = _returncode(status)
        self.process = None
        self._exited(process.pid, status)

    def step(self) -> str | None:
        """Reap, restart when due; the reason when the supervisor gave up, else None."""
        self.reap()
        if self.gave_up is None and self.restart_at is not None and not self.stopping:
            if self.clock() >= self.restart_at:
                self.restart_at = None
                self.start()
        return self.gave_up

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the controller (SIGTERM, then SIGKILL after `timeout`); no more restarts."""
        self.stopping = True
        self.restart_at = None
        process, self.process = self.process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        except ChildProcessError:
            pass  # the arbiter reaped it while it stopped its workers

    def _exited(self, pid: int, status: int | None) -> None:
        self.on_exit(pid)
        ran = self.clock() - self.started_at
        how = _how(status)
        if self.stopping:
            log(logger, logging.INFO, "controller.stopped", pid=pid, **how)
            return
        self.failures = self.failures + 1 if ran < self.policy.rapid_seconds else 1
        fields: dict[str, Any] = {"pid": pid, **how, "ranSeconds": round(ran, 1)}
        if self.failures >= self.policy.limit:
            self.gave_up = (
                f"the controller died {self.failures} times in a row within "
                f"{self.policy.rapid_seconds:g} s of its start; not restarting it"
            )
            log(
                logger,
                logging.ERROR,
                "controller.gave_up",
                attempt=self.failures,
                reason=self.gave_up,
                **fields,
            )
            return
        delay = self.policy.delay(self.failures)
        self.restart_at = self.clock() + delay
        log(
            logger,
            logging.WARNING,
            "controller.died",
            attempt=self.failures,
            nextDelaySeconds=delay,
            **fields,
        )


def _returncode(status: int | None) -> int | None:
    if status is None:
        return None
    return os.waitstatus_to_exitcode(status)


def _how(status: int | None) -> dict[str, Any]:
    """How a process ended, for the log: its exit code, or the signal that killed it."""
    if status is None:
        return {"exitCode": None, "signal": None}
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return {"exitCode": None, "signal": name}
    return {"exitCode": os.WEXITSTATUS(status), "signal": None}
