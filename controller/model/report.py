"""The result of an offline diff (`driftgate diff`, `driftgate compare`): a domain value that
the diff service builds and `controller.diffs.reports` renders."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from controller.model.change import Change, Severity

Threshold = Literal["breaking", "warning", "info", "never"]


@dataclass(frozen=True)
class Source:
    """One diffed document as a report points into it: `file`, its path relative to the
    working directory (None for a URL), and its bytes, read as text only when a format asks
    for line numbers."""

    file: str | None
    data: bytes | None = None

    @cached_property
    def text(self) -> str | None:
        # Parsed already, so UTF-8 (a byte order mark allowed).
        return self.data.decode("utf-8-sig", errors="replace") if self.data is not None else None


@dataclass
class DiffReport:
    """The result of one offline diff."""

    base: str
    revision: str
    contract_type: str
    changes: list[Change]
    profile: str | None = None
    # Grouped reports (the default) hold one change per cause; `occurrences` then counts the
    # per-operation changes they stand for. Flat reports leave it None.
    occurrences: dict[str, int] | None = None
    # Causes, (cause, operation) pairs and places by severity (`controller.diffs.grouping`):
    # the same whether the report is grouped or flat.
    totals: dict[str, dict[str, int]] | None = None
    # What the documents share (`controller.diffs.overlap`), and warnings about the inputs
    # (`{"code", "message"}`: documents that look like different APIs).
    overlap: dict[str, Any] | None = None
    warnings: list[dict[str, str]] = field(default_factory=list)
    base_source: Source | None = None
    revision_source: Source | None = None
    counts: dict[str, int] = field(init=False)
    ignored: int = field(init=False)

    def __post_init__(self) -> None:
        self.counts, self.ignored = count(self.changes)

    @property
    def grouped(self) -> bool:
        return self.occurrences is not None

    def reaches(self, threshold: Threshold) -> bool:
        """True when a change that is not ignored is at least as severe as `threshold`."""
        if threshold == "never":
            return False
        floor = Severity(threshold).rank
        return any(not c.ignored and c.severity.rank >= floor for c in self.changes)


def count(changes: list[Change]) -> tuple[dict[str, int], int]:
    """Changes that are not ignored by severity, and the number ignored."""
    counts = {s.value: 0 for s in Severity}
    ignored = 0
    for change in changes:
        if change.ignored:
            ignored += 1
        else:
            counts[change.severity.value] += 1
    return counts, ignored
