"""Real vendors' published descriptions (`../shared/conformance/vendors`): the latest version
of each loads and diffs against itself with no change (issue 41, point 1)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from controller.diffs import diff_openapi, load_document

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.conformance import DEFAULT_CORPUS  # noqa: E402

VENDORS = DEFAULT_CORPUS / "vendors"
_VERSION = re.compile(r"v(\d+)\.(?:json|ya?ml)$")


def _latest(vendor: Path) -> Path:
    versions = [(int(m[1]), p) for p in vendor.iterdir() if (m := _VERSION.fullmatch(p.name))]
    return max(versions)[1]


def _vendors() -> list[Path]:
    if not VENDORS.is_dir():
        return []
    return sorted(p for p in VENDORS.iterdir() if p.is_dir() and not p.name.startswith("."))


@pytest.mark.skipif(not VENDORS.is_dir(), reason=f"the vendors' corpus is not present at {VENDORS}")
@pytest.mark.parametrize("vendor", _vendors(), ids=lambda p: p.name)
def test_the_latest_version_of_every_vendor_loads_and_diffs_to_nothing(vendor: Path) -> None:
    latest = _latest(vendor)
    data = latest.read_bytes()
    # Two parses, so the diff compares two documents rather than one object with itself.
    base = load_document(data, latest.name, kind="openapi")
    revision = load_document(data, latest.name, kind="openapi")
    assert diff_openapi(base, revision) == []
