"""The verdicts a check judged a contract with, as the diff engines read them.

A check may judge a fetched contract against its watch's own trust settings (the keys its
agent card must be signed with, the tool set its MCP server is pinned to) and keep each
verdict in the document under `VERDICTS_KEY` (`controller.checks.verdicts` attaches them).
The key is no part of the contract: each kind's engine reads the verdict it knows by name and
reports one that turned bad (`controller.diffs.a2a`, `controller.diffs.toollock`). Pure.
"""

from __future__ import annotations

from typing import Any

VERDICTS_KEY = "x-driftgate-verdicts"


def verdict_of(document: Any, name: str) -> dict[str, Any]:
    """The verdict `name` a document carries (empty when it carries none)."""
    verdicts = document.get(VERDICTS_KEY) if isinstance(document, dict) else None
    verdict = verdicts.get(name) if isinstance(verdicts, dict) else None
    return verdict if isinstance(verdict, dict) else {}
