"""The tests' own layout (docs/architecture.md): `tests/` mirrors the code, one package of
tests per package or module of it, plus the tests of whole processes (`tests/system/`) and of
the layers (`tests/architecture/`); and a test module never imports another test module, so
what tests share lives in a conftest.py, `tests/factories.py` or a helper module."""

from __future__ import annotations

import ast
from pathlib import Path

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
