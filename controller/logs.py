"""Structured logging: one JSON object per line on stderr, or plain text for humans.

Log calls pass fields through `extra={"fields": {...}}`; the formatter merges them into the
line. Credentials are never passed as fields. A line logged while a span is current (tracing
on: `controller.tracing`) carries its `traceId` and `spanId`, so a log line leads to its trace.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from controller import tracing
from controller.settings import Settings


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        _add_trace(line)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        fields = dict(getattr(record, "fields", None) or {})
        _add_trace(fields)
        extra = " ".join(f"{k}={v}" for k, v in fields.items())
        text = f"{record.levelname.lower():7} {record.name}: {record.getMessage()} {extra}".rstrip()
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class StderrHandler(logging.Handler):
    """Writes to whatever `sys.stderr` is at emit time (test capture, gunicorn redirection)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - logging must never break a request
            self.handleError(record)


def configure_logging(settings: Settings) -> None:
    """Route the `driftgate` loggers (and gunicorn's) to stderr in the configured format."""
    handler = StderrHandler()
    handler.setFormatter(JsonFormatter() if settings.log_format == "json" else TextFormatter())
    # The OpenTelemetry SDK's own lines (an exporter that cannot reach its collector) too.
    for name in ("driftgate", "gunicorn.error", "apscheduler", "opentelemetry"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(settings.log_level)
        logger.propagate = False
    # A tick skipped because the previous one still runs is expected under load, not news.
    logging.getLogger("apscheduler.scheduler").setLevel(logging.ERROR)
    logging.getLogger("apscheduler.executors").setLevel(logging.ERROR)


def _add_trace(line: dict[str, Any]) -> None:
    ids = tracing.current_ids()
    if ids is not None:
        line["traceId"], line["spanId"] = ids


def log(logger: logging.Logger, level: int, event: str, **fields: Any) -> None:
    logger.log(level, event, extra={"fields": fields})
