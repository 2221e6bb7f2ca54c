"""Coverage of oasdiff's rule catalog by driftgate's: one row per oasdiff rule id.

Usage: python bench/oasdiff_coverage.py [--write] [--smoke]

Reads `bench/data/oasdiff-rule-ids.txt` (oasdiff's ids at a fixed commit) and says for each id
which driftgate rule reports the same thing (the names map as the conformance runner maps
them, `bench/conformance.py`), or why none does: `not applicable`, `differs` (reported another
way, reasoned) or `missing` (not built yet). `--write` regenerates `docs/oasdiff-coverage.md`;
`tests/diffs/test_oasdiff_coverage.py` keeps that file current. It reads only the repository;
`--smoke` is the same run, and with `--write` writes the page into a temporary directory.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import smoke  # noqa: E402
from bench.conformance import _RENAMES  # noqa: E402
from controller.diffs.rules import CATALOG  # noqa: E402

IDS = ROOT / "bench" / "data" / "oasdiff-rule-ids.txt"
DOC = ROOT / "docs" / "oasdiff-coverage.md"

# oasdiff ids reported by a driftgate rule under another name, beyond the renames the
# conformance runner uses (several oasdiff ids can map to one of ours).
EXTRA = {
    "api-path-removed-without-deprecation": "endpoint-removed",
    "api-removed-without-deprecation": "endpoint-removed",
    "api-path-removed-with-deprecation": "endpoint-removed-deprecated",
    "api-removed-with-deprecation": "endpoint-removed-deprecated",
    "api-path-removed-before-sunset": "endpoint-removed-before-sunset",
    "api-removed-before-sunset": "endpoint-removed-before-sunset",
    "api-deprecated-sunset-parse": "endpoint-sunset-invalid",
    "api-path-sunset-parse": "endpoint-sunset-invalid",
    "api-global-security-added": "global-security-requirement-added",
    "api-global-security-removed": "global-security-requirement-removed",
    "response-required-property-became-write-only": "response-property-became-write-only",
    "request-required-property-became-write-only": "request-property-became-write-only",
    "response-required-property-became-not-write-only": "response-property-became-not-write-only",
    "request-required-property-became-not-write-only": "request-property-became-not-write-only",
    "new-request-path-parameter": "request-parameter-added-required",
    "new-required-request-default-parameter-to-existing-path": "request-parameter-added-required",
    "new-optional-request-default-parameter-to-existing-path": "request-parameter-added-optional",
    "new-required-request-header-property": "request-parameter-property-added-required",
    "request-header-property-became-required": "request-parameter-property-became-required",
    "request-header-property-became-enum": "request-parameter-property-became-enum",
    "api-operation-id-added": "endpoint-operation-id-changed",
    "api-global-security-scope-added": "security-scope-added",
    "api-global-security-scope-removed": "security-scope-removed",
    # deprecated without a sunset date: what `*-property-deprecated` reports
    "request-property-deprecated-sunset-missing": "request-property-deprecated",
    "response-property-deprecated-sunset-missing": "response-property-deprecated",
}

_NEVER_READ = ("differs", "writeOnly properties are never read: responses leave them out")
_NEVER_SENT = ("differs", "readOnly properties are never sent: requests leave them out")

# Why an oasdiff id has no driftgate rule of its own.
REASONS = {
    "api-security-updated": ("differs", "reported as the requirement's scopes added and removed"),
    "api-security-component-oauth-scope-changed": (
        "not applicable",
        "only a scope's description changed: documentation",
    ),
    "response-media-type-name-changed": (
        "differs",
        "reported as the old media type removed and the new one added",
    ),
    "response-media-type-name-generalized": (
        "differs",
        "reported as the old media type removed and the new one added",
    ),
    "response-media-type-name-specialized": (
        "differs",
        "reported as the old media type removed and the new one added",
    ),
    "response-optional-write-only-property-added": _NEVER_READ,
    "response-optional-write-only-property-removed": _NEVER_READ,
    "response-required-write-only-property-added": _NEVER_READ,
    "response-required-write-only-property-removed": _NEVER_READ,
    "response-write-only-property-became-optional": _NEVER_READ,
    "response-write-only-property-became-required": _NEVER_READ,
    "response-write-only-property-enum-value-added": _NEVER_READ,
    "request-read-only-property-enum-value-removed": _NEVER_SENT,
    "request-read-only-property-max-decreased": _NEVER_SENT,
    "request-read-only-property-max-length-decreased": _NEVER_SENT,
    "request-read-only-property-min-increased": _NEVER_SENT,
    "request-read-only-property-exclusive-min-increased": _NEVER_SENT,
    "request-read-only-property-exclusive-max-decreased": _NEVER_SENT,
    "request-read-only-property-max-items-decreased": _NEVER_SENT,
    "request-read-only-property-max-properties-decreased": _NEVER_SENT,
    "api-tag-added": ("not applicable", "tags group operations for documentation"),
    "api-tag-removed": ("not applicable", "tags group operations for documentation"),
    "api-schema-removed": (
        "differs",
        "a component matters through the operations that use it; its removal shows there",
    ),
    "api-sunset-date-too-small": ("differs", "needs a policy of minimum deprecation days"),
    "request-parameter-sunset-date-too-small": (
        "differs",
        "needs a policy of minimum deprecation days",
    ),
    "request-property-sunset-date-too-small": (
        "differs",
        "needs a policy of minimum deprecation days",
    ),
    "response-property-sunset-date-too-small": (
        "differs",
        "needs a policy of minimum deprecation days",
    ),
}


def driftgate_names() -> dict[str, list[str]]:
    """oasdiff id -> the driftgate rules that report it."""
    names: dict[str, list[str]] = {}
    for rule in CATALOG:
        for theirs in {_RENAMES.get(rule, rule)}:
            names.setdefault(theirs, []).append(rule)
    for theirs, ours in EXTRA.items():
        if ours in CATALOG:
            names.setdefault(theirs, []).append(ours)
    return names


def rows() -> list[tuple[str, str, str]]:
    """(oasdiff id, status, driftgate rules or reason), in the file's order."""
    names = driftgate_names()
    out = []
    for line in IDS.read_text(encoding="utf-8").splitlines():
        theirs = line.strip()
        if not theirs or theirs.startswith("#"):
            continue
        if theirs in names:
            out.append((theirs, "covered", ", ".join(f"`{r}`" for r in sorted(set(names[theirs])))))
        elif theirs in REASONS:
            status, why = REASONS[theirs]
            out.append((theirs, status, why))
        else:
            out.append((theirs, "missing", "no rule yet"))
    return out


def render() -> str:
    table = rows()
    counts = Counter(status for _, status, _ in table)
    lines = [
        "# Coverage of oasdiff's rule catalog",
        "",
        "Generated by `python bench/oasdiff_coverage.py --write` from oasdiff's rule ids at a "
        "fixed commit (`bench/data/oasdiff-rule-ids.txt`); `tests/diffs/test_oasdiff_coverage.py` "
        "keeps it current.",
        "",
        f"{len(table)} ids: " + ", ".join(f"{counts[s]} {s}" for s in sorted(counts)) + ".",
        "",
        "| oasdiff id | status | driftgate rule, or why not |",
        "|---|---|---|",
    ]
    lines += [f"| `{theirs}` | {status} | {what} |" for theirs, status, what in table]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="regenerate the docs page")
    args = smoke.parse(parser, {})
    text = render()
    if args.write:
        target = smoke.scratch() / DOC.name if args.smoke else DOC
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target}")
    print(text.splitlines()[4])


if __name__ == "__main__":
    main()
