"""The lock files agree with pyproject.toml (offline): every dependency pyproject.toml names is
pinned in the lock with a version its range admits, every pin is one exact version with the
hashes of its files (pip's --require-hashes installs nothing else), and what driftgate needs
to run is pinned alike in both files. After a change to pyproject.toml: `make lock`."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.deploy.lockfiles import Pin, read_lock

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
RUNTIME = [Requirement(text) for text in PROJECT["dependencies"]]
DEV = [Requirement(text) for text in PROJECT["optional-dependencies"]["dev"]]
LOCKS = {"requirements.lock": RUNTIME, "requirements-dev.lock": RUNTIME + DEV}
FIX = "run `make lock` (uv pip compile, see the Makefile) and commit both lock files"


def pins_of(name: str) -> dict[str, list[Pin]]:
    by_name: dict[str, list[Pin]] = {}
    for pin in read_lock(ROOT / name):
        by_name.setdefault(pin.name, []).append(pin)
    return by_name


def extras_of(requirement: Requirement) -> list[Requirement]:
    """What `requirement`'s extras add (psycopg[binary]: psycopg-binary), read from the
    installed distribution's metadata, for this platform."""
    needs = []
    for text in importlib.metadata.requires(requirement.name) or []:
        needed = Requirement(text)
        for extra in requirement.extras:
            if needed.marker is not None and needed.marker.evaluate({"extra": extra}):
                needs.append(needed)
    return needs


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_every_dependency_of_pyproject_is_pinned_in_range(lock: str) -> None:
    pins = pins_of(lock)
    problems = []
    for requirement in LOCKS[lock] + [e for r in LOCKS[lock] for e in extras_of(r)]:
        name = canonicalize_name(requirement.name)
        here = [pin for pin in pins.get(name, []) if pin.applies()]
        if not here:
            problems.append(f"{name}: not pinned in {lock}")
        for pin in here:
            if pin.version is None or not requirement.specifier.contains(
                pin.version, prereleases=True
            ):
                problems.append(f"{name}: {pin.requirement} does not satisfy {requirement}")
    assert problems == [], f"{lock} is stale: {FIX}\n" + "\n".join(problems)


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_every_pin_is_one_version_with_the_hashes_of_its_files(lock: str) -> None:
    problems = []
    for pin in read_lock(ROOT / lock):
        if pin.version is None:
            problems.append(f"{pin.requirement}: not one exact version")
        if not pin.hashes or not all(h.startswith("sha256:") and len(h) == 71 for h in pin.hashes):
            problems.append(f"{pin.requirement}: no sha256 hashes ({pin.hashes})")
    assert problems == [], "\n".join(problems)
    header = (ROOT / lock).read_text(encoding="utf-8").splitlines()[1]
    assert "uv pip compile pyproject.toml" in header and "--generate-hashes" in header, header


def test_the_runtime_lock_pins_as_the_dev_lock_does() -> None:
    """The image runs what the tests ran: each runtime pin is the dev lock's, hashes and all."""
    dev = pins_of("requirements-dev.lock")
    runtime = pins_of("requirements.lock")
    differ = [
        f"{name}: {[str(p.requirement) for p in pins]} vs "
        f"{[str(p.requirement) for p in dev.get(name, [])]}"
        for name, pins in runtime.items()
        if [(p.version, p.hashes) for p in pins]
        != [(p.version, p.hashes) for p in dev.get(name, [])]
    ]
    assert differ == [], f"{FIX}\n" + "\n".join(differ)


def test_the_runtime_lock_holds_no_test_tool() -> None:
    """requirements.lock is what the image installs: the test runner, the linter and the type
    checker are only in requirements-dev.lock."""
    runtime = pins_of("requirements.lock")
    assert set(runtime) < set(pins_of("requirements-dev.lock"))
    assert sorted({"pytest", "ruff", "mypy"} & set(runtime)) == []
