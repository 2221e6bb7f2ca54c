"""The run directory of `driftgate serve` and `up` (`cli.server.metrics_directory_of_run`):
made before prometheus_client is imported (which picks its multiprocess mode then), named to
the processes of the run, removed by the process that made it and by no forked child."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

RUN = """
import os, sys
import controller.store.db, controller.checks.engine, controller.gate.service
# The store and the engines import controller.metrics, which loads prometheus_client only
# when the process first records: a command that never records does not pay for it.
assert "prometheus_client" not in sys.modules
from cli.server import metrics_directory_of_run
try:
    with metrics_directory_of_run() as directory:
        assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == str(directory)
        from controller import metrics
        metrics.check_done("openapi", "unchanged", 0.01)
        assert any(p.name.startswith("counter_") for p in directory.iterdir())
        child = os.fork()
        if child == 0:
            sys.exit(0)  # as gunicorn ends a worker: out through this block
        assert os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0
        assert directory.is_dir()
except SystemExit:  # the child only: it left the directory to its maker
    os._exit(0 if directory.is_dir() else 1)
print(directory)
assert not directory.exists() and "PROMETHEUS_MULTIPROC_DIR" not in os.environ
try:
    with metrics_directory_of_run():
        pass
except RuntimeError as error:
    print(error)
"""


def test_the_run_directory_comes_first_and_goes_with_its_maker() -> None:
    done = subprocess.run(
        [sys.executable, "-c", RUN], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    made, refused = done.stdout.strip().splitlines()
    assert Path(made).name.startswith("driftgate-metrics-")
    assert refused == "prometheus_client was imported before the run's metrics directory"
