"""Smoke size: every benchmark in `bench/` takes `--smoke`, a size that runs in seconds and goes
through the same code as the full run (tiny counts, one round, short durations), so that
`tests/bench/test_smoke.py` runs each of them and a benchmark cannot rot unnoticed.

A script builds its argparse parser as usual and reads it with `parse(parser, {...})`: under
`--smoke` the options named there take those values unless the command line gives them, and
the first line printed says so (`smoke size: watches=5 ...`). In smoke size a script that
needs what a fresh clone lacks (a corpus under `../shared`, the internet, a PostgreSQL server)
runs on a tiny input the repository holds, or calls `skip(what)`: one line
`skipped: <what is missing>` and exit status 0. Nothing is written into the repository in smoke
size: `scratch()` is a temporary directory for what a full run writes there.
"""

from __future__ import annotations

import argparse
import atexit
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

# The suite's PostgreSQL (tests/conftest.py reads the same variable): in smoke size, a benchmark
# that only runs on Postgres uses it unless given `--postgres`, and is skipped without either.
SUITE_POSTGRES = os.environ.get("DRIFTGATE_TEST_DATABASE_URL", "").strip() or None
NO_POSTGRES = "no PostgreSQL (give --postgres URL, or set DRIFTGATE_TEST_DATABASE_URL)"
_PASSWORD = re.compile(r"(://[^:/@]+:)[^@]*@")  # a URL's password, never printed


def parse(
    parser: argparse.ArgumentParser,
    smoke: Mapping[str, Any],
    argv: Sequence[str] | None = None,
) -> argparse.Namespace:
    """Add `--smoke` to `parser` and parse; under it the options in `smoke` (by their `dest`)
    take those values unless given on the command line (None: the script fills it in, from an
    input the repository holds)."""
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a size that runs in seconds through the same code (the suite runs it)",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        parser.set_defaults(**smoke)
        args = parser.parse_args(argv)
        shown = " ".join(
            f"{name}={_printable(value)}" for name, value in smoke.items() if value is not None
        )
        print(f"smoke size: {shown}" if shown else "smoke size", flush=True)
    return args


def _printable(value: Any) -> str:
    return _PASSWORD.sub(r"\1***@", str(value))


def skip(what: str) -> NoReturn:
    """Say what is missing on one line and exit 0 (smoke size only)."""
    print(f"skipped: {what}", flush=True)
    raise SystemExit(0)


def scratch(prefix: str = "driftgate-bench-smoke-") -> Path:
    """A temporary directory, removed when the process exits: where a smoke run writes what a
    full run writes into the repository."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path
