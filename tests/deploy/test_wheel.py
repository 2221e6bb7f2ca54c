"""The package as a user installs it: the sdist and the wheel built from the project's files
alone (`python -m build`: the sdist, then the wheel from the sdist), the wheel installed into
a clean virtual environment with the locked dependencies, and `driftgate up` started from that
environment, outside the checkout so that nothing can import the checkout, answering
`/health` and `/health/ready`. Reaches the package index (setuptools for the build, the locked
dependencies) like a user's install does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import httpx
import pytest

from controller import __version__
from tests.processes import free_port, stop_process, wait_until_healthy

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("controller", "web", "cli", "demo")


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, f"{args}: {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout.strip()


def clean_env() -> dict[str, str]:
    """The machine's environment without driftgate's settings and without PYTHONPATH (which
    could point at the checkout)."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("DRIFTGATE_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")
    }


def test_the_wheel_installs_into_a_clean_venv_and_serves(tmp_path: Path) -> None:
    # The project's files alone, as a clone has them (no build/, egg-info or caches).
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    dist = tmp_path / "dist"
    run(sys.executable, "-m", "build", "--outdir", dist, source, cwd=tmp_path, env=clean_env())
    sdists = sorted(dist.glob("driftgate-*.tar.gz"))
    wheels = sorted(dist.glob("driftgate-*-py3-none-any.whl"))
    assert [s.name for s in sdists] == [f"driftgate-{__version__}.tar.gz"]
    assert [w.name for w in wheels] == [f"driftgate-{__version__}-py3-none-any.whl"]
    with tarfile.open(sdists[0]) as sdist:
        names = sdist.getnames()
    assert f"driftgate-{__version__}/pyproject.toml" in names
    assert f"driftgate-{__version__}/controller/store/migrations/script.py.mako" in names

    # A venv of its own, filled by this pip (`--python`: no pip of its own to bootstrap, and
    # no bytecode compiled ahead: a third of the time on 2 cores).
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path, env=clean_env())
    pip = [sys.executable, "-m", "pip", "--python", venv / "bin" / "python"]
    lock = ROOT / "requirements.lock"
    quiet = ("--quiet", "--no-compile", "--disable-pip-version-check")
    run(*pip, "install", *quiet, "--require-hashes", "-r", lock, cwd=tmp_path, env=clean_env())
    run(*pip, "install", *quiet, "--no-deps", wheels[0], cwd=tmp_path, env=clean_env())
    run(*pip, "check", cwd=tmp_path, env=clean_env())

    # Every data file of the packages (templates, static files, catalogs) is in the wheel.
    site = Path(
        run(
            venv / "bin" / "python",
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            cwd=tmp_path,
            env=clean_env(),
        )
    )
    shipped = [
        path.relative_to(ROOT)
        for package in PACKAGES
        for path in (ROOT / package).rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts
    ]
    assert shipped and [p for p in shipped if not (site / p).is_file()] == []

    # Started outside the checkout, the command imports the installed package.
    work = tmp_path / "run"
    work.mkdir()
    env = {**clean_env(), "DRIFTGATE_DATA_DIR": str(work / "data"), "DRIFTGATE_WORKERS": "1"}
    where = run(
        venv / "bin" / "python", "-c", "import controller; print(controller.__file__)",
        cwd=work, env=env,
    )  # fmt: skip
    assert Path(where).is_relative_to(site), where
    port = free_port()
    log = work / "up.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(venv / "bin" / "driftgate"), "up", "--port", str(port)],
            cwd=work,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_until_healthy(base, process, log, timeout=120)
            assert httpx.get(f"{base}/health", timeout=5).json()["version"] == __version__
            ready = httpx.get(f"{base}/health/ready", timeout=10)
            assert ready.status_code == 200, ready.text
        finally:
            code = stop_process(process)
    assert code == 0, log.read_text()
    assert (work / "data" / "driftgate.db").is_file()
