"""Expand, then contract (docs/operations.md, "Upgrades"): the schema of release N+1 serves
the code of release N during a rolling upgrade, so a migration only adds, and what it takes
away comes a release after the code stopped using it.

Two checks. A lint over the migrations' `upgrade()`: no column or table dropped or renamed,
no column tightened (`nullable=False`, a new type, a dropped server default) and no column
added `NOT NULL` without a server default; the migrations before the rule are listed with
what they did (`HISTORICAL`). And the statements of the previous release
(`previous_release.json`: every table and column its models mapped, recorded when it was
cut by `python -m tests.gen_release_statements`): an INSERT naming every column it wrote, a
SELECT of them all, an UPDATE of each and a DELETE, run against a database at this head."""

from __future__ import annotations

import ast
from pathlib import Path

from sqlalchemy import text

from controller import __version__
from controller.store import migrate
from controller.store.db import Database
from tests.store.conftest import load_release, release_statement_failures

VERSIONS = migrate.MIGRATIONS / "versions"

# What the migrations written before the rule did that it forbids, by revision (each line a
# finding as `findings()` words it), and why it was harmless or what it cost.
HISTORICAL = {
    # jsonb -> json of the decisions' two documents on Postgres: same values, read and
    # written whole by every release.
    "0007": ["alter_column TABLE.column changes its type"],
    # linked_by was added with a server default and the default dropped in the same
    # migration: an INSERT of an installation link by release 0014's code (which names no
    # linked_by) fails on 0015's schema. The rule came after it.
    "0015": ["alter_column github_installations.linked_by drops its server default"],
}

FORBIDDEN_SQL = ("DROP COLUMN", "DROP TABLE", "RENAME ")


def findings(path: Path) -> list[str]:
    """What `upgrade()` in the migration at `path` does that release N's code would trip on."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # Everything but `downgrade()`: `upgrade()` and the helpers it calls.
    tree.body = [
        node
        for node in tree.body
        if not (isinstance(node, ast.FunctionDef) and node.name == "downgrade")
    ]
    batch_tables: dict[str, str] = {}
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.With):
            for item in node.items:
                call = item.context_expr
                if (
                    isinstance(call, ast.Call)
                    and _name(call.func) == "batch_alter_table"
                    and isinstance(item.optional_vars, ast.Name)
                ):
                    batch_tables[item.optional_vars.id] = _literal(call.args[0])
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        verb = node.func.attr
        owner = node.func.value
        batch = isinstance(owner, ast.Name) and owner.id in batch_tables
        args = [_literal(a) for a in node.args]
        if batch:
            table = batch_tables[owner.id]  # type: ignore[union-attr]
        else:
            table = args.pop(0) if args else "?"
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        if verb in ("drop_column", "drop_table", "rename_table"):
            found.append(f"{verb} {table}{'.' + args[0] if verb == 'drop_column' else ''}")
        elif verb == "alter_column":
            column = f"{table}.{args[0] if args else '?'}"
            if "new_column_name" in keywords:
                found.append(f"alter_column {column} renames it")
            if _literal(keywords.get("nullable")) == "False":
                found.append(f"alter_column {column} makes it NOT NULL")
            if "type_" in keywords:
                found.append(f"alter_column {column} changes its type")
            if "server_default" in keywords and _literal(keywords["server_default"]) == "None":
                found.append(f"alter_column {column} drops its server default")
        elif verb == "add_column":
            column_call = node.args[-1]
            if isinstance(column_call, ast.Call):
                options = {k.arg: k.value for k in column_call.keywords if k.arg}
                name = _literal(column_call.args[0]) if column_call.args else "?"
                not_null = _literal(options.get("nullable")) == "False"
                if not_null and "server_default" not in options:
                    found.append(f"add_column {table}.{name} NOT NULL without a server default")
        elif verb == "execute" and node.args:
            sql = _literal(node.args[0]).upper()
            found += [f"execute {word.strip()}" for word in FORBIDDEN_SQL if word in sql]
    return sorted(set(found))


def _name(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def _literal(node: ast.expr | None) -> str:
    if node is None:
        return ""
    if isinstance(node, ast.Constant):
        return str(node.value)
    return ast.unparse(node)


def migrations() -> list[tuple[str, Path]]:
    by_revision = {}
    for path in sorted(VERSIONS.glob("[0-9]*.py")):
        revision = ast.literal_eval(
            next(
                n.value
                for n in ast.parse(path.read_text(encoding="utf-8")).body
                if isinstance(n, ast.Assign)
                and any(getattr(t, "id", "") == "revision" for t in n.targets)
            )
        )
        by_revision[revision] = path
    return [(revision, by_revision[revision]) for revision in migrate.history()]


def test_migrations_only_expand() -> None:
    found = {revision: findings(path) for revision, path in migrations()}
    assert {r: f for r, f in found.items() if f} == HISTORICAL


def test_the_lint_sees_what_it_forbids(tmp_path: Path) -> None:
    migration = tmp_path / "0099_contract.py"
    migration.write_text(
        "import sqlalchemy as sa\nfrom alembic import op\n"
        "def upgrade():\n"
        "    op.drop_column('watches', 'vendor')\n"
        "    op.add_column('watches', sa.Column('size', sa.Integer(), nullable=False))\n"
        "    op.add_column('watches', sa.Column('kind', sa.String(8), nullable=False, "
        "server_default='a'))\n"
        "    with op.batch_alter_table('incidents') as batch:\n"
        "        batch.alter_column('status', new_column_name='state')\n"
        "        batch.alter_column('ack_note', nullable=False)\n"
        "    op.drop_table('dashboards')\n"
        "    op.execute('ALTER TABLE jobs DROP COLUMN priority')\n"
        "def downgrade():\n"
        "    op.drop_column('watches', 'size')\n"
    )
    assert findings(migration) == sorted(
        [
            "drop_column watches.vendor",
            "add_column watches.size NOT NULL without a server default",
            "alter_column incidents.status renames it",
            "alter_column incidents.ack_note makes it NOT NULL",
            "drop_table dashboards",
            "execute DROP COLUMN",
        ]
    )


def test_the_previous_release_runs_on_this_schema(empty_database: Database) -> None:
    release = load_release()
    assert release["revision"] in migrate.history()
    assert _version(release["version"]) <= _version(__version__)
    migrate.upgrade(empty_database)
    with empty_database.engine.begin() as connection:
        assert release_statement_failures(connection, release) == []


def test_a_contraction_under_the_previous_release_is_caught(empty_database: Database) -> None:
    """The check fails when the schema took away what the previous release uses: a dropped
    column, a renamed one (and the rows of their children, which cannot be written without
    their parents)."""
    migrate.upgrade(empty_database)
    with empty_database.engine.begin() as connection:
        connection.execute(text("ALTER TABLE dashboards DROP COLUMN description"))
        connection.execute(text("ALTER TABLE users RENAME COLUMN role TO kind"))
        failures = release_statement_failures(connection, load_release())
    failed = {f.split(":")[0] for f in failures}
    assert {"INSERT INTO dashboards", "INSERT INTO users"} <= failed, failures
    assert failed <= {"INSERT INTO dashboards", "INSERT INTO users", "INSERT INTO console_sessions"}


def _version(text_: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text_.split(".")[:3] if part.isdigit())
