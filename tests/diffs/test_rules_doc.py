"""docs/rules.md is generated from the catalog and must not go stale."""

from __future__ import annotations

from controller.diffs.rules import AGENT_ACTIONS, CATALOG, CONTRACT_RULES, SCHEMA_FAMILIES
from controller.diffs.rulesdoc import render_rules_markdown
from tests.diffs.gen_rules_doc import RULES_DOC


def test_rules_doc_is_current() -> None:
    assert RULES_DOC.read_text(encoding="utf-8") == render_rules_markdown(), (
        "docs/rules.md is stale: run `make generate`"
    )


def test_rule_ids_are_kebab_case_and_actions_known() -> None:
    for rule_id, rule in CATALOG.items():
        assert rule_id == rule_id.lower() and " " not in rule_id and "_" not in rule_id
        assert rule.agent_action in AGENT_ACTIONS, rule_id
        assert rule.hint and rule.summary


def test_families_are_unique() -> None:
    aspects = [f.aspect for f in SCHEMA_FAMILIES]
    assert len(aspects) == len(set(aspects))


def test_every_rule_says_why_per_side() -> None:
    """docs/rules.md gives, per schema family and side and per contract rule, who breaks and
    how: each declaration carries its reason, and every rule of the catalog (each family
    expanded per subject) has one."""
    assert all(fam.request_reason and fam.response_reason for fam in SCHEMA_FAMILIES)
    assert all(rule.reason for rule in CONTRACT_RULES)
    assert [rule_id for rule_id, rule in CATALOG.items() if not rule.reason] == []
