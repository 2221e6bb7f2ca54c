"""The run gate's world (a git source with an agent and its approval rule, a controller, a
loopback vendor) for the tool server's tests."""

from tests.gate.conftest import build  # noqa: F401 - the fixture
