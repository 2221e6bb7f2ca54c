"""Charts of the console as SVG, drawn on the server (no script, no chart library).

Each function takes plain figures and returns SVG markup whose every text is escaped; bars
carry a `<title>` (read by screen readers and shown on hover) with their exact figure.
"""

from __future__ import annotations

from html import escape

SEVERITY_COLOURS = {"breaking": "#b42318", "warning": "#b54708", "info": "#175cd3"}


def stacked_weeks(weeks: list[dict[str, object]], *, width: int = 640, height: int = 200) -> str:
    """Drift events by week, stacked by severity (breaking at the bottom)."""
    pad_left, pad_bottom, pad_top = 36, 28, 10
    plot_w, plot_h = width - pad_left - 8, height - pad_bottom - pad_top
    totals = [sum(int(w.get(s, 0) or 0) for s in SEVERITY_COLOURS) for w in weeks]  # type: ignore[call-overload]
    top = max([*totals, 1])
    step = plot_w / max(len(weeks), 1)
    bar = max(step * 0.7, 1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="Drift events by week, stacked by severity" class="chart">',
        f'<line x1="{pad_left}" y1="{pad_top + plot_h}" x2="{width - 8}" '
        f'y2="{pad_top + plot_h}" stroke="#8c959f"/>',
        f'<text x="{pad_left - 6}" y="{pad_top + 8}" text-anchor="end" font-size="11">{top}</text>',
        f'<text x="{pad_left - 6}" y="{pad_top + plot_h}" text-anchor="end" '
        f'font-size="11">0</text>',
    ]
    for index, week in enumerate(weeks):
        x = pad_left + index * step + (step - bar) / 2
        y = pad_top + plot_h
        for severity, colour in SEVERITY_COLOURS.items():
            count = int(week.get(severity, 0) or 0)  # type: ignore[call-overload]
            if not count:
                continue
            h = plot_h * count / top
            y -= h
            label = f"{escape(str(week.get('weekStart', '')))}: {count} {severity}"
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                f'fill="{colour}"><title>{label}</title></rect>'
            )
        if index % 2 == 0:
            day = escape(str(week.get("weekStart", ""))[5:])
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{height - 8}" text-anchor="middle" '
                f'font-size="10">{day}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def bars(rows: list[tuple[str, float]], *, unit: str, width: int = 640) -> str:
    """Horizontal bars, one row each (MTTR by vendor, coverage by type ...)."""
    row_h, label_w = 22, 160
    height = max(len(rows), 1) * row_h + 8
    top = max([value for _, value in rows] + [1e-9])
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(unit)}" class="chart">'
    ]
    for index, (label, value) in enumerate(rows):
        y = 4 + index * row_h
        w = (width - label_w - 80) * value / top
        text = escape(label or "(none)")
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" font-size="12">{text}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{max(w, 1):.1f}" height="{row_h - 8}" '
            f'fill="#175cd3"><title>{text}: {value:g} {escape(unit)}</title></rect>'
            f'<text x="{label_w + w + 6:.1f}" y="{y + 15}" font-size="12">{value:g}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


STATUS_COLOURS = {
    "ok": "#1a7f37",
    "drifted": "#b42318",
    "error": "#9a4d00",
    "paused": "#8c959f",
    "never_run": "#57606a",
}


def coverage(rows: list[dict[str, object]], *, width: int = 640) -> str:
    """The coverage map: one bar per vendor, split by drift status."""
    row_h, label_w = 22, 160
    height = max(len(rows), 1) * row_h + 8
    top = max([int(r.get("watches", 0) or 0) for r in rows] + [1])  # type: ignore[call-overload]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="Watches by vendor, split by drift status" class="chart">'
    ]
    for index, row in enumerate(rows):
        y = 4 + index * row_h
        label = escape(str(row.get("key") or "(none)"))
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" font-size="12">{label}</text>'
        )
        x = float(label_w)
        statuses: dict[str, int] = row.get("byDriftStatus") or {}  # type: ignore[assignment]
        for status, count in sorted(
            statuses.items(),
            key=lambda kv: list(STATUS_COLOURS).index(kv[0]) if kv[0] in STATUS_COLOURS else 99,
        ):
            w = (width - label_w - 60) * int(count) / top
            colour = STATUS_COLOURS.get(status, "#57606a")
            parts.append(
                f'<rect x="{x:.1f}" y="{y + 3}" width="{max(w, 1):.1f}" height="{row_h - 8}" '
                f'fill="{colour}"><title>{label}: {int(count)} {escape(status)}</title></rect>'
            )
            x += w
        total = int(row.get("watches", 0) or 0)  # type: ignore[call-overload]
        parts.append(f'<text x="{x + 6:.1f}" y="{y + 15}" font-size="12">{total}</text>')
    parts.append("</svg>")
    return "".join(parts)
