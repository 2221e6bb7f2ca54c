"""What the commands that talk to a running server share: the server options, one client
with API errors turned into exit code 2; output goes through `cli.output` (a table for
people or the server's JSON)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from cli import api
from cli.common import fail, options
from cli.output import output_format

if TYPE_CHECKING:
    import httpx

server_command = options(api.server_options, output_format)


@contextmanager
def server(url: str | None, key: str | None) -> Iterator[httpx.Client]:
    """A client of the server; any API error ends the command with exit code 2."""
    try:
        with api.client(url, key) as http:
            yield http
    except api.ApiError as exc:
        fail(str(exc))
