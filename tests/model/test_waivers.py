"""The waiver's pure core (`controller.model.waivers`): what it matches, which watches it is
for, when it ends, and how changes are marked and unmarked."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from pydantic import ValidationError

from controller.model.change import Change, Location, Severity
from controller.model.waivers import (
    Waiver,
    WatchWaiver,
    unwaive,
    waive,
    waived_until,
    waiver_key,
)

REMOVED = Change(
    path="/paths/~1v1~1legacy~1a/get",
    severity=Severity.BREAKING,
    summary="operation GET /v1/legacy/a removed",
    rule="endpoint-removed",
    location=Location(operation="GET /v1/legacy/a"),
)
TOOL = Change(
    path="/tools/search",
    severity=Severity.WARNING,
    summary="tool search changed",
    rule="tool-description-changed",
    location=Location(tool="search"),
)


def waiver(**fields: object) -> Waiver:
    base: dict[str, object] = {
        "rule": "endpoint-removed",
        "owner": "team@example.com",
        "reason": "accepted",
        "expires": "2027-03-31",
    }
    return Waiver.model_validate(base | fields)


@pytest.mark.parametrize(
    ("fields", "change", "matches"),
    [
        ({}, REMOVED, True),
        ({"operation": "GET /v1/legacy/*"}, REMOVED, True),
        ({"operation": "GET /v2/*"}, REMOVED, False),
        ({"path": "/paths/~1v1~1legacy*"}, REMOVED, True),
        ({"tool": "s*"}, REMOVED, False),  # a change without a tool is matched as ""
        ({"rule": "response-property-removed"}, REMOVED, False),
        ({"rule": "tool-description-changed", "tool": "sea*"}, TOOL, True),
    ],
)
def test_what_a_waiver_matches(fields: dict[str, object], change: Change, matches: bool) -> None:
    assert waiver(**fields).matches(change) is matches


@pytest.mark.parametrize(
    ("glob", "applies"),
    [("stripe-*", True), ("production", True), ("team:*", True), ("staging", False)],
)
def test_which_watches_it_is_for(glob: str, applies: bool) -> None:
    entry = WatchWaiver.model_validate(waiver().model_dump() | {"watch": glob})
    assert entry.applies_to("stripe-api", "production", ["team:payments"]) is applies


def test_it_ends_at_the_start_of_its_day_utc() -> None:
    entry = waiver(expires="2027-03-31")
    assert not entry.is_expired(datetime(2027, 3, 30, 23, 59, 59, tzinfo=UTC))
    assert entry.is_expired(datetime(2027, 3, 31, tzinfo=UTC))


def test_marking_and_unmarking() -> None:
    now = datetime(2027, 1, 1, tzinfo=UTC)
    ignored = TOOL.model_copy(update={"ignored": True, "ignoreReason": "ours"})
    marked = waive([REMOVED, ignored], [waiver(), waiver(rule="tool-description-changed")], now)
    assert marked[0].waived and marked[0].ignored and marked[0].ignoreReason == "accepted"
    assert marked[0].to_json()["waiver"] == {
        "owner": "team@example.com",
        "reason": "accepted",
        "expires": "2027-03-31",
    }
    assert marked[1] == ignored  # an ignore is kept as it is
    assert waived_until(marked) == datetime(2027, 3, 31, tzinfo=UTC)
    assert unwaive(marked) == [REMOVED, ignored]
    assert waive([REMOVED], [waiver(expires="2026-12-31")], now) == [REMOVED]  # expired
    assert waived_until([REMOVED]) is None


def test_a_waiver_is_known_by_what_it_matches() -> None:
    one = WatchWaiver.model_validate(waiver().model_dump() | {"watch": "a"})
    renewed = one.model_copy(update={"expires": date(2027, 6, 1), "reason": "still"})
    elsewhere = one.model_copy(update={"operation": "GET /x"})
    assert waiver_key(one) == waiver_key(renewed) != waiver_key(elsewhere)


def test_an_unknown_rule_and_a_missing_expiry_are_refused() -> None:
    with pytest.raises(ValidationError, match="unknown rule id 'nope'"):
        waiver(rule="nope")
    with pytest.raises(ValidationError, match="expires"):
        Waiver.model_validate({"rule": "endpoint-removed", "owner": "a", "reason": "b"})
