"""Pausing Python's cyclic garbage collector around one large piece of work.

A large OpenAPI diff or a large reconcile builds hundreds of thousands of short-lived
containers without reference cycles next to multi-megabyte documents; the collector's full
passes rescan the whole heap again and again (about a third of the time on Stripe's spec).
Reference counting frees those objects anyway, so the work runs with the collector paused.

The switch is process-wide, and the controller runs checks and reconciles on several
threads, so pauses are counted: the collector is off while any pause is open and is switched
back on by the last one to close, and only if it was on when the first one opened. Pure code
(`controller/diffs`, `controller/agents/policy.py`) never uses this; the job that runs it does.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_open = 0
_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with the cyclic collector off (see the module's docstring)."""
    global _open, _was_enabled
    with _lock:
        if _open == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _open += 1
    try:
        yield
    finally:
        with _lock:
            _open -= 1
            if _open == 0 and _was_enabled:
                gc.enable()
