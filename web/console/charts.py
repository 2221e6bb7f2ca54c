"""Charts of the console as SVG, drawn on the server (no script, no chart library).

Each function takes plain figures and returns SVG markup whose every text is escaped; bars
carry a `<title>` (read by screen readers and shown on hover) with their exact figure and
its unit. Text sizes come from console.css (`.chart text`), which draws them larger on a
phone, where the drawing is scaled down to the screen.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from web.console import timefmt

SEVERITY_COLOURS = {"breaking": "#b42318", "warning": "#b54708", "info": "#175cd3"}


def stacked_weeks(weeks: list[dict[str, object]], *, width: int = 640, height: int = 220) -> str:
    """Drift events by week, stacked by severity (breaking at the bottom). Every other week
    is labelled counting back from the latest, so the latest always is; on a phone, where
    the labels are drawn larger, every fourth (the `minor` ones hide)."""
    pad_left, pad_bottom, pad_top = 48, 34, 26
    plot_w, plot_h = width - pad_left - 8, height - pad_bottom - pad_top
    totals = [sum(int(w.get(s, 0) or 0) for s in SEVERITY_COLOURS) for w in weeks]  # type: ignore[call-overload]
    top = max([*totals, 1])
    step = plot_w / max(len(weeks), 1)
    bar = max(step * 0.7, 1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="Drift events by week, stacked by severity" class="chart">',
        '<text x="0" y="14" class="axis">drift events per week</text>',
        f'<line x1="{pad_left}" y1="{pad_top + plot_h}" x2="{width - 8}" '
        f'y2="{pad_top + plot_h}" stroke="#8c959f"/>',
        f'<text x="{pad_left - 6}" y="{pad_top + 8}" text-anchor="end">{top}</text>',
        f'<text x="{pad_left - 6}" y="{pad_top + plot_h}" text-anchor="end">0</text>',
    ]
    for index, week in enumerate(weeks):
        x = pad_left + index * step + (step - bar) / 2
        y = pad_top + plot_h
        start = escape(str(week.get("weekStart", "")))
        for severity, colour in SEVERITY_COLOURS.items():
            count = int(week.get(severity, 0) or 0)  # type: ignore[call-overload]
            if not count:
                continue
            h = plot_h * count / top
            y -= h
            label = f"week of {start}: {count} {severity} drift event{'s' if count != 1 else ''}"
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                f'fill="{colour}"><title>{label}</title></rect>'
            )
        back = len(weeks) - 1 - index  # 0 for the latest week
        if back % 2 == 0:
            minor = ' class="minor"' if back % 4 else ""
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{height - 10}" text-anchor="middle"{minor}>'
                f"{start[5:]}</text>"
            )
    parts.append("</svg>")
    return "".join(parts)


def bars(
    rows: list[tuple[str, float]],
    *,
    unit: str,
    width: int = 640,
    shown: Callable[[float], str] | None = None,
) -> str:
    """Horizontal bars, one row each (MTTR by vendor, coverage by type ...); `shown` writes
    a figure with its unit (default: the number and `unit`)."""
    write = shown or (lambda value: f"{value:g} {unit}")
    row_h, label_w, value_w = 30, 200, 130
    height = max(len(rows), 1) * row_h + 8
    top = max([value for _, value in rows] + [1e-9])
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(unit)}" class="chart">'
    ]
    for index, (label, value) in enumerate(rows):
        y = 4 + index * row_h
        w = (width - label_w - value_w) * value / top
        full = escape(label or "(none)")
        text = escape(_short(label or "(none)"))
        figure = escape(write(value))
        parts.append(
            f'<text x="{label_w - 8}" y="{y + 20}" text-anchor="end">{text}<title>{full}</title>'
            f"</text>"
            f'<rect x="{label_w}" y="{y + 4}" width="{max(w, 1):.1f}" height="{row_h - 10}" '
            f'fill="#175cd3"><title>{full}: {figure}</title></rect>'
            f'<text x="{label_w + w + 6:.1f}" y="{y + 20}">{figure}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def durations(rows: list[tuple[str, float]]) -> str:
    """Bars of durations given in hours (MTTR by vendor), written in human units."""
    return bars(rows, unit="mean time to repair", shown=timefmt.hours)


def _short(label: str, most: int = 14) -> str:
    """A label cut to fit its column (the whole one is in the title)."""
    return label if len(label) <= most else label[: most - 1] + "…"


STATUS_COLOURS = {
    "ok": "#1a7f37",
    "drifted": "#b42318",
    "error": "#9a4d00",
    "paused": "#8c959f",
    "never_run": "#57606a",
}


def coverage(rows: list[dict[str, object]], *, width: int = 640) -> str:
    """The coverage map: one bar per vendor, split by drift status."""
    row_h, label_w, value_w = 30, 200, 130
    height = max(len(rows), 1) * row_h + 8
    top = max([int(r.get("watches", 0) or 0) for r in rows] + [1])  # type: ignore[call-overload]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="Watches by vendor, split by drift status" class="chart">'
    ]
    for index, row in enumerate(rows):
        y = 4 + index * row_h
        label = escape(str(row.get("key") or "(none)"))
        short = escape(_short(str(row.get("key") or "(none)")))
        parts.append(
            f'<text x="{label_w - 8}" y="{y + 20}" text-anchor="end">{short}'
            f"<title>{label}</title></text>"
        )
        x = float(label_w)
        statuses: dict[str, int] = row.get("byDriftStatus") or {}  # type: ignore[assignment]
        for status, count in sorted(
            statuses.items(),
            key=lambda kv: list(STATUS_COLOURS).index(kv[0]) if kv[0] in STATUS_COLOURS else 99,
        ):
            w = (width - label_w - value_w) * int(count) / top
            colour = STATUS_COLOURS.get(status, "#57606a")
            parts.append(
                f'<rect x="{x:.1f}" y="{y + 4}" width="{max(w, 1):.1f}" height="{row_h - 10}" '
                f'fill="{colour}"><title>{label}: {int(count)} {escape(status)}</title></rect>'
            )
            x += w
        total = int(row.get("watches", 0) or 0)  # type: ignore[call-overload]
        noun = "watch" if total == 1 else "watches"
        parts.append(f'<text x="{x + 6:.1f}" y="{y + 20}">{total} {noun}</text>')
    parts.append("</svg>")
    return "".join(parts)
