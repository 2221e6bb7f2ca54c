"""Record what this release's code reads and writes, for the next release's expand-then-
contract check (tests/store/test_expand_contract.py): every table its models map and every
column of each, with its type, key and reference.

Run it when a release is cut, never in between: `python -m tests.gen_release_statements`
writes `tests/store/previous_release.json`, which the next release's migrations must keep
serving (docs/operations.md, "Upgrades")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, Double, Float, Integer, LargeBinary, String, Text

from controller import __version__
from controller.store import migrate
from controller.store.models import Base
from controller.store.types import UTCDateTime

RELEASE_FILE = Path(__file__).resolve().parent / "store" / "previous_release.json"


def column_type(kind: Any) -> dict[str, Any]:
    if isinstance(kind, UTCDateTime):
        return {"type": "datetime"}
    if isinstance(kind, JSON):
        variants = getattr(kind, "_variant_mapping", {})
        return {"type": "jsonb" if "postgresql" in variants else "json"}
    if isinstance(kind, LargeBinary):
        return {"type": "binary"}
    if isinstance(kind, Boolean):
        return {"type": "boolean"}
    if isinstance(kind, BigInteger):
        return {"type": "biginteger"}
    if isinstance(kind, Integer):
        return {"type": "integer"}
    if isinstance(kind, Double | Float):
        return {"type": "float"}
    if isinstance(kind, Text):
        return {"type": "text"}
    if isinstance(kind, String):
        return {"type": "string", "length": kind.length}
    raise TypeError(f"no recorded type for {kind!r}")


def release() -> dict[str, Any]:
    tables = []
    for table in Base.metadata.sorted_tables:
        columns = []
        for column in table.columns:
            target = next(iter(column.foreign_keys), None)
            columns.append(
                {
                    "name": column.name,
                    **column_type(column.type),
                    "primaryKey": column.primary_key,
                    "autoincrement": column is table.autoincrement_column,
                    "references": target.target_fullname if target is not None else None,
                }
            )
        tables.append({"name": table.name, "columns": columns})
    return {"version": __version__, "revision": migrate.head_revision(), "tables": tables}


def main() -> None:
    RELEASE_FILE.write_text(json.dumps(release(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {RELEASE_FILE}")


if __name__ == "__main__":
    main()
