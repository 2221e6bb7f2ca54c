"""Helpers of the tests of whole processes: driftgate run as an operator runs it, from the clone,
with the suite's secret key and nothing of the machine's DRIFTGATE_* environment; a git
source's conditions by type."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.conftest import SECRET
from tests.processes import DRIFTGATE

ROOT = Path(__file__).resolve().parents[2]


def child_env() -> dict[str, str]:
    """The environment of a driftgate subprocess: no DRIFTGATE_* of the machine running the
    tests (everything else comes from the config file), the suite's secret key, and outbound
    checks refused for private and loopback addresses (the default, made explicit)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTGATE_")}
    env["DRIFTGATE_SECRET_KEY"] = SECRET
    env["DRIFTGATE_ALLOW_PRIVATE_TARGETS"] = "false"
    return env


def driftgate(config: Path, *args: str) -> str:
    """Run a driftgate command like an operator; return its stdout."""
    done = subprocess.run(
        [*DRIFTGATE, "--config", str(config), *args],
        env=child_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, (args, done.returncode, done.stdout, done.stderr)
    return done.stdout.strip()


def conditions(source: Mapping[str, Any] | list[dict[str, Any]]) -> dict[str, str]:
    """Condition type -> status, of an API source or of a stored `conditions` list."""
    listed = source if isinstance(source, list) else source["conditions"]
    return {c["type"]: c["status"] for c in listed}
