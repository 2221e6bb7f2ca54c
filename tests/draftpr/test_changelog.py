"""The changelog of a draft pull request (pure): stable stub numbers, escaped table cells, and
a body that stays under GitHub's limit."""

from __future__ import annotations

import uuid

from controller.draftpr import changelog


def test_state_tokens_and_stub_numbers_are_stable() -> None:
    assert changelog.stub_number("e1", "a/b") == changelog.stub_number("e1", "A/B")
    assert changelog.stub_number("e1", "a/b") != changelog.stub_number("e2", "a/b")
    assert 1000 <= changelog.stub_number(str(uuid.uuid4()), "x/y") < 100000
    lines = [
        changelog.ChangeLine("info", "/a|b", "x | y"),
        changelog.ChangeLine("breaking", "/z", "gone", "endpoint-removed"),
    ]
    text = changelog.render_changelog(
        watch_name="w", watch_url="https://v/x", event_id="e", changes=lines, link=None
    )
    rows = [line for line in text.splitlines() if line.startswith("| ")][1:]
    assert rows[0].startswith("| breaking | endpoint-removed |") and "\\|" in rows[1]


def test_a_pull_request_body_stays_under_githubs_limit() -> None:
    """250 changes of 500-character cells make a changelog file over 65,536 characters; the
    body keeps what fits and points at the file."""
    lines = [
        changelog.ChangeLine(
            "breaking", f"/p{i}/" + "x" * 500, "y" * 500, "endpoint-removed", "z" * 500
        )
        for i in range(250)
    ]
    parts = {"watch_name": "w", "watch_url": "https://v/x", "event_id": "e", "changes": lines}
    whole = changelog.render_changelog(**parts, link=None)  # type: ignore[arg-type]
    shown = changelog.render_changelog(
        **parts,
        link=None,
        max_chars=changelog.MAX_BODY_CHARS,  # type: ignore[arg-type]
    )
    assert len(whole) > 65_536 >= changelog.MAX_BODY_CHARS >= len(shown)
    kept = sum(line.startswith("| breaking |") for line in shown.splitlines())
    assert 0 < kept < 250
    assert f"…and {250 - kept} more of 250 changes: see `.driftgate/changes/e.md`." in shown
    assert shown.rstrip().endswith("unblocks the agents bound to the watch.")


def test_a_waived_finding_is_listed_marked_and_not_counted() -> None:
    """A finding a waiver of `.driftgate/waivers.yaml` accepts: a row of its own, last, with
    the waiver; the title and the counts leave it out."""
    lines = [
        changelog.ChangeLine(
            "breaking",
            "/paths/~1v1~1legacy/get",
            "operation GET /v1/legacy removed",
            "endpoint-removed",
            waived="by payments@example.com until 2027-03-31: never called (T-1)",
        ),
        changelog.ChangeLine("breaking", "/z", "gone", "endpoint-removed"),
    ]
    assert changelog.title("w", lines) == "driftgate: w contract drift (1 breaking, 1 waived)"
    text = changelog.render_changelog(
        watch_name="w", watch_url="https://v/x", event_id="e", changes=lines, link=None
    )
    rows = [line for line in text.splitlines() if line.startswith("| ")][1:]
    assert rows[0].startswith("| breaking | endpoint-removed | `/z` |")
    assert rows[1].startswith("| waived (breaking) | endpoint-removed |")
    assert rows[1].endswith(
        "| waived by payments@example.com until 2027-03-31: never called (T-1) |"
    )
    assert "- changes: 1 breaking, 1 waived" in text
