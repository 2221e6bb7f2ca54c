"""The database handle: pooled connections that died while idle are replaced, not used."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from controller.store import db as db_module
from controller.store.db import Database
from tests.conftest import ON_POSTGRES


@pytest.mark.skipif(not ON_POSTGRES, reason="a server that can drop connections")
def test_a_connection_killed_while_idle_is_replaced(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    with database.engine.connect() as conn:
        backend = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
    # The server ends the pooled connection while it sits idle (a restart, a proxy timeout).
    admin = create_engine(database.url)
    with admin.connect() as conn:
        conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": backend})
        conn.commit()
    admin.dispose()
    monkeypatch.setattr(db_module, "IDLE_PING_SECONDS", 0.0)
    with database.session() as session:
        again = session.execute(text("SELECT pg_backend_pid()")).scalar_one()
    assert again != backend


@pytest.mark.skipif(not ON_POSTGRES, reason="pooled server connections")
def test_only_idle_connections_are_pinged(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    dialect = database.engine.dialect
    pings: list[object] = []
    real_ping = dialect.do_ping

    def counting_ping(dbapi_connection: object) -> bool:
        pings.append(dbapi_connection)
        return real_ping(dbapi_connection)

    monkeypatch.setattr(dialect, "do_ping", counting_ping)
    for _ in range(3):
        with database.session() as session:
            session.execute(text("SELECT 1"))
    assert pings == []  # a busy process pays no round trip per transaction
    monkeypatch.setattr(db_module, "IDLE_PING_SECONDS", 0.0)
    with database.session() as session:
        session.execute(text("SELECT 1"))
    assert len(pings) == 1
