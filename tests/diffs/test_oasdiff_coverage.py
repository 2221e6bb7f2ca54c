"""The coverage table of oasdiff's rule catalog is current, and its gaps only shrink."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.oasdiff_coverage import DOC, render, rows  # noqa: E402

# No oasdiff id is left without a driftgate rule or a reason; keep it so.
MISSING_AT_MOST = 0


def test_the_coverage_table_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/oasdiff-coverage.md is stale: run python bench/oasdiff_coverage.py --write"
    )


def test_every_id_has_a_rule_or_a_status() -> None:
    table = rows()
    assert len(table) == len({theirs for theirs, _, _ in table}) > 550
    assert {status for _, status, _ in table} <= {"covered", "differs", "not applicable", "missing"}
    missing = [theirs for theirs, status, _ in table if status == "missing"]
    assert len(missing) <= MISSING_AT_MOST, missing
