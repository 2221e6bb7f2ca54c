"""The console's time formats (`web/console/timefmt.py`) and the other small writers of the
console: destination URLs, the favicon, chart labels."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from flask.testing import FlaskClient

from web.console import charts, timefmt
from web.console.settings import shown_url

NOW = datetime(2026, 11, 26, 14, 13, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "0 s"),
        (0.01, "under 0.1 s"),
        (3, "3 s"),
        (9.6, "9.6 s"),
        (9.96, "10 s"),
        (36, "36 s"),
        (36.4, "36 s"),
        (240, "4 min"),
        (3599, "1 h"),
        (7500, "2 h 5 min"),
        (7200, "2 h"),
        (0.01 * 3600, "36 s"),
        (26 * 3600 + 60, "1 d 2 h"),
        (None, "–"),
    ],
)
def test_durations_are_in_human_units(seconds: float | None, shown: str) -> None:
    assert timefmt.duration(seconds) == shown


def test_hours_are_durations() -> None:
    # An MTTR of 9.6 s is 0.00266 h: never "0 s" (the API's hours are rounded to 0.01; the
    # console reads them unrounded).
    assert timefmt.hours(9.6 / 3600) == "9.6 s"
    assert timefmt.hours(0.01) == "36 s"
    assert timefmt.hours(2 + 5 / 60) == "2 h 5 min"
    assert timefmt.hours(None) == "–"


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2026, 11, 26, 14, 10, 59, tzinfo=UTC),
        datetime(2026, 11, 26, 14, 10),  # naive: UTC, as SQLite gives it back
        "2026-11-26T14:10:17.177634Z",
        datetime(2026, 11, 26, 15, 10, tzinfo=timezone(timedelta(hours=1))),
    ],
)
def test_one_absolute_form_with_its_zone(moment: datetime | str) -> None:
    assert timefmt.absolute(moment) == "2026-11-26 14:10 UTC"


@pytest.mark.parametrize(
    ("ago", "shown"),
    [
        (timedelta(seconds=2), "just now"),
        (timedelta(seconds=36), "36 s ago"),
        (timedelta(minutes=3), "3 min ago"),
        (timedelta(hours=2, minutes=10), "2 h ago"),
        (timedelta(days=3), "3 d ago"),
        (timedelta(minutes=-5), "in 5 min"),
    ],
)
def test_relative_times(ago: timedelta, shown: str) -> None:
    assert timefmt.relative(NOW - ago, NOW) == shown


def test_a_time_tag_reads_relative_with_the_absolute_in_its_title() -> None:
    tag = str(timefmt.time_tag(NOW - timedelta(minutes=3), NOW))
    assert tag == (
        '<time datetime="2026-11-26T14:10:00+00:00" title="2026-11-26 14:10 UTC">3 min ago</time>'
    )
    assert str(timefmt.time_tag(None, NOW, "invited")) == "invited"
    assert timefmt.absolute(None) == "never" and timefmt.relative("", NOW) == "never"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://127.0.0.1:8123/hooks/driftgate", "http://127.0.0.1:8123/hooks/driftgate"),
        (
            "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX",
            "https://hooks.slack.com:443/services/T0000/B0000/XXXX…",
        ),
        ("https://user:secret@example.com/h?token=abc", "https://example.com:443/h?…"),
    ],
)
def test_a_destination_shows_port_and_path_not_its_secrets(url: str, shown: str) -> None:
    assert shown_url(url) == shown


def test_charts_say_their_units_and_label_the_latest_week() -> None:
    weeks = [{"weekStart": f"2026-11-{d:02d}", "breaking": 1, "warning": 2} for d in range(1, 7)]
    drawn = charts.stacked_weeks(weeks)
    assert "drift events per week" in drawn and ">11-06</text>" in drawn
    assert "week of 2026-11-06: 2 warning drift events" in drawn
    mttr = charts.durations([("api.stripe.com", 0.01), ("github", 2 + 5 / 60)])
    assert ">36 s</text>" in mttr and ">2 h 5 min</text>" in mttr and " h</text>" not in mttr


def test_no_page_asks_for_a_missing_icon(client: FlaskClient) -> None:
    sign_in = client.get("/console/sign-in").get_data(as_text=True)
    assert 'rel="icon" type="image/svg+xml" href="/console/static/favicon.svg"' in sign_in
    with client.get("/console/static/favicon.svg") as icon:
        assert icon.status_code == 200 and icon.mimetype == "image/svg+xml"
    assert client.get("/favicon.ico").status_code == 301
