"""Progress on stderr for work that takes seconds (a large diff, a scan of a big tree, a
reconcile): a person at a terminal sees what is going on instead of a silent pause.

One line, drawn only when the work is still running after a second, redrawn in place with
the seconds spent, and erased when the work ends, so that what the command prints stays as it
was. Nothing at all when stderr is not a terminal (a CI log, a pipe) or when the command
writes a machine format: the commands pass `shown=False` for json, sarif, junit, markdown and
github output.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

AFTER_SECONDS = 1.0
EVERY_SECONDS = 0.25


class Progress:
    """What the work says it is doing (`say`), drawn by a thread of its own."""

    def __init__(self, stream: TextIO, message: str, after: float, every: float) -> None:
        self._stream = stream
        self._message = message
        self._after, self._every = after, every
        self._start = time.monotonic()
        self._done = threading.Event()
        self._drawn = 0  # the width of the line on the terminal, to erase it
        self._thread = threading.Thread(target=self._run, name="progress", daemon=True)

    def say(self, message: str) -> None:
        self._message = message

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop drawing and erase the line (before the command prints; again is a no-op)."""
        self._done.set()
        if self._thread.is_alive():
            self._thread.join()
        if self._drawn:
            self._write("\r" + " " * self._drawn + "\r")
            self._drawn = 0

    def _run(self) -> None:
        if self._done.wait(self._after):
            return
        while not self._done.is_set():
            seconds = int(time.monotonic() - self._start)
            line = f"driftgate: {self._message} ({seconds} s)"
            self._write("\r" + line + " " * max(0, self._drawn - len(line)))
            self._drawn = max(self._drawn, len(line))
            self._done.wait(self._every)

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError):  # a closed terminal: the work goes on without it
            self._done.set()


class _Silent(Progress):
    def __init__(self) -> None:
        pass

    def say(self, message: str) -> None:
        pass

    def stop(self) -> None:
        pass


@contextmanager
def progress(
    message: str,
    *,
    shown: bool = True,
    stream: TextIO | None = None,
    after: float = AFTER_SECONDS,
    every: float = EVERY_SECONDS,
) -> Iterator[Progress]:
    """Run the `with` body under a progress line saying `message` (change it with `say`);
    shown only when `shown` and the stream (stderr by default) is a terminal."""
    out = stream if stream is not None else sys.stderr
    if not shown or not _is_terminal(out):
        yield _Silent()
        return
    line = Progress(out, message, after, every)
    line.start()
    try:
        yield line
    finally:
        line.stop()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
