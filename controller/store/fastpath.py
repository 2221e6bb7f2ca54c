"""Statements of the hot paths, run on a pooled DBAPI connection.

The run gate answers with a few statements of a fixed shape per request. Through an ORM
session or a Core connection each of them pays for transaction bookkeeping, an execution
context and per-row type processing: several times the database's own work for a 100-row
read. Here a statement built with SQLAlchemy Core is compiled once per dialect (so names and
quoting come from the models), its bind values go through the column types' own processors
(so a stored value is exactly what the ORM stores), and results come back as plain DBAPI
tuples (the run gate reads one JSON value per statement and decodes it itself).

`autocommit_cursor` runs each statement as its own transaction: a single SELECT is one
consistent state of the store on SQLite and on Postgres, and a single INSERT holds SQLite's
write lock only for itself.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, cast

import orjson
from sqlalchemy import Dialect
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler

from controller.store.db import SQLITE_BUSY_TIMEOUT_MS, Database
from controller.store.outage import LOCK_QUEUE, UNREACHABLE, store_fault

Processor = Callable[[Any], Any]


class Prepared:
    """A Core statement compiled once for one dialect, with its parameters' processors."""

    def __init__(
        self,
        statement: ClauseElement,
        dialect: Dialect,
        processors: Mapping[str, Processor] | None = None,
    ) -> None:
        compiled = cast(SQLCompiler, statement.compile(dialect=dialect))
        self.sql = str(compiled)
        self.positional = bool(dialect.positional)
        self.names: tuple[str, ...] = tuple(
            compiled.positiontup or () if self.positional else compiled.binds
        )
        # Values the statement itself carries (a literal bound as a parameter).
        self.defaults = {
            name: bind.value
            for name, bind in compiled.binds.items()
            if not bind.required and bind.value is not None
        }
        self.processors: dict[str, Processor] = {}
        for name, bind in compiled.binds.items():
            processor = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if processor is not None:
                self.processors[name] = processor
        self.processors.update(processors or {})
        self.waits_in_python = dialect.name == "sqlite"

    def parameters(self, values: Mapping[str, Any]) -> list[Any] | dict[str, Any]:
        merged = {**self.defaults, **values} if self.defaults else values
        processors = self.processors
        out = {
            name: processors[name](merged[name]) if name in processors else merged[name]
            for name in self.names
        }
        return [out[name] for name in self.names] if self.positional else out

    def execute(self, cursor: Any, values: Mapping[str, Any]) -> Any:
        if self.waits_in_python:
            return execute_when_unlocked(cursor, self.sql, self.parameters(values))
        cursor.execute(self.sql, self.parameters(values))
        return cursor


SQLITE_BUSY = 5
FIRST_PAUSE = 0.00005
LONGEST_PAUSE = 0.002


def execute_when_unlocked(cursor: Any, sql: str, parameters: Any) -> Any:
    """Run a statement on a SQLite connection of the run gate, which waits for the write lock
    here rather than in SQLite (its busy timeout is 0).

    SQLite's own busy handler sleeps at least a millisecond on the first conflict, then 2, 5,
    10 ms...: for a lock held about 0.1 ms by another preflight's INSERT, most of that sleep is
    lost, and with every thread of a worker asleep the core idles. Here the pause starts at
    50 us and doubles up to 2 ms, for as long as SQLite's own timeout would have waited. A
    statement refused with SQLITE_BUSY did nothing (each is its own transaction), so running
    it again is safe. Inside a request, it waits no longer than the request's deadline, in the
    process's queue for the lock (`controller.store.outage.LOCK_QUEUE`)."""
    try:
        cursor.execute(sql, parameters)
        return cursor
    except sqlite3.OperationalError as error:
        if error.sqlite_errorcode & 0xFF != SQLITE_BUSY:
            raise
    pause = FIRST_PAUSE
    with LOCK_QUEUE.waiting(SQLITE_BUSY_TIMEOUT_MS / 1000) as until:
        while True:
            time.sleep(pause)
            pause = min(pause * 2, LONGEST_PAUSE)
            try:
                cursor.execute(sql, parameters)
                return cursor
            except sqlite3.OperationalError as error:
                if error.sqlite_errorcode & 0xFF != SQLITE_BUSY or time.monotonic() > until:
                    raise


def _json_text(value: Any) -> str:
    return orjson.dumps(value).decode()


def json_processor(dialect: Dialect) -> Processor:
    """The bind value of a `JSONDocument` column, serialised by orjson (several times faster
    than the JSON type's `json.dumps` for a decision's rows): text on SQLite, as SQLAlchemy
    stores it; `json` on Postgres."""
    if dialect.name == "postgresql":
        from psycopg.types.json import Json

        return lambda value: Json(value, dumps=_json_text)
    return _json_text


@contextmanager
def autocommit_cursor(database: Database) -> Iterator[Any]:
    """A cursor on a connection of the run gate's pool (`Database.take_gate_connection`),
    where every statement commits on its own."""
    connection = database.take_gate_connection()
    try:
        cursor = connection.cursor()
        try:
            yield cursor
        finally:
            cursor.close()
    except BaseException as error:
        if store_fault(error) == UNREACHABLE:
            connection.invalidate()  # dead or of unknown state: no reset round trip
        else:
            connection.close()
        raise
    database.return_gate_connection(connection)
