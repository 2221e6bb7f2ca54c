"""Fixtures of the CLI tests: the app served on loopback for commands that call the API."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from flask import Flask

from tests.servers import WsgiServer, serving


@pytest.fixture
def api_server(app: Flask, monkeypatch: pytest.MonkeyPatch) -> Iterator[WsgiServer]:
    """conftest's app on a loopback port. CliRunner swaps the process's stderr while a command
    runs; the server thread's log lines stay out of the command's output."""
    monkeypatch.setattr(logging.getLogger("driftgate"), "handlers", [logging.NullHandler()])
    with serving(app) as running:
        yield running
