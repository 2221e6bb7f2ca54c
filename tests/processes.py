"""driftgate as a real process in tests: a free port, and waiting until it answers `/health`."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

# The `driftgate` command as a child process runs it (the installed entry point's module).
DRIFTGATE = [sys.executable, "-m", "cli"]


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


def wait_until(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    """Return once `predicate()` is true; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def wait_until_healthy(
    base: str, process: subprocess.Popen[bytes], log: Path, timeout: float = 30
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
        time.sleep(0.1)


def stop_process(process: subprocess.Popen[Any], timeout: float = 30) -> int:
    """SIGTERM, then SIGKILL after `timeout` seconds (the test then fails); its exit code."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
    return process.returncode
