"""Migrations: from empty to head on this run's database, and models that match them."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from controller.store import migrate
from controller.store.db import Database
from controller.store.models import Base
from tests.conftest import ON_POSTGRES


def test_upgrade_from_empty_to_head(empty_database: Database) -> None:
    assert migrate.current_revision(empty_database) is None
    head = migrate.upgrade(empty_database)
    assert head == migrate.head_revision(empty_database)
    tables = set(inspect(empty_database.engine).get_table_names())
    assert {t.name for t in Base.metadata.sorted_tables} <= tables
    # Running it again is a no-op.
    assert migrate.upgrade(empty_database) == head


def test_models_match_the_migrations(empty_database: Database) -> None:
    migrate.upgrade(empty_database)
    with empty_database.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        differences = compare_metadata(context, Base.metadata)
    assert differences == [], "models changed without a migration: run autogenerate"


def test_sqlite_runs_in_wal_mode(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'wal.db'}")
    with database.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert conn.execute(text("PRAGMA busy_timeout")).scalar() == 10_000
    database.dispose()


def test_the_run_gate_triggers_exist_at_head_and_go_with_a_downgrade(
    empty_database: Database,
) -> None:
    """The gate cache trusts these triggers (migration 0005); a later migration that rebuilds
    one of their tables on SQLite would drop them silently, so head must still have them all."""
    from importlib import import_module

    expected = set(
        import_module("controller.store.migrations.versions.0005_run_gate_cache").TRIGGERS
    )
    query = (
        "SELECT name FROM sqlite_master WHERE type = 'trigger'"
        if not ON_POSTGRES
        else "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal"
    )

    def triggers() -> set[str]:
        with empty_database.engine.connect() as conn:
            return {row[0] for row in conn.execute(text(query))}

    migrate.upgrade(empty_database)
    assert triggers() == expected and len(expected) == 13
    from alembic import command

    config = migrate.alembic_config(empty_database)
    with empty_database.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0004")
    assert triggers() == set()
    assert migrate.upgrade(empty_database) == migrate.head_revision(empty_database)
    assert triggers() == expected


@pytest.mark.skipif(not ON_POSTGRES, reason="a Postgres storage setting")
def test_decisions_stay_inline_and_compress_with_lz4_where_the_server_has_it(
    empty_database: Database,
) -> None:
    """Migration 0006: a decision row stays in its page up to 8160 bytes, and its JSON
    compresses with lz4 on a server built with it (not pglz out of line, which cost most of
    Postgres' CPU per preflight); a downgrade puts the defaults back."""

    def storage() -> tuple[list[str] | None, set[str]]:
        with empty_database.engine.connect() as conn:
            options = conn.execute(
                text("SELECT reloptions FROM pg_class WHERE relname = 'preflight_decisions'")
            ).scalar()
            methods = conn.execute(
                text(
                    "SELECT attname || ':' || attcompression::text FROM pg_attribute "
                    "WHERE attrelid = 'preflight_decisions'::regclass "
                    "AND attname IN ('inputs', 'result')"
                )
            ).scalars()
            return options, set(methods)

    migrate.upgrade(empty_database)
    with empty_database.engine.connect() as conn:
        lz4 = "lz4" in (
            conn.execute(
                text("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
            ).scalar()
            or []
        )
    options, methods = storage()
    assert options == ["toast_tuple_target=8160"]
    assert methods == ({"inputs:l", "result:l"} if lz4 else {"inputs:", "result:"})
    from alembic import command

    config = migrate.alembic_config(empty_database)
    with empty_database.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0005")
    assert storage() == (None, {"inputs:", "result:"})


@pytest.mark.skipif(not ON_POSTGRES, reason="a Postgres column type")
def test_decisions_are_json_text_and_keep_their_values_and_compression_both_ways(
    empty_database: Database,
) -> None:
    """Migration 0007: `inputs` and `result` are `json` (checked text, not parsed into
    `jsonb`); a stored decision keeps its values through the upgrade and a downgrade, and the
    columns keep the compression 0006 gave them."""

    def columns() -> set[str]:
        with empty_database.engine.connect() as conn:
            return set(
                conn.execute(
                    text(
                        "SELECT attname || ':' || format_type(atttypid, atttypmod) || ':' || "
                        "attcompression::text FROM pg_attribute "
                        "WHERE attrelid = 'preflight_decisions'::regclass "
                        "AND attname IN ('inputs', 'result')"
                    )
                ).scalars()
            )

    def stored() -> tuple[str, str]:
        with empty_database.engine.connect() as conn:
            row = conn.execute(
                text("SELECT inputs::text, result::text FROM preflight_decisions")
            ).one()
            return row[0], row[1]

    from alembic import command

    config = migrate.alembic_config(empty_database)
    migrate.upgrade(empty_database, "0006")
    before = columns()
    assert {c.split(":")[1] for c in before} == {"jsonb"}
    with empty_database.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO orgs (id, name, plan, products, is_trial, created_at) "
                "VALUES ('o1', 'o', 'pro', '[]', false, now())"
            )
        )
        conn.execute(
            text(
                "INSERT INTO preflight_decisions (id, org_id, actor, watch_count, allowed, "
                "policy_blocked, dry_run, status_code, duration_ms, evaluated_at, inputs, result) "
                "VALUES ('d1', 'o1', 'key:k', 1, false, false, false, 200, 1, now(), "
                """'{"watchIds": ["w1"]}', '{"blocked": [{"watchId": "w1"}]}')"""
            )
        )
    assert migrate.upgrade(empty_database) == migrate.head_revision(empty_database)
    compression = {c.split(":")[2] for c in before}
    assert columns() == {f"{name}:json:{c}" for name in ("inputs", "result") for c in compression}
    assert stored() == ('{"watchIds": ["w1"]}', '{"blocked": [{"watchId": "w1"}]}')
    with empty_database.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0006")
    assert columns() == before
    assert stored() == ('{"watchIds": ["w1"]}', '{"blocked": [{"watchId": "w1"}]}')


def test_an_installation_linked_to_several_orgs_keeps_its_earliest_link(
    empty_database: Database,
) -> None:
    """Migration 0015: one org per GitHub App installation. Links made before it (when any org
    could link any installation) keep the earliest per installation, marked `legacy` (or
    `unverified` without an account), and a second org's link is refused by the store."""
    from alembic import command
    from sqlalchemy.exc import IntegrityError

    migrate.upgrade(empty_database, "0014")
    with empty_database.engine.begin() as conn:
        for org in ("owner", "intruder", "dev"):
            conn.execute(
                text(
                    "INSERT INTO orgs (id, name, plan, products, is_trial, created_at) "
                    f"VALUES ('{org}', '{org}', 'pro', '[]', false, CURRENT_TIMESTAMP)"
                )
            )
        for row_id, org, installation, account, at in (
            ("l1", "intruder", 77, "acme", "2026-02-01 00:00:00"),
            ("l2", "owner", 77, "acme", "2026-01-01 00:00:00"),
            ("l3", "intruder", 88, "evil", "2026-01-01 00:00:00"),
            ("l4", "dev", 99, "", "2026-01-01 00:00:00"),
        ):
            conn.execute(
                text(
                    "INSERT INTO github_installations (id, org_id, installation_id, account, "
                    "repository_selection, status, linked_at) "
                    f"VALUES ('{row_id}', '{org}', {installation}, '{account}', 'all', "
                    f"'active', '{at}')"
                )
            )
    assert migrate.upgrade(empty_database) == migrate.head_revision(empty_database)

    def links() -> list[tuple[str, str, int, str]]:
        with empty_database.engine.connect() as conn:
            return [
                (row[0], row[1], row[2], row[3])
                for row in conn.execute(
                    text(
                        "SELECT id, org_id, installation_id, linked_by FROM github_installations "
                        "ORDER BY id"
                    )
                )
            ]

    assert links() == [
        ("l2", "owner", 77, "legacy"),
        ("l3", "intruder", 88, "legacy"),
        ("l4", "dev", 99, "unverified"),
    ]
    with pytest.raises(IntegrityError), empty_database.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO github_installations (id, org_id, installation_id, account, "
                "repository_selection, status, linked_at, linked_by) VALUES ('l5', 'intruder', "
                "77, 'acme', 'all', 'active', CURRENT_TIMESTAMP, 'account')"
            )
        )
    config = migrate.alembic_config(empty_database)
    with empty_database.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0014")
    with empty_database.engine.connect() as conn:
        kept = conn.execute(text("SELECT id FROM github_installations ORDER BY id")).scalars()
        assert list(kept) == ["l2", "l3", "l4"]
    assert migrate.upgrade(empty_database) == migrate.head_revision(empty_database)
