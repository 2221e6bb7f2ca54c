"""Colour for a person at a terminal: severities (breaking, warning, info) and statuses (ok,
drifted, error, an incident's, a preflight verdict, a source's readiness) stand out.

Colour only where a person reads it: stdout (or stderr) is a terminal, `NO_COLOR` is unset or
empty (https://no-color.org) and `TERM` is not `dumb`. Piped or redirected output, and every
machine format (json, sarif, junit, markdown, github), carries no escape codes: the commands
colour their text forms only, through `paint`.
"""

from __future__ import annotations

import os
import re
import sys

import click

# The colour of each token, whatever kind of thing it is the state of.
COLOURS = {
    # severities
    "breaking": "red",
    "warning": "yellow",
    "info": "cyan",
    # a watch's driftStatus
    "ok": "green",
    "drifted": "red",
    "error": "magenta",
    "never_run": "bright_black",
    "disabled": "bright_black",
    # an incident
    "open": "red",
    "acknowledged": "yellow",
    "resolved": "green",
    # a preflight verdict, a gate
    "allowed": "green",
    "blocked": "red",
    "pass": "green",
    "fail": "red",
    # a source's readiness (its Ready condition's reason)
    "succeeded": "green",
    "validationfailed": "red",
    "reconciliationfailed": "red",
    "suspended": "bright_black",
    "notreconciled": "yellow",
}


def enabled(err: bool = False) -> bool:
    """Whether text written to stdout (stderr with `err`) may carry colour."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    stream = sys.stderr if err else sys.stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


def paint(text: str, token: str | None = None, *, on: bool | None = None) -> str:
    """`text` in the colour of `token` (default: `text` itself, e.g. "drifted"), when colour
    is `on` (default: `enabled()`); else `text` as it is."""
    colour = COLOURS.get((token if token is not None else text).strip().lower())
    if colour is None or not (enabled() if on is None else on):
        return text
    return click.style(text, fg=colour, bold=True if colour == "red" else None)


_COUNT = re.compile(r"\b([1-9][0-9]*) (breaking|warning|info)\b")


def counts(text: str, *, on: bool | None = None) -> str:
    """`1 breaking, 2 warning, 0 info` with each count that is not 0 in its severity's
    colour."""
    if not (enabled() if on is None else on):
        return text
    return _COUNT.sub(lambda m: paint(m.group(0), m.group(2), on=True), text)


_REPORT_LABEL = re.compile(r"^(\s+)(BREAKING|WARNING|INFO)(?=\s)")
_VERDICT = re.compile(r"^(PASS|FAIL)(?= \(--fail-on )")


def report_line(line: str, *, on: bool | None = None) -> str:
    """A line of the text diff report with its severity label or its verdict coloured."""
    if not (enabled() if on is None else on):
        return line
    line = _REPORT_LABEL.sub(lambda m: m.group(1) + paint(m.group(2), on=True), line)
    return _VERDICT.sub(lambda m: paint(m.group(1), on=True), line)
