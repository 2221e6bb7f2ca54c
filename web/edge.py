"""What every request passes on its way in and out, for the Flask app's hooks and the run
gate's lane (`web.fastlane`) alike: the correlation id, the refusal of default HTTP-library
User-Agents, and the `http.request` log line."""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from controller.logs import log
from controller.settings import Settings
from controller.store.models import request_id

logger = logging.getLogger("driftgate.web")
# The WSGI environ key of the time (monotonic) a request arrived whole, set by the server front
# (`web.front`); a request without it (another WSGI server, the test client) starts its
# deadline when the app first sees it.
ARRIVED_ENVIRON = "driftgate.arrived"
_CORRELATION = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
# Default user agents of HTTP libraries; refused with code 1010 when the edge rule is on.
_DEFAULT_AGENTS = re.compile(
    r"^(python-requests|python-httpx|python-urllib|aiohttp|go-http-client|node-fetch|axios|okhttp|java/|libwww-perl)",
    re.IGNORECASE,
)


def correlation_id(incoming: str) -> str:
    """The caller's correlation id when it is well formed, else a new one."""
    return incoming if _CORRELATION.match(incoming) else request_id()


def refused_user_agent(settings: Settings, path: str, agent: str) -> bool:
    """True when the edge rule refuses this User-Agent here (never on `/health`)."""
    return (
        settings.refuse_default_user_agents
        and not path.startswith("/health")
        and _DEFAULT_AGENTS.match(agent) is not None
    )


def access_log(
    method: str,
    path: str,
    status: int,
    started: float,
    correlation: str,
    *,
    org: str | None,
    source: str | None,
) -> None:
    """The `http.request` line of one answered request."""
    if not logger.isEnabledFor(logging.INFO):
        return
    fields: dict[str, Any] = {
        "method": method,
        "path": path,
        "status": status,
        "durationMs": round((time.perf_counter() - started) * 1000, 2),
        "correlationId": correlation,
    }
    if org:
        fields["org"] = org
    if source:
        fields["source"] = source[:100]
    log(logger, logging.INFO, "http.request", **fields)
