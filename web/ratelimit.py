"""An in-process token bucket per (limit name, client) for public endpoints.

Each gunicorn worker keeps its own buckets, so the effective limit is per worker; that is
enough to stop a single client from flooding an unauthenticated route.
"""

from __future__ import annotations

import threading
import time

from controller.errors import RequestError


class RateLimited(RequestError):
    code = "rate_limited"
    status = 429


class RateLimiter:
    MAX_KEYS = 10_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, str], tuple[float, float]] = {}

    def hit(self, name: str, client: str, *, per_minute: int, burst: int) -> None:
        """Take one token or raise 429 with the seconds to wait."""
        now = time.monotonic()
        rate = per_minute / 60.0
        with self._lock:
            if len(self._buckets) > self.MAX_KEYS:
                self._buckets.clear()
            tokens, last = self._buckets.get((name, client), (float(burst), now))
            tokens = min(float(burst), tokens + (now - last) * rate)
            if tokens < 1.0:
                wait = max(1, int((1.0 - tokens) / rate) + 1)
                raise RateLimited(
                    f"too many requests to {name}; retry in {wait} s", details={"retryAfter": wait}
                )
            self._buckets[(name, client)] = (tokens - 1.0, now)
