"""Regenerate docs/tool-lint.md from the lint rules: `python -m tests.gen_lint_doc`."""

from __future__ import annotations

from pathlib import Path

from controller.draftpr.lint import render_rules_markdown

LINT_DOC = Path(__file__).resolve().parents[1] / "docs" / "tool-lint.md"


def main() -> None:
    LINT_DOC.write_text(render_rules_markdown(), encoding="utf-8")
    print(f"wrote {LINT_DOC}")


if __name__ == "__main__":
    main()
