"""Backup and restore of the state store (`driftgate db backup` / `db restore`): SQLite's
online backup and an atomic restore (`sqlite.py`), Postgres through `pg_dump` (`postgres.py`),
and the use cases that pick one by the store's URL and check revisions (`service.py`)."""
