"""Ids as people type them: whole, or a unique prefix (`controller.model.ids`)."""

from __future__ import annotations

import pytest

from controller.errors import Conflict
from controller.model.ids import ambiguous, is_id_prefix, is_whole_id, pick

A = "3f2a9c1e-7d4b-4c1a-9e2f-0a1b2c3d4e5f"
B = "3f2a9c77-0000-4000-8000-000000000000"
C = "9b1d0e2f-1111-4111-8111-111111111111"
CANDIDATES = [(A, "charges"), (B, "refunds"), (C, "github")]


@pytest.mark.parametrize(
    ("ref", "prefix", "whole"),
    [
        ("3f2a", True, False),
        ("3F2A9C1E", True, False),
        ("3f2a9c1e-7d4b", True, False),
        (A, False, True),
        ("3f2", False, False),  # too short to name anything
        ("charges", False, False),
        ("3f2a 9c", False, False),
        ("", False, False),
    ],
)
def test_what_can_be_a_prefix(ref: str, prefix: bool, whole: bool) -> None:
    assert (is_id_prefix(ref), is_whole_id(ref)) == (prefix, whole)


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("3f2a9c1", A),
        ("3F2A9C1E", A),  # ids are lowercase; what is typed need not be
        ("3f2a9c7", B),
        ("9b1d", C),
        (A, A),
        ("ffff", None),
        ("charges", None),  # a name is not a prefix
        ("3f2", None),  # three characters name nothing, even when one id starts with them
    ],
)
def test_a_unique_prefix_names_its_id(ref: str, expected: str | None) -> None:
    assert pick("watches", ref, CANDIDATES) == expected


def test_an_ambiguous_prefix_lists_the_candidates() -> None:
    with pytest.raises(Conflict) as raised:
        pick("watches", "3f2a9c", CANDIDATES)
    error = raised.value
    assert error.code == "ambiguous_id"
    assert error.message == (
        f"the id prefix '3f2a9c' names 2 watches: {A} (charges), {B} (refunds); type more of the id"
    )
    assert error.details == [{"id": A, "label": "charges"}, {"id": B, "label": "refunds"}]


def test_many_candidates_show_ten() -> None:
    found = [(f"aaaa{n:04d}-0000-4000-8000-000000000000", "") for n in range(11)]
    cut = ambiguous("keys", "aaaa", found, more=True)
    assert cut.message.startswith("the id prefix 'aaaa' names more than 10 keys: aaaa0000-")
    assert "aaaa0009-" in cut.message and "aaaa0010-" not in cut.message
    assert len(cut.details) == 10
    assert ambiguous("keys", "aaaa", found).message.startswith("the id prefix 'aaaa' names 11")
