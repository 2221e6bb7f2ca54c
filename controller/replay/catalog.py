"""The replay catalog: fixtures anyone may browse. Pure reads of the files shipped in
`controller/replay/catalog/` (the `oss-curated` fixtures, built from real MCP server release
pairs by `bench/replay_catalog.py`), filtered and paged."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

CATALOG_DIR = Path(__file__).resolve().parent / "catalog"


@dataclass(frozen=True)
class Entry:
    row: dict[str, Any]
    files: dict[str, str]


@cache
def shipped() -> dict[str, Entry]:
    """The shipped fixtures by id, in id order."""
    entries = {}
    for path in sorted(CATALOG_DIR.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        entries[data["row"]["id"]] = Entry(data["row"], data["files"])
    return entries


def rows(
    *,
    vendor: str | None = None,
    watch_type: str | None = None,
    content_kind: str | None = None,
    tag: str | None = None,
    query: str | None = None,
) -> list[dict[str, Any]]:
    found = []
    for entry in shipped().values():
        row = entry.row
        if vendor and row["vendor"] != vendor:
            continue
        if watch_type and row["watchType"] != watch_type:
            continue
        if content_kind and row["contentKind"] != content_kind:
            continue
        if tag and tag not in row["tags"]:
            continue
        if query and query.lower() not in (row["title"] + " " + row["summary"]).lower():
            continue
        found.append(row)
    return found
