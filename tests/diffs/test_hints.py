"""Every rule's hint fits its side and its severity (controller/diffs/rules.py, `HINT_WORDS`).

A request-side hint speaks of what the client sends, a response-side hint of what it reads: a
response-side rule never tells the client to send something (issue 32: the info-level
`response-property-added-required` said "Send the new required field on every call").
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from cli.main import main
from controller.diffs.explain import hint_of
from controller.diffs.rules import (
    CATALOG,
    SCHEMA_FAMILIES,
    SUBJECTS,
    Direction,
    hint_misfits,
    side_of,
)
from controller.model.change import Severity

SIDED = [rule for rule in CATALOG.values() if side_of(rule.id, rule.direction) is not None]


def test_every_side_and_family_is_walked() -> None:
    """Every family yields a rule on both sides, and contract rules named by side count too."""
    sides = {side_of(rule.id, rule.direction) for rule in SIDED}
    assert sides == {Direction.REQUEST, Direction.RESPONSE}
    for family in SCHEMA_FAMILIES:
        for direction, subjects in SUBJECTS.items():
            root, nested = subjects[0]
            # A root-only aspect (a whole schema deprecated) has no rule below the root.
            rule = CATALOG[f"{root if family.root_only else nested}-{family.aspect}"]
            assert rule.direction is direction and rule.hint == family.hint_for(direction)
    assert len(SIDED) > 1000  # the families times their subjects, plus request-/response- rules


def test_every_hint_fits_its_side() -> None:
    misfits = {
        rule.id: (rule.hint, sorted(words))
        for rule in SIDED
        if (words := hint_misfits(rule.hint, side_of(rule.id, rule.direction)))
    }
    assert not misfits, f"hints that speak of the other side: {misfits}"


def test_a_hint_that_needs_no_action_is_on_information_only() -> None:
    """'Nothing to do' and 'Backward compatible' never stand beside a breaking or a warning."""
    for rule in CATALOG.values():
        text = rule.hint.lower()
        if "nothing to do" in text or text.startswith("backward compatible"):
            assert rule.severity is Severity.INFO, (rule.id, rule.severity, rule.hint)


def test_the_misfit_check_catches_the_reported_hint() -> None:
    """The check is not vacuous: the old hint of the response-side rule fails it."""
    old = "Send the new required field on every call."
    assert hint_misfits(old, Direction.RESPONSE) == {"send"}
    assert not hint_misfits(old, Direction.REQUEST)
    assert hint_misfits("Readers must handle null values.", Direction.REQUEST) == {
        "readers",
        "handle",
    }


def test_added_required_reads_right_on_each_side() -> None:
    response = CATALOG["response-property-added-required"]
    request = CATALOG["request-property-added-required"]
    assert response.severity is Severity.INFO and "send" not in response.hint.lower()
    assert request.severity is Severity.BREAKING and request.hint.startswith("Send")
    assert hint_of(response.id, "info") == response.hint


def test_compare_and_diff_give_the_response_side_hint(tmp_path: Path) -> None:
    """`compare` (payloads read as responses) and `diff` carry the fitting hint in JSON."""
    base, revision = tmp_path / "a.json", tmp_path / "b.json"
    base.write_text(json.dumps([{"id": 1}]))
    revision.write_text(json.dumps([{"id": 1, "email": "a@example.com"}]))
    body = json.loads(
        CliRunner().invoke(main, ["compare", str(base), str(revision), "--format", "json"]).output
    )
    (added,) = body["changes"]
    assert added["rule"] == "response-property-added-required"
    assert added["hint"] == CATALOG["response-property-added-required"].hint
    assert not hint_misfits(added["hint"], Direction.RESPONSE)
