"""A logging handler that keeps records for a test to read (pytest's log capture is off in
this suite: `-p no:logging`)."""

from __future__ import annotations

import logging


class Records(logging.Handler):
    """The log records of the loggers it is added to, kept in order."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


class Lines(logging.Handler):
    """The lines of the loggers it is added to, each formatted by `formatter` as it is
    emitted (as the process's stderr handler does, in the thread and span that logged it)."""

    def __init__(self, formatter: logging.Formatter) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(formatter)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))
