"""One database session per request, opened on first use and closed at teardown."""

from __future__ import annotations

from flask import Flask, current_app, g, request
from sqlalchemy.orm import Session

from controller.store.db import Database


def database() -> Database:
    db: Database = current_app.extensions["driftgate.database"]
    return db


def request_session() -> Session:
    if "db_session" not in g:
        # Reads stay deferred (they never block writers on SQLite); writing methods take the
        # write lock up front.
        writes = request.method not in ("GET", "HEAD", "OPTIONS")
        g.db_session = database().session(writes=writes)
    session: Session = g.db_session
    return session


def init_app(app: Flask) -> None:
    @app.teardown_request
    def close_session(_exc: BaseException | None) -> None:
        session = g.pop("db_session", None)
        if session is not None:
            session.close()  # rolls back anything the request did not commit
