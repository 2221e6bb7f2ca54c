"""The pytest plugin shipped with driftgate (entry point `driftgate` in `pytest11`): the
`driftgate_replay` fixture serves replay fixture directories on 127.0.0.1 for a test.

    def test_agent_survives_the_drift(driftgate_replay):
        url = driftgate_replay("fixtures/payments-drift")  # http://127.0.0.1:PORT[/mcp]
        assert my_agent(base_url=url).run("refund the last charge").ok

A relative directory is read from the pytest root directory. Each server runs for the test
that asked for it and stops after it. See docs/replay.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def driftgate_replay(request: pytest.FixtureRequest) -> Iterator[Callable[[str | Path], str]]:
    """Start `driftgate replay serve` for a fixture directory; the URL of its server (the
    MCP endpoint for MCP fixtures, the API root for OpenAPI ones)."""
    # Imported when used: the plugin loads in every pytest run of an environment with driftgate.
    from controller.replay.serve import ReplayServer, load

    servers: list[Any] = []

    def start(directory: str | Path) -> str:
        path = Path(directory)
        if not path.is_absolute():
            path = request.config.rootpath / path
        server = ReplayServer(load(path))
        server.start()
        servers.append(server)
        return server.url

    yield start
    for server in servers:
        server.stop()
