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
