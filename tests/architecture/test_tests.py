"""The tests' own layout (docs/architecture.md): `tests/` mirrors the code, one package of
tests per package or module of it, plus the tests of whole processes (`tests/system/`) and of
the layers (`tests/architecture/`); and a test module never imports another test module, so
what tests share lives in a conftest.py, `tests/factories.py` or a helper module."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest

from tests.processes import PATIENCE

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
# Tests of no one package: whole processes as an operator runs them, the layers, and the ways
# to install and run it (the lock files, the wheel, the image, deploy/, action.yml).
WHOLE = {"system", "architecture", "deploy"}


def modules_of_tests() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def mirrors_the_code(name: str) -> bool:
    """A directory of code `name` at the top (`bench/` has no `__init__.py`), or a package or
    module `name` in controller/, web/ or cli/."""
    return any((ROOT / name).glob("*.py")) or any(
        (ROOT / top / name / "__init__.py").is_file() or (ROOT / top / f"{name}.py").is_file()
        for top in ("controller", "web", "cli")
    )


def test_every_test_module_is_in_a_package_that_mirrors_the_code() -> None:
    misplaced = []
    for path in modules_of_tests():
        parts = path.relative_to(TESTS).parts
        if len(parts) == 1:
            misplaced.append(f"{path.relative_to(ROOT)}: at the root of tests/")
        elif parts[0] not in WHOLE and not mirrors_the_code(parts[0]):
            misplaced.append(f"{path.relative_to(ROOT)}: no package or module {parts[0]!r}")
        elif not (path.parent / "__init__.py").is_file():
            misplaced.append(f"{path.relative_to(ROOT)}: its directory has no __init__.py")
    assert misplaced == []


def test_no_test_module_imports_another() -> None:
    offenders = []
    for path in modules_of_tests():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.startswith("tests.") and name.split(".")[-1].startswith("test_"):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {name}")
    assert offenders == []


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-n", "1"]], ids=["one-process", "xdist"])
def test_a_process_the_tests_leave_running_fails_the_run(
    tmp_path: Path, workers: list[str]
) -> None:
    """tests/leaks.py: a run whose test leaves a process behind (a child, and an orphan
    reparented to init) names both, kills them and exits 1, with or without xdist."""
    token = uuid.uuid4().hex
    (tmp_path / "conftest.py").write_text(
        "from tests.leaks import LeakCheck\n\n\n"
        "def pytest_configure(config):\n"
        '    config.pluginmanager.register(LeakCheck(config), "leak-check")\n'
    )
    (tmp_path / "test_leaky.py").write_text(
        "import subprocess, sys, time\n\n"
        "KEPT = []\n\n\n"
        "def test_leaves_a_child():\n"
        f"    command = [sys.executable, '-c', 'import time; time.sleep(600)  # {token}']\n"
        "    KEPT.append(subprocess.Popen(command))\n"
        "    time.sleep(0.05)  # a start is known to a clock tick: the next test starts later\n\n\n"
        "def test_leaves_an_orphan():\n"
        f"    subprocess.run(['bash', '-c', '(exec -a orphan-{token} sleep 600 &)'], check=True)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *workers, str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "processes the tests left running (killed)" in done.stdout
    named = [line for line in done.stdout.splitlines() if token in line]
    assert len(named) == 2, done.stdout
    assert "(started during test_leaky.py::test_leaves_a_child): " in named[0]
    assert f"(started during test_leaky.py::test_leaves_an_orphan): orphan-{token} 600" in named[1]
    assert "2 passed" in done.stdout
    left = [
        p for p in psutil.process_iter(["cmdline"]) if token in " ".join(p.info["cmdline"] or [])
    ]
    assert left == []
