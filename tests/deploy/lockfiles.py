"""The lock files read as pip reads them: each pinned requirement, its environment marker and
the hashes of its files (`requirements.lock`, `requirements-dev.lock`, written by `make lock`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


@dataclass(frozen=True)
class Pin:
    """One requirement of a lock file: `name==version ; marker` and its `--hash` options."""

    requirement: Requirement
    hashes: tuple[str, ...]

    @property
    def name(self) -> str:
        return canonicalize_name(self.requirement.name)

    @property
    def version(self) -> str | None:
        """The pinned version, or None when the specifier is not one `==` (a loose entry)."""
        specs = list(self.requirement.specifier)
        if len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version:
            return specs[0].version
        return None

    def applies(self) -> bool:
        """Whether pip installs it here (its marker holds on this interpreter and platform)."""
        return self.requirement.marker is None or self.requirement.marker.evaluate()


def read_lock(path: Path) -> list[Pin]:
    """The pins of a pip requirements file: continued lines joined, comments dropped."""
    logical: list[str] = []
    pending = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        if line.strip():
            logical.append(line.strip())
    pins = []
    for line in logical:
        words = line.split(" --hash=")
        pins.append(Pin(Requirement(words[0].strip()), tuple(w.strip() for w in words[1:])))
    return pins
