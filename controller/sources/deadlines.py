"""Overall deadlines of outbound calls: one clock for connect, first byte and the whole body.

Socket clients bound each operation (a connect, one read) but not a call: a peer that sends a
byte just before every read timeout, or a body without end, holds its caller for ever. A
deadline opened with `within(seconds)` bounds everything sent and read inside it, in this
thread; nested deadlines keep the earliest. The transports cut the timeout of each socket
operation to what is left of it and fail with a timeout once it has passed:
`controller.sources.http`'s network stream (every HTTP request, redirects included), the SMTP
relay's socket (`controller.summary.smtp`) and the stdio MCP child's pipe. A context variable
carries the deadline, so nothing between the caller and the socket has to pass it on.

httpx has no overall timeout for its synchronous client (encode/httpx#1450: "the
implementation for this would be in httpcore"); cutting each socket operation's timeout is
that, done at the network stream, with no thread and no signal.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Deadline:
    """A point on the monotonic clock, and the seconds it was set to (for messages)."""

    at: float
    seconds: float

    def left(self) -> float:
        return self.at - time.monotonic()


class DeadlinePassed(TimeoutError):
    """An operation started, or went on waiting, after the call's deadline."""

    def __init__(self, deadline: Deadline) -> None:
        super().__init__(f"no complete answer within {deadline.seconds:g} s")
        self.deadline = deadline


_current: ContextVar[Deadline | None] = ContextVar("driftgate_deadline", default=None)


@contextmanager
def within(seconds: float | None) -> Iterator[Deadline | None]:
    """Bound every outbound operation inside to `seconds` from now (None: no new bound); an
    enclosing deadline that comes first stays. Yields the deadline in force."""
    outer = _current.get()
    if seconds is None:
        yield outer
        return
    mine = Deadline(time.monotonic() + max(0.0, seconds), seconds)
    effective = mine if outer is None or mine.at < outer.at else outer
    token = _current.set(effective)
    try:
        yield effective
    finally:
        _current.reset(token)


def current() -> Deadline | None:
    """The deadline in force in this thread, or None."""
    return _current.get()


def bound(timeout: float | None) -> float | None:
    """`timeout` (seconds, None: no limit) cut to what is left of the deadline in force;
    `DeadlinePassed` once it has passed."""
    deadline = _current.get()
    if deadline is None:
        return timeout
    left = deadline.left()
    if left <= 0:
        raise DeadlinePassed(deadline)
    return left if timeout is None else min(timeout, left)


def has_passed() -> bool:
    """Whether the deadline in force (if any) has passed: a timeout now is the deadline's."""
    deadline = _current.get()
    return deadline is not None and deadline.left() <= 0
