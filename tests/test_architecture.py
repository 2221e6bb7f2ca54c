"""The arrows of ARCHITECTURE.md: `controller` never imports web, cli, flask or click."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN_IN_CONTROLLER = ("web", "cli", "flask", "click", "werkzeug", "gunicorn")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_controller_does_not_import_the_shells() -> None:
    offenders = []
    for path in sorted((ROOT / "controller").rglob("*.py")):
        for module in imported_modules(path):
            if module.split(".")[0] in FORBIDDEN_IN_CONTROLLER:
                offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    assert offenders == []


def test_the_walker_sees_imports(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import flask\nfrom click import echo\nfrom . import local\n")
    assert imported_modules(sample) == {"flask", "click"}


def test_only_the_http_source_imports_httpx() -> None:
    users = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "controller").rglob("*.py"))
        if any(m.split(".")[0] == "httpx" for m in imported_modules(path))
    ]
    assert set(users) <= {"controller/sources/http.py"}
