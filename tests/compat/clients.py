"""Where the hosted product's Python clients are: `../shared/clients/driftguard/packages/`
beside the repository. They are third-party code (MIT), run from there as they are, never
installed into the venv: they are put on `sys.path` (and on `PYTHONPATH` for the CLI runs).
On a clone without that folder every test of tests/compat/ skips, naming it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ROOT.parent / "shared" / "clients" / "driftguard" / "packages"
PATHS = [str(PACKAGES / "fuseguard"), str(PACKAGES / "mockdrift")]


def require_clients() -> None:
    """Skip the calling module when the clients are not beside the repository; else make
    `fuseguard` and `mockdrift` importable."""
    if not (PACKAGES / "fuseguard" / "fuseguard").is_dir():
        pytest.skip(
            f"the hosted clients are not beside the repository ({PACKAGES} is missing)",
            allow_module_level=True,
        )
    for path in reversed(PATHS):
        if path not in sys.path:
            sys.path.insert(0, path)
