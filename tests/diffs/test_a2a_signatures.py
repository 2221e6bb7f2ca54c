"""A2A cards whose watch trusts keys: the check's verdict on the card's signatures (under
`x-driftgate-verdicts`) compared between base and revision, and nothing else read from it."""

from __future__ import annotations

from typing import Any

import pytest

from controller.checks.assessments import ASSESSMENTS
from controller.checks.verdicts import VERDICTS_KEY
from controller.diffs import diff_agent_card
from controller.diffs.a2a import CARD_SIGNATURE, SIGNATURE_RULES
from controller.diffs.rules import CATALOG, gate_reasons
from tests.diffs.conftest import card, skill


def judged(status: str | None, **fields: Any) -> dict[str, Any]:
    """A card as a check stores it, with its signature verdict (none: no verdict)."""
    document = card([skill("refund")], **fields)
    if status is None:
        return document
    verdict = {"ok": status == "trusted", "status": status, "summary": f"card is {status}"}
    return {**document, VERDICTS_KEY: {CARD_SIGNATURE: {**verdict, "kids": ["k"]}}}


# base verdict, revision verdict, the findings {rule: severity}
TABLE: list[tuple[str, str | None, str | None, dict[str, str]]] = [
    ("still trusted", "trusted", "trusted", {}),
    (
        "re-signed by an untrusted key",
        "trusted",
        "untrusted",
        {"card-signature-untrusted": "breaking"},
    ),
    ("signature removed", "trusted", "unsigned", {"card-signature-removed": "breaking"}),
    ("changed after signing", "trusted", "invalid", {"card-signature-invalid": "breaking"}),
    ("keys named after the baseline", None, "untrusted", {"card-signature-untrusted": "breaking"}),
    ("an accepted unsigned baseline stays unsigned", "unsigned", "unsigned", {}),
    ("from unsigned to forged", "unsigned", "untrusted", {"card-signature-untrusted": "breaking"}),
    ("trusted again", "untrusted", "trusted", {}),
    ("keys no longer named", "trusted", None, {}),
]


@pytest.mark.parametrize(
    ("before", "after", "expected"), [row[1:] for row in TABLE], ids=[row[0] for row in TABLE]
)
def test_a_verdict_that_turned_bad_is_a_breaking_finding(
    before: str | None, after: str | None, expected: dict[str, str]
) -> None:
    changes = diff_agent_card(judged(before), judged(after))
    assert {c.rule: c.severity.value for c in changes} == expected
    for change in changes:
        assert change.path == "/signatures" and change.after == after
        assert change.agentAction == "verify_agent_card"
        assert f"card is {after}" in change.summary


def test_the_verdicts_are_no_part_of_the_card() -> None:
    # Only the signature status is compared: a new summary or key id is no finding.
    before = judged("untrusted")
    after = judged("untrusted")
    after[VERDICTS_KEY][CARD_SIGNATURE]["kids"] = ["other"]
    assert diff_agent_card(before, after) == []
    assert {c.rule for c in diff_agent_card(judged("trusted"), judged("trusted", name="New"))} == {
        "agent-name-changed"
    }


def test_the_signature_rules_have_the_gates_reason_of_their_own() -> None:
    assert set(SIGNATURE_RULES.values()) == {
        rule for rule in CATALOG if rule.startswith("card-signature-")
    }
    assert gate_reasons(SIGNATURE_RULES.values()) == ["card_signature_invalid"]
    for rule in SIGNATURE_RULES.values():
        assert CATALOG[rule].severity.value == "breaking"


def test_the_engine_reads_the_verdict_the_check_writes() -> None:
    assert CARD_SIGNATURE in {entry.name for entry in ASSESSMENTS}
