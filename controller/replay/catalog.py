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


@dataclass(frozen=True)
class Filters:
    vendor: str | None = None
    watch_type: str | None = None
    content_kind: str | None = None
    tag: str | None = None
    query: str | None = None

    def match(self, row: dict[str, Any]) -> bool:
        """Whether a catalog row (of any content kind) passes the filters."""
        return (
            (self.vendor is None or row["vendor"] == self.vendor)
            and (self.watch_type is None or row["watchType"] == self.watch_type)
            and (self.content_kind is None or row["contentKind"] == self.content_kind)
            and (self.tag is None or self.tag in row["tags"])
            and (
                self.query is None
                or self.query.lower() in (row["title"] + " " + row["summary"]).lower()
            )
        )


def rows(filters: Filters) -> list[dict[str, Any]]:
    """The shipped fixtures' rows that pass the filters."""
    return [entry.row for entry in shipped().values() if filters.match(entry.row)]
