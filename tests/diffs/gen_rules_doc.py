"""Regenerate docs/rules.md from the rule catalog: `python -m tests.diffs.gen_rules_doc`."""

from __future__ import annotations

from pathlib import Path

from controller.diffs.rulesdoc import render_rules_markdown

RULES_DOC = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def main() -> None:
    RULES_DOC.write_text(render_rules_markdown(), encoding="utf-8")
    print(f"wrote {RULES_DOC}")


if __name__ == "__main__":
    main()
