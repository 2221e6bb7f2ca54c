"""The weekly summary's pure parts: when it is due, what it says, the unsubscribe token."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from controller.crypto import SecretBox
from controller.errors import NotFound
from controller.model import summary_schedule as schedule
from controller.summary import compose, service

NOW = datetime(2026, 11, 25, 10, 30, tzinfo=UTC)  # a Wednesday, ISO week 48


def figures(**overrides: object) -> compose.WeeklyFigures:
    data: dict[str, object] = {
        "orgName": "acme",
        "week": "2026-W48",
        "since": "2026-11-18T10:30:00Z",
        "until": "2026-11-25T10:30:00Z",
        "drift": {"breaking": 2, "warning": 1, "info": 4},
        "driftedWatches": [
            {
                "watchId": "w1",
                "name": "<script>alert(1)</script>",
                "vendor": "stripe",
                "events": 3,
                "breaking": 2,
            },
        ],
        "openIncidents": 1,
        "acknowledgedIncidents": 0,
        "incidents": [
            {
                "watchId": "w1",
                "watchName": "payments",
                "status": "open",
                "openedAt": "2026-11-20T08:00:00Z",
            },
        ],
        "mttrHours": 5.25,
        "mttrResolved": 3,
        "mttrByVendor": [{"vendor": "stripe", "hours": 7.5, "resolved": 2}],
        "hotspots": [
            {
                "watchId": "w1",
                "name": "payments",
                "vendor": "stripe",
                "breakingCount30d": 9,
                "lastDriftAt": "2026-11-24T08:00:00Z",
            },
        ],
        "watches": 12,
    }
    data.update(overrides)
    return compose.WeeklyFigures.model_validate(data)


@pytest.mark.parametrize(
    ("weekday", "hour", "due"),
    [
        ("monday", 8, True),
        ("wednesday", 10, True),  # the slot's own hour has come
        ("wednesday", 11, False),
        ("sunday", 0, False),
    ],
)
def test_a_summary_is_due_from_its_slot_to_the_end_of_the_week(
    weekday: schedule.Weekday, hour: int, due: bool
) -> None:
    opted = schedule.WeeklySummaryOut(
        enabled=True, recipients=["a@example.com"], weekday=weekday, hour_utc=hour
    )
    assert schedule.is_due(opted, NOW) is due
    assert schedule.is_due(opted.model_copy(update={"enabled": False}), NOW) is False
    assert schedule.is_due(opted.model_copy(update={"recipients": []}), NOW) is False


def test_the_period_is_the_iso_week() -> None:
    assert schedule.iso_week(NOW) == "2026-W48"
    # The ISO year: 1 January 2027 is a Friday of 2026's week 53.
    assert schedule.iso_week(datetime(2027, 1, 1, tzinfo=UTC)) == "2026-W53"
    assert schedule.iso_week(datetime(2027, 1, 4, tzinfo=UTC)) == "2027-W01"
    assert schedule.slot(NOW, "monday", 8) == datetime(2026, 11, 23, 8, tzinfo=UTC)
    assert schedule.slot(NOW, "sunday", 23) == datetime(2026, 11, 29, 23, tzinfo=UTC)


@pytest.mark.parametrize(
    ("recipients", "problem"),
    [
        (["not-an-address"], "pattern"),
        (["a@example.com\r\nBcc: b@example.com"], "pattern"),
        (["Alice <a@example.com>"], "pattern"),
        ([f"r{i}@example.com" for i in range(21)], "at most 20"),
    ],
)
def test_recipients_are_plain_distinct_addresses(recipients: list[str], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        schedule.WeeklySummaryIn.model_validate({"enabled": True, "recipients": recipients})


def test_an_address_listed_twice_is_found_without_case() -> None:
    assert schedule.listed_twice(["a@example.com", "b@example.com", "A@Example.com"]) == (
        "A@Example.com"
    )
    assert schedule.listed_twice(["a@example.com", "b@example.com"]) is None


def test_the_message_has_both_parts_and_one_click_unsubscribe() -> None:
    url = "https://driftgate.example.com/api/summary/unsubscribe?token=abc"
    mail = compose.message(
        figures(),
        sender="driftgate@example.com",
        recipient="lead@example.com",
        unsubscribe_url=url,
        message_id="msg_1",
        now=NOW,
    )
    assert mail["Subject"] == (
        "driftgate weekly summary for acme, 2026-W48: 2 breaking drift events"
    )
    assert mail["To"] == "lead@example.com" and mail["From"] == "driftgate@example.com"
    assert mail["List-Unsubscribe"] == f"<{url}>"
    assert mail["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert mail.get_content_type() == "multipart/alternative"
    text = mail.get_body(preferencelist=("plain",))
    html = mail.get_body(preferencelist=("html",))
    assert text is not None and html is not None
    plain, markup = text.get_content(), html.get_content()
    assert "2 breaking, 1 warning, 4 info (7 events)" in plain
    assert "5 h 15 min on average over 3 incidents" in plain
    assert "payments (stripe): 9 breaking" in plain
    assert url in plain and f'href="{url}"' in markup
    # A watch's name is the vendor's text: escaped in HTML, as it is in text.
    assert "<script>alert(1)</script>" in plain
    assert "<script>" not in markup and "&lt;script&gt;alert(1)&lt;/script&gt;" in markup


def test_a_quiet_week_says_so() -> None:
    quiet = figures(
        drift={"breaking": 0, "warning": 0, "info": 0},
        driftedWatches=[],
        incidents=[],
        openIncidents=0,
        mttrHours=None,
        mttrResolved=0,
        mttrByVendor=[],
        hotspots=[],
    )
    assert compose.subject(quiet).endswith(": no breaking drift")
    plain = compose.render_text(quiet, "https://x.example/u")
    assert "no incident was resolved" in plain and "none" in plain


def test_an_unsubscribe_token_names_one_recipient_and_cannot_be_forged() -> None:
    box = SecretBox(["a-test-key-of-sixteen-or-more"])
    token = service.unsubscribe_token(box, "org-1", "Lead@Example.com")
    assert service.unsubscribe_target(box, token) == "l…@example.com"
    other = SecretBox(["another-key-of-sixteen-chars"])
    for forged in (
        token[:-2] + ("AA" if not token.endswith("AA") else "BB"),
        service.unsubscribe_token(other, "org-1", "lead@example.com"),
        "",
        "not base64 !",
    ):
        with pytest.raises(NotFound):
            service.unsubscribe_target(box, forged)
    # Signed for another purpose (a draft-PR install state): not an unsubscribe link.
    with pytest.raises(NotFound):
        service.unsubscribe_target(box, box.sign("draftpr install state", b"org-1\nx@y.z"))
