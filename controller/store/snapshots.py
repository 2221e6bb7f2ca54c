"""How contracts and their changes are kept in the store: a snapshot's document as canonical
JSON compressed with zlib (`Snapshot.content`), a drift event's or a diff run's changes as
compressed JSON (`changes`), with their counts by severity beside them (`counts`).

Written by the check engine and the diff runs; read by every capability that shows or uses
what a check stored (drift events and their export, draft pull requests, replay fixtures,
a watch's contract page).
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from controller.model.change import Change, Severity
from controller.store.models import Snapshot


def encode_document(document: Any) -> bytes:
    return zlib.compress(json.dumps(document, sort_keys=True, separators=(",", ":")).encode(), 6)


def decode_snapshot(snapshot: Snapshot) -> Any:
    return json.loads(zlib.decompress(snapshot.content))


def encode_changes(changes: list[Change]) -> bytes:
    return zlib.compress(json.dumps([c.to_json() for c in changes], default=str).encode(), 6)


def decode_changes(blob: bytes) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = json.loads(zlib.decompress(blob))
    return result


def count_changes(changes: list[Change]) -> dict[str, int]:
    """The changes a person has not ignored, by severity (every severity present)."""
    counts = {s.value: 0 for s in Severity}
    for change in changes:
        if not change.ignored:
            counts[change.severity.value] += 1
    return counts
