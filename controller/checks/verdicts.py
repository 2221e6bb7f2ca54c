"""Verdicts: what a check asserts about a fetched contract against the watch's own trust
settings, beside its diff against the baseline (issue 45).

A watch may say what its contract must satisfy whatever its history: an `a2a_card` watch names
the keys its card must be signed with (`controller.cardtrust`), an MCP watch the tool set its
server is pinned to (`controller.toollock`). An assessor, registered by name
(`controller.checks.assessments.ASSESSMENTS`), judges the fetched document against them and
returns a verdict, or None when the watch asks nothing of it. The verdicts ride in the
document under `VERDICTS_KEY`, so they are part of its fingerprint and of the snapshot; the
kind's diff engine reads them and reports a verdict that turned bad as a finding of its own
(`card-signature-*`, `tool-lock-*`).

A verdict is a JSON object: `ok` (bool) and `summary` (one line, no secrets), plus what its
engine needs. On a watch's first check there is no baseline to diff against: a document with a
failing verdict is then no contract to trust, and the check fails as `invalid_contract`
(fail closed: the watch is `error` and the gate blocks) rather than becoming the baseline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from controller.diffs.verdicts import VERDICTS_KEY
from controller.registry import Registry

if TYPE_CHECKING:
    from controller.settings import Settings

__all__ = ["VERDICTS_KEY"]

# An assessor judges a check's parsed document (given the check's `CheckInput`, which holds
# the watch's `card_keys` and `tool_lock`; typed loosely, as the engine imports this module):
# its verdict, or None when the watch asks nothing of it (no keys named, no lock).
Assessor = Callable[[Any, Any], "dict[str, Any] | None"]


@dataclass(frozen=True)
class Assessment:
    """A registered assessor: `name` (its key under `VERDICTS_KEY`) and `build`, which makes
    the assessor once per controller from its settings and outbound HTTP client (a JWKS URL
    is fetched through the same address guard as contracts), as the fetch adapters are.
    `reads_as_sent`: the assessor judges the document as its server sent it (its JSON parsed,
    before the kind's reading leaves out what it does not diff, such as a card's
    `signatures`); the verdict is still attached to the contract as the kind reads it."""

    name: str
    build: Callable[[Settings, Any], Assessor]
    reads_as_sent: bool = False


class Assessments(Registry[Assessment]):
    what = "assessment"


def judged(document: Any, verdicts: dict[str, dict[str, Any]]) -> Any:
    """The document with its verdicts (the same document when there are none)."""
    if not verdicts or not isinstance(document, dict):
        return document
    return {**document, VERDICTS_KEY: verdicts}


def verdicts_of(document: Any) -> dict[str, dict[str, Any]]:
    """The verdicts a document carries (none for one no assessor judged)."""
    found = document.get(VERDICTS_KEY) if isinstance(document, dict) else None
    return found if isinstance(found, dict) else {}


def without_verdicts(document: Any) -> Any:
    """The contract itself, as its server sent it."""
    if isinstance(document, dict) and VERDICTS_KEY in document:
        return {k: v for k, v in document.items() if k != VERDICTS_KEY}
    return document


def failing(document: Any) -> list[str]:
    """The summaries of the document's verdicts that fail, by assessor name."""
    return [
        str(verdict.get("summary") or name)
        for name, verdict in sorted(verdicts_of(document).items())
        if not verdict.get("ok")
    ]
