"""The public routes' token buckets (`web.ratelimit`): per client, with a fixed clock."""

from __future__ import annotations

import pytest

from controller.errors import TooManyRequests
from web.ratelimit import RateLimiter


def limiter_at(now: list[float]) -> RateLimiter:
    return RateLimiter(clock=lambda: now[0])


def taken(limiter: RateLimiter, client: str, times: int, burst: int = 3) -> list[bool]:
    """For each of `times` hits, whether it was let through."""
    results = []
    for _ in range(times):
        try:
            limiter.hit("trial", client, per_minute=60, burst=burst)
        except TooManyRequests as exc:
            assert exc.status == 429 and exc.details["retryAfter"] >= 1
            results.append(False)
        else:
            results.append(True)
    return results


def test_a_bucket_is_per_client_and_refills_with_time() -> None:
    now = [100.0]
    limiter = limiter_at(now)
    assert taken(limiter, "192.0.2.1", 4) == [True, True, True, False]
    assert taken(limiter, "192.0.2.2", 1) == [True]
    now[0] += 1.0  # one token a second
    assert taken(limiter, "192.0.2.1", 2) == [True, False]


def test_an_ipv6_client_is_its_64_whatever_address_it_picks() -> None:
    limiter = limiter_at([100.0])
    picks = [f"2001:db8:1:2::{n:x}" for n in range(4)]
    assert [taken(limiter, address, 1)[0] for address in picks] == [True, True, True, False]
    assert taken(limiter, "2001:db8:1:3::1", 1) == [True]


def test_a_full_table_drops_the_least_recently_used_never_the_busy_client() -> None:
    """Before: past `MAX_KEYS` clients the whole table was cleared, so a client cycling
    through addresses emptied every bucket, its own included."""
    limiter = limiter_at([100.0])
    limiter.MAX_KEYS = 50
    assert taken(limiter, "192.0.2.1", 4) == [True, True, True, False]
    for n in range(200):
        assert taken(limiter, f"198.51.100.{n}", 1) == [True]
        if n % 10 == 0:  # the noisy client keeps trying (and being refused) meanwhile
            assert taken(limiter, "192.0.2.1", 1) == [False]
    assert taken(limiter, "192.0.2.1", 1) == [False]
    assert taken(limiter, "198.51.100.199", 1) == [True]  # a recent bucket kept (2 of 3 left)
    assert taken(limiter, "198.51.100.0", 3) == [True, True, True]  # an old one was dropped


@pytest.mark.parametrize("burst", [1, 10])
def test_the_burst_is_the_first_hits(burst: int) -> None:
    limiter = limiter_at([0.0])
    assert taken(limiter, "192.0.2.1", burst + 1, burst) == [True] * burst + [False]
