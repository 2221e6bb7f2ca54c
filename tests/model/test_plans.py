"""The plans table (`controller.model.plans`): the settings' plan names are its plans,
docs/plans.md's table is generated from it, and every plan check reads it (no module
compares plan names of its own)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest

from controller.model.plans import DEFAULT_PLAN, FEATURES, PLANS, allows, unlocked
from controller.settings import Settings
from tests.gen_plans_doc import PLANS_DOC, generated

ROOT = Path(__file__).resolve().parents[2]
# What a plan check of its own would look like: a plan compared with a name, or a minimum.
OWN_CHECK = re.compile(
    r"""plan\s*[!=]=\s*["']|["'](?:free|pro|team|enterprise)["']\s*[!=]=\s*\w*plan|plan_at_least\("""
)


def test_the_settings_offer_the_plans_and_default_to_enterprise() -> None:
    field = Settings.model_fields["default_plan"]
    assert get_args(field.annotation) == PLANS
    assert field.default == DEFAULT_PLAN == "enterprise"


def test_the_doc_lists_what_the_table_holds() -> None:
    text = PLANS_DOC.read_text(encoding="utf-8")
    assert text == generated(text), "docs/plans.md is stale: run make generate"
    for feature in FEATURES.values():
        row = next(line for line in text.splitlines() if line.startswith(f"| `{feature.name}` |"))
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        marks = cells[3 : 3 + len(PLANS)]
        assert marks == ["yes" if allows(p, feature.name) else "no" for p in PLANS]


def test_a_check_cannot_name_a_feature_the_table_lacks() -> None:
    with pytest.raises(KeyError):
        allows("pro", "no_such_feature")
    assert unlocked("free") == []
    assert unlocked("enterprise") == list(FEATURES.values())


def test_every_plan_check_reads_the_table() -> None:
    own = []
    used = set()
    for package in ("controller", "web", "cli"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "controller" / "model" / "plans.py":
                continue
            text = path.read_text(encoding="utf-8")
            own += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in OWN_CHECK.finditer(text)]
            used |= {name for name in FEATURES if f'"{name}"' in text}
    assert own == []
    assert used == set(FEATURES)  # every feature of the table is checked somewhere
