"""Every benchmark in `bench/` runs in smoke size (issue 42, point 7): a benchmark that nobody
runs rots (an import moves, a fixture or a route changes), and its full size takes minutes.

Each script (a `bench/*.py` with a `__main__` block; the helper modules have none) runs as a
child process with this interpreter and `--smoke`, which `bench/smoke.py` gives every script:
it must exit 0, say its smoke size on its first line (a script without `--smoke` fails here)
and print its figures. A script that needs what this clone lacks says `skipped: <what>` and is
skipped here with that reason. One whose smoke size needs the suite's PostgreSQL (it reads
`smoke.SUITE_POSTGRES`) runs only when `DRIFTGATE_TEST_DATABASE_URL` is set, as the suite's
other Postgres-only tests do. The scripts that write into the repository in a full run also
run their write, which smoke size sends to a temporary directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ON_POSTGRES

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(
    path
    for path in (ROOT / "bench").glob("*.py")
    if 'if __name__ == "__main__":' in path.read_text(encoding="utf-8")
)
NEEDS_POSTGRES = pytest.mark.skipif(
    not ON_POSTGRES, reason="its smoke size needs PostgreSQL (DRIFTGATE_TEST_DATABASE_URL)"
)
WRITERS = {"oasdiff_coverage.py": ["--write"], "replay_catalog.py": ["--write"]}

# Real processes (servers, controllers): about 75 s of CPU in all. Left out of `make check`.
pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "script",
    [
        pytest.param(
            path,
            id=path.name,
            marks=[NEEDS_POSTGRES] if "smoke.SUITE_POSTGRES" in path.read_text() else [],
        )
        for path in SCRIPTS
    ],
)
def test_the_benchmark_runs_in_smoke_size(script: Path, tmp_path: Path) -> None:
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    # The temporary files a benchmark leaves (its store, its servers' logs) go under tmp_path.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "TMPDIR": str(tmp_path)}
    command = [sys.executable, str(script), "--smoke", *WRITERS.get(script.name, [])]
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    said = f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-5000:]}"
    assert done.returncode == 0, f"{script.name} --smoke exited {done.returncode}\n{said}"
    lines = done.stdout.splitlines()
    assert lines and lines[0].startswith("smoke size"), (
        f"{script.name} does not take --smoke from bench/smoke.py (smoke.parse)\n{said}"
    )
    assert len(lines) > 1, f"{script.name} printed no figures\n{said}"
    for line in lines:
        if line.startswith("wrote "):
            written = Path(line.removeprefix("wrote ")).resolve()
            assert not written.is_relative_to(ROOT), f"{script.name} wrote into the repository"
    skipped = [line.removeprefix("skipped: ") for line in lines if line.startswith("skipped: ")]
    if skipped:
        pytest.skip(f"{script.name}: {skipped[0]}")
