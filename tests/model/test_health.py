"""Watch health bands and the status a resumed watch returns to (pure rules)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from controller.model.watch import compute_health, resumed_status

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def test_health_bands() -> None:
    never = compute_health(status="never_run", last_checked_at=None, interval_minutes=15, now=NOW)
    assert never.band == "degraded" and never.minutes_since_last_check is None
    fresh = compute_health(
        status="drifted", last_checked_at=NOW - timedelta(minutes=10), interval_minutes=15, now=NOW
    )
    assert (
        fresh.band == "healthy"
        and not fresh.is_stale_check
        and fresh.minutes_since_last_check == 10
    )
    # Twice the interval plus the grace (two minutes): late is not yet stale, beyond it is.
    late = compute_health(
        status="ok", last_checked_at=NOW - timedelta(minutes=31), interval_minutes=15, now=NOW
    )
    assert late.band == "healthy" and not late.is_stale_check
    stale = compute_health(
        status="ok", last_checked_at=NOW - timedelta(minutes=33), interval_minutes=15, now=NOW
    )
    assert stale.band == "degraded" and stale.is_stale_check
    # A watch that never completed a check is `never_checked`, not stale.
    unchecked = compute_health(
        status="never_run", last_checked_at=NOW - timedelta(days=2), interval_minutes=15, now=NOW
    )
    assert unchecked.band == "degraded" and not unchecked.is_stale_check
    failing = compute_health(status="error", last_checked_at=NOW, interval_minutes=15, now=NOW)
    assert failing.band == "degraded"
    paused = compute_health(
        status="disabled", last_checked_at=NOW - timedelta(days=2), interval_minutes=15, now=NOW
    )
    assert paused.band == "unknown" and not paused.is_stale_check


def test_resumed_status() -> None:
    assert (
        resumed_status(has_baseline=False, last_check_status=None, open_breaking=0) == "never_run"
    )
    assert resumed_status(has_baseline=False, last_check_status="error", open_breaking=0) == "error"
    assert resumed_status(has_baseline=True, last_check_status="ok", open_breaking=0) == "ok"
    assert resumed_status(has_baseline=True, last_check_status="ok", open_breaking=3) == "drifted"
