"""The hosted product's TypeScript clients (the `driftguard` CLI and the `driftguard-mcp`
server), built once from the snapshot beside the repository (`../shared/clients/driftguard/`).

The snapshot is third-party code (MIT): it is copied, unchanged, into a cache folder outside
git's tracking, `.cache/driftguard-ts/<digest>/`, where `npm ci` and `npm run build` run once;
the digest covers the lockfile, the manifests and the sources, so an edited snapshot builds
again and an unchanged one is reused. pytest-xdist workers build under one file lock: the
first builds, the others wait and reuse. `make compat-clients` (`python -m
tests.compat.tsclients`) builds it ahead of the suite.

Without the snapshot, npm or nginx (the TLS front) the tests skip, naming what is missing;
with `DRIFTGATE_REQUIRE_COMPAT_CLIENTS=1` (CI's run beside ../shared) they fail instead.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT.parent / "shared" / "clients" / "driftguard"
CACHE = ROOT / ".cache" / "driftguard-ts"
REQUIRE = "DRIFTGATE_REQUIRE_COMPAT_CLIENTS"
# What the build reads: a change to any of these builds again.
INPUTS = ("package-lock.json", "package.json", "tsconfig.json", "src", "packages")
SKIPPED_DIRS = {"node_modules", "dist", "__pycache__"}


def is_required() -> bool:
    """True when a missing prerequisite must fail the run instead of skipping it."""
    return os.environ.get(REQUIRE) == "1"


def missing_prerequisite(reason: str) -> None:
    """Skip the calling module with `reason`, or fail it when the clients are required."""
    if is_required():
        pytest.fail(f"{reason} ({REQUIRE}=1: required here)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def require_ts_clients(snapshot: Path = SNAPSHOT) -> None:
    """Skip (or fail) unless the snapshot, node, npm and nginx are all on this machine."""
    if not (snapshot / "package-lock.json").is_file():
        missing_prerequisite(
            f"the TypeScript clients are not beside the repository "
            f"(../shared/clients/driftguard: {snapshot} is missing)"
        )
    for command in ("node", "npm"):
        if shutil.which(command) is None:
            missing_prerequisite(f"`{command}` is not on PATH: the TypeScript clients need it")
    if shutil.which("nginx") is None:
        missing_prerequisite(
            "`nginx` is not on PATH: the TypeScript clients need TLS in front of driftgate "
            "(apt-get install nginx-light)"
        )


def snapshot_digest(snapshot: Path = SNAPSHOT) -> str:
    """A digest of every file the build reads (paths and contents), 16 hex digits."""
    digest = hashlib.sha256()
    for name in INPUTS:
        top = snapshot / name
        files = [top] if top.is_file() else sorted(_files(top))
        for path in files:
            digest.update(str(path.relative_to(snapshot)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _files(top: Path) -> list[Path]:
    found = []
    for folder, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
        found.extend(Path(folder) / name for name in names)
    return found


def build_ts_clients(snapshot: Path = SNAPSHOT, cache: Path = CACHE) -> Path:
    """The built snapshot's folder (`dist/cli/check.js`, `dist/mcp/server.js` inside),
    building it first unless the cache has it. Safe to call from several processes."""
    target = cache / snapshot_digest(snapshot)
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # held until the build is done, by whoever builds
        if (target / ".built").is_file():
            return target
        building = cache / f"{target.name}.building"
        shutil.rmtree(building, ignore_errors=True)
        shutil.copytree(
            snapshot, building, ignore=shutil.ignore_patterns(*SKIPPED_DIRS), symlinks=True
        )
        for command in (["npm", "ci", "--no-audit", "--no-fund"], ["npm", "run", "build"]):
            done = subprocess.run(
                command, cwd=building, capture_output=True, text=True, timeout=600
            )
            if done.returncode != 0:
                raise RuntimeError(
                    f"`{' '.join(command)}` failed in {building} ({done.returncode}):\n"
                    f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
                )
        (building / ".built").write_text(snapshot_digest(snapshot) + "\n")
        shutil.rmtree(target, ignore_errors=True)
        building.rename(target)
        # Builds of earlier snapshots are never used again.
        for stale in cache.iterdir():
            if stale.is_dir() and stale != target:
                shutil.rmtree(stale, ignore_errors=True)
    return target


def main() -> int:
    """`make compat-clients`: build (or find) the clients and say where and how long."""
    if not (SNAPSHOT / "package-lock.json").is_file():
        print(f"compat-clients: no snapshot at {SNAPSHOT} (../shared/clients/driftguard)")
        return 1 if is_required() else 0
    start = time.monotonic()
    folder = build_ts_clients()
    print(f"compat-clients: {folder} ready in {time.monotonic() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
