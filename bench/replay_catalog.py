"""Build the shipped replay catalog (`controller/replay/catalog/*.json`) from real MCP server
release pairs (`../shared/conformance/mcp/<case>/{before,after}.json`, each a real published
version of a public MCP server): one `oss-curated` fixture per pair, its changes from
driftgate's own MCP engine. `tests/replay/test_catalog.py` rebuilds them and compares (from
this corpus when it is beside the clone, else from the contracts each fixture ships).

Usage: python bench/replay_catalog.py [--write] [--corpus DIR] [--smoke]

`--smoke` builds from a corpus made of the contracts the shipped fixtures carry
(`shipped_corpus`, so it needs nothing beside the clone) and, with `--write`, writes into a
temporary directory, never into the repository.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import smoke  # noqa: E402
from controller.diffs import diff_mcp  # noqa: E402
from controller.replay.catalog import CATALOG_DIR  # noqa: E402
from controller.replay.fixtures import build_fixture, dump  # noqa: E402

CORPUS = ROOT.parent / "shared" / "conformance" / "mcp"


def build(corpus: Path = CORPUS) -> dict[str, str]:
    """File name -> content of every catalog file."""
    cases = json.loads((corpus / "cases.json").read_text(encoding="utf-8"))["cases"]
    out = {}
    for case in cases:
        before = json.loads((corpus / case["dir"] / "before.json").read_text(encoding="utf-8"))
        after = json.loads((corpus / case["dir"] / "after.json").read_text(encoding="utf-8"))
        changes = [c.to_json() for c in diff_mcp(before, after)]
        b, a = case["before"], case["after"]
        fixture_id = f"oss-{case['id']}"
        fixture = build_fixture(
            fixture_id=fixture_id,
            watch_type="mcp",
            before=before,
            after=after,
            changes=changes,
            content_kind="oss-curated",
            source=f"npm {b['package']} {b['version']} -> {a['version']}",
            created_at="2026-11-25T00:00:00Z",
        )
        counts = {
            s: sum(1 for c in changes if c["severity"] == s)
            for s in ("breaking", "warning", "info")
        }
        row: dict[str, Any] = {
            "id": fixture_id,
            "title": f"{b['package']} {b['version']} -> {a['version']}",
            "vendor": b["package"],
            "watchType": "mcp",
            "contentKind": "oss-curated",
            "tags": sorted(
                {"mcp", b["package"], "breaking" if counts["breaking"] else "compatible"}
            ),
            "installable": True,
            "changes": counts,
            "summary": case.get("summary", ""),
            "updatedAt": "2026-11-25T00:00:00Z",
        }
        out[f"{fixture_id}.json"] = dump({"row": row, "files": fixture.files})
    return out


def shipped_corpus(root: Path) -> Path:
    """A corpus in `CORPUS`'s layout under `root`, made of what the shipped fixtures carry: each
    one's before and after contracts, its package and versions (from its source line)."""
    cases = []
    for path in sorted(CATALOG_DIR.glob("*.json")):
        fixture = json.loads(path.read_text(encoding="utf-8"))
        files, row = fixture["files"], fixture["row"]
        source = json.loads(files["cloud-meta.json"])["source"]
        _npm, package, before, _arrow, after = source.split(" ")
        case_id = row["id"].removeprefix("oss-")
        (root / case_id).mkdir(parents=True)
        (root / case_id / "before.json").write_text(files["before.schema.json"], encoding="utf-8")
        (root / case_id / "after.json").write_text(files["after.schema.json"], encoding="utf-8")
        cases.append(
            {
                "id": case_id,
                "dir": case_id,
                "before": {"package": package, "version": before},
                "after": {"package": package, "version": after},
                "summary": row["summary"],
            }
        )
    (root / "cases.json").write_text(json.dumps({"cases": cases}), encoding="utf-8")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = smoke.parse(parser, {"corpus": None})
    if args.corpus is None:
        args.corpus = shipped_corpus(smoke.scratch() / "corpus")
        print("corpus: the contracts the shipped fixtures carry")
    files = build(args.corpus)
    if args.write:
        target = smoke.scratch() / "catalog" if args.smoke else CATALOG_DIR
        target.mkdir(parents=True, exist_ok=True)
        for stale in target.glob("*.json"):
            if stale.name not in files:
                stale.unlink()
        for name, content in files.items():
            (target / name).write_text(content, encoding="utf-8")
        print(f"wrote {target}")
    shipped = {p.name: p.read_text(encoding="utf-8") for p in CATALOG_DIR.glob("*.json")}
    same = sum(shipped.get(name) == content for name, content in files.items())
    print(
        f"{len(files)} fixtures, {sum(len(c) for c in files.values()) / 1_048_576:.1f} MB; "
        f"{same} the same as the shipped one"
    )


if __name__ == "__main__":
    main()
