"""How driftgate writes a duration for people: `9.6 s`, `36 s`, `4 min`, `2 h 5 min`, `3 d 4 h`.

One pure function for every surface that shows a span of time (the console's pages, the Ask
answers, the weekly e-mail): a repair that took 9.6 s never reads `0 s` or `0.0 h`.
"""

from __future__ import annotations

NONE = "–"


def duration(seconds: float | None, default: str = NONE) -> str:
    """A span in the two largest units that matter: `9.6 s` (tenths under 10 s), `36 s`,
    `4 min`, `2 h 5 min`, `3 d 4 h`. Never `0 s` for a span that lasted."""
    if seconds is None:
        return default
    seconds = max(seconds, 0)
    if seconds < 9.95:
        return f"{round(seconds, 1):g} s" if seconds >= 0.05 or seconds == 0 else "under 0.1 s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes = round(whole / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def hours(value: float | None, default: str = NONE) -> str:
    """A duration given in hours (MTTR figures), in the units of `duration`."""
    return duration(value * 3600, default) if value is not None else default
