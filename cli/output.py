"""How every command prints what it found: an aligned table under a header row for people,
or JSON for programs (`--format json`), from one document, so that the two forms always
carry the same things and a command that prints its text form can print its JSON.

Remote commands pass the server's answer as the document; commands that read the store here
build theirs from the rows they read. The table's cells are plain text measured before any
colour is added (`cli.style`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import click

from cli import style
from cli.common import format_option

output_format = format_option(
    "text", "json", help="text: a table for people; json: the same answer as a JSON document."
)


def emit(document: Any, output_format: str, text: Callable[[Any], Sequence[str]]) -> None:
    """`document` as indented JSON, or the lines `text(document)` makes of it."""
    if output_format == "json":
        click.echo(json.dumps(document, indent=2, default=str))
        return
    for line in text(document):
        click.echo(line)


def table(
    rows: Sequence[Sequence[Any]],
    header: Sequence[str],
    painters: Mapping[int, Callable[[str], str]] | None = None,
) -> list[str]:
    """Aligned columns under a header; `painters` colour the cells of some columns (by index)
    on a terminal (`cli.style`), after the widths are measured on the plain text. The header
    is printed even when there are no rows, so an empty answer still says what it lists."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    painters = painters if painters and style.enabled() else {}

    def cell(i: int, value: str, header_row: bool) -> str:
        shown = value if header_row or i not in painters else painters[i](value)
        return shown + " " * (widths[i] - len(value))

    return [
        "  ".join(cell(i, str(value), row is header) for i, value in enumerate(row)).rstrip()
        for row in [header, *rows]
    ]


def when(value: Any) -> str:
    """A timestamp as ISO 8601 to the second, or `never`."""
    if value is None:
        return "never"
    isoformat = getattr(value, "isoformat", None)
    return str(isoformat(timespec="seconds")) if isoformat else str(value)
