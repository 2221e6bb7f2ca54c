"""An in-process token bucket per (limit name, client) for public endpoints.

Each gunicorn worker keeps its own buckets, so the effective limit is per worker; that is
enough to stop a single client from flooding an unauthenticated route. A client is its
address as the app sees it (behind a trusted proxy, the address the proxy saw:
`trusted_proxy_hops`), counted as `controller.model.clients.client_key` says (an IPv6
client by its /64), so one noisy client empties its own bucket and no one else's. The table
holds at most `MAX_KEYS` buckets; beyond that the least recently used go first (a bucket idle
that long has refilled, or nearly: dropping it changes little), never the busy ones.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from controller.errors import TooManyRequests
from controller.model.clients import client_key


class RateLimiter:
    MAX_KEYS = 10_000

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock  # seconds; tests set a fixed one
        self._lock = threading.Lock()
        # (name, client) -> (tokens, when they were counted), least recently used first.
        self._buckets: OrderedDict[tuple[str, str], tuple[float, float]] = OrderedDict()

    def hit(self, name: str, client: str, *, per_minute: int, burst: int) -> None:
        """Take one token or raise 429 with the seconds to wait."""
        now = self.clock()
        rate = per_minute / 60.0
        key = (name, client_key(client))
        with self._lock:
            tokens, last = self._buckets.get(key, (float(burst), now))
            tokens = min(float(burst), tokens + (now - last) * rate)
            if tokens < 1.0:
                self._buckets.move_to_end(key)  # a client refused now is still busy
                wait = max(1, int((1.0 - tokens) / rate) + 1)
                raise TooManyRequests(
                    f"too many requests to {name}; retry in {wait} s", details={"retryAfter": wait}
                )
            self._buckets[key] = (tokens - 1.0, now)
            self._buckets.move_to_end(key)
            while len(self._buckets) > self.MAX_KEYS:
                self._buckets.popitem(last=False)
