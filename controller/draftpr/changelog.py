"""What a drift pull request contains: its branch, its changelog file, its title and body.

Pure: no I/O. The branch and file names carry the drift event id, so the same event always
names the same branch (a retry finds what the first attempt made).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from controller.diffs.reports import fit_rows

BRANCH_PREFIX = "driftgate/drift/"
CHANGELOG_DIR = ".driftgate/changes"
DRAFT_LABEL = "driftgate:draft"
_SEVERITY_ORDER = {"breaking": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class ChangeLine:
    """One change as the pull request lists it."""

    severity: str
    path: str
    message: str
    rule: str = ""
    hint: str = ""
    agent_action: str = ""
    # A finding a waiver accepts (`.driftgate/waivers.yaml`): "by OWNER until DAY: REASON".
    # Listed, marked, and not counted.
    waived: str = ""


def branch_name(event_id: str) -> str:
    return BRANCH_PREFIX + event_id


def changelog_path(event_id: str) -> str:
    return f"{CHANGELOG_DIR}/{event_id}.md"


def stub_number(event_id: str, repo_full_name: str) -> int:
    """A deterministic pull request number for local development (no App credentials):
    the same event and repository always get the same number, in 1000-99999."""
    digest = hashlib.sha256(f"{repo_full_name.lower()}\n{event_id}".encode()).digest()
    return 1000 + int.from_bytes(digest[:4], "big") % 99000


def title(watch_name: str, changes: Sequence[ChangeLine]) -> str:
    counts = _counts(changes)
    return f"driftgate: {watch_name} contract drift ({counts})"


def _counts(changes: Sequence[ChangeLine]) -> str:
    counted = [c for c in changes if not c.waived]
    found = {s: sum(1 for c in counted if c.severity == s) for s in _SEVERITY_ORDER}
    parts = [f"{n} {s}" for s, n in found.items() if n]
    waived = len(changes) - len(counted)
    if waived:
        parts.append(f"{waived} waived")
    return ", ".join(parts) or "no changes listed"


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())[:500]


MAX_BODY_CHARS = 60_000
"""A pull request body GitHub accepts (65,536 characters at most), with room to spare."""


def render_changelog(
    *,
    watch_name: str,
    watch_url: str,
    event_id: str,
    changes: Sequence[ChangeLine],
    link: str | None,
    vendored_path: str | None = None,
    max_chars: int | None = None,
) -> str:
    """The changelog file: what drifted, each change with its severity, rule and the hint
    an agent or a person acts on, and where to read more. With `max_chars` (a pull request
    body), the rows that do not fit are left out and counted."""
    ordered = sorted(
        changes, key=lambda c: (bool(c.waived), _SEVERITY_ORDER.get(c.severity, 3), c.path)
    )
    lines = [
        f"# Contract drift: {watch_name}",
        "",
        f"- contract: {watch_url}",
        f"- drift event: `{event_id}`" + (f" ({link})" if link else ""),
        f"- changes: {_counts(changes)}",
    ]
    if vendored_path:
        lines.append(f"- vendored copy updated: `{vendored_path}`")
    lines += [
        "",
        "| severity | rule | path | change | what to do |",
        "|---|---|---|---|---|",
    ]
    rows = []
    for change in ordered:
        todo = change.hint + (f" (`{change.agent_action}`)" if change.agent_action else "")
        severity = change.severity
        if change.waived:
            severity, todo = f"waived ({change.severity})", f"waived {change.waived}"
        rows.append(
            f"| {severity} | {_cell(change.rule) or '-'} | `{_cell(change.path)}` | "
            f"{_cell(change.message)} | {_cell(todo) or '-'} |"
        )
    closing = [
        "",
        "Opened by driftgate. Merging this pull request accepts the new contract as the "
        "baseline, resolves the incident and unblocks the agents bound to the watch.",
        "",
    ]
    if max_chars is None:
        return "\n".join([*lines, *rows, *closing])

    def left_out(rest: int, total: int) -> str:
        return f"*…and {rest:,} more of {total:,} changes: see `{changelog_path(event_id)}`.*"

    room = max_chars - len("\n".join(closing))
    return "\n".join([*fit_rows(lines, rows, room, left_out), *closing])


def body(changelog: str, *, draft_refused: bool) -> str:
    """The pull request's description: the changelog, and why it is not a draft when the
    repository refused drafts."""
    if not draft_refused:
        return changelog
    return (
        changelog + f"\n> This repository does not accept draft pull requests; it is labelled "
        f"`{DRAFT_LABEL}` instead. Treat it as a draft.\n"
    )
