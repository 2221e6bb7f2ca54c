"""Regenerate the table of docs/plans.md from the plans table the checks read
(`controller.model.plans.FEATURES`): `python -m tests.gen_plans_doc`. The prose around it is
written by hand; the table between the markers is the code's."""

from __future__ import annotations

from pathlib import Path

from controller.ingress.service import quota_of
from controller.model.plans import PLANS, render_markdown
from controller.settings import Settings

PLANS_DOC = Path(__file__).resolve().parents[1] / "docs" / "plans.md"
BEGIN = "<!-- the table below is generated from controller/model/plans.py: make generate -->\n"
END = "<!-- end of the generated table -->\n"


def default_table() -> str:
    """The table with the quotas of a server whose settings are the defaults."""
    defaults = Settings()
    return render_markdown({plan: quota_of(defaults, plan) for plan in PLANS})


def generated(text: str) -> str:
    """`text` (the page) with its generated table replaced by the code's."""
    head, begin, rest = text.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError(f"{PLANS_DOC}: the generated table's markers are missing")
    return head + BEGIN + default_table() + END + tail


def main() -> None:
    PLANS_DOC.write_text(generated(PLANS_DOC.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {PLANS_DOC}")


if __name__ == "__main__":
    main()
