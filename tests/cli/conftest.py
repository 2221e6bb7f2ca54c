"""Fixtures of the CLI tests: the app served on loopback for commands that call the API, and a
command run against it."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result
from flask import Flask

from cli.main import main
from tests.servers import WsgiServer, serving


@pytest.fixture
def api_server(live_app: Flask, monkeypatch: pytest.MonkeyPatch) -> Iterator[WsgiServer]:
    """conftest's live app (checks may reach loopback vendors) on a loopback port. CliRunner
    swaps the process's stdout and stderr while a command runs; the server thread's log lines
    stay out of the command's output."""
    monkeypatch.setattr(logging.getLogger("driftgate"), "handlers", [logging.NullHandler()])
    with serving(live_app) as running:
        yield running


def cli(base: str | None, key: str | None, *args: str) -> Result:
    """`driftgate ARGS...` against the API at `base` with `key`, and no config file."""
    env = {"DRIFTGATE_URL": base, "DRIFTGATE_API_KEY": key, "DRIFTGATE_CONFIG": None}
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
