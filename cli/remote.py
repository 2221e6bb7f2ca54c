"""What the commands that talk to a running server share: the server options, one client
with API errors turned into exit code 2, and output as a table for people or the server's JSON."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from cli import api, style
from cli.common import fail, format_option, options

if TYPE_CHECKING:
    import httpx

output_format = format_option(
    "text", "json", help="text: a table for people; json: the server's answer."
)
server_command = options(api.server_options, output_format)


@contextmanager
def server(url: str | None, key: str | None) -> Iterator[httpx.Client]:
    """A client of the server; any API error ends the command with exit code 2."""
    try:
        with api.client(url, key) as http:
            yield http
    except api.ApiError as exc:
        fail(str(exc))


def emit(document: Any, output_format: str, text: Callable[[Any], Sequence[str]]) -> None:
    if output_format == "json":
        click.echo(json.dumps(document, indent=2))
        return
    for line in text(document):
        click.echo(line)


def table(
    rows: Sequence[Sequence[str]],
    header: Sequence[str],
    painters: Mapping[int, Callable[[str], str]] | None = None,
) -> list[str]:
    """Aligned columns under a header; `painters` colour the cells of some columns (by index)
    on a terminal (`cli.style`), after the widths are measured on the plain text."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    painters = painters if painters and style.enabled() else {}

    def cell(i: int, value: str, header_row: bool) -> str:
        shown = value if header_row or i not in painters else painters[i](value)
        return shown + " " * (widths[i] - len(value))

    return [
        "  ".join(cell(i, str(value), row is header) for i, value in enumerate(row)).rstrip()
        for row in [header, *rows]
    ]
