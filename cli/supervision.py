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
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from typing import Any

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
