"""The arrows of ARCHITECTURE.md: `controller` never imports web, cli, flask or click."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN_IN_CONTROLLER = ("web", "cli", "demo", "flask", "click", "werkzeug", "gunicorn")


def imported_modules(path: Path, *, with_names: bool = False) -> set[str]:
    """The absolute imports of a file, anywhere in its code; `with_names` adds
    `module.name` for each `from module import name` (which may be a submodule)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            if with_names:
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
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


# The layers (docs/architecture.md): shells (web, cli) -> controller.services -> the rest of
# controller (domain: diffs, policy, model; adapters: store, sources, events, jobs; the check
# and reconcile engines). controller.scheduler is the controller process: only the CLI starts it.

PACKAGES = ("controller", "web", "cli", "demo")


def module_graph() -> dict[str, set[str]]:
    """Each module of the project and the project modules it imports (at any depth of its
    code: an import inside a function counts too)."""
    paths = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): path
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts
    }
    return {
        name: {t for t in imported_modules(path, with_names=True) if t in paths}
        for name, path in paths.items()
    }


# Capability packages (ARCHITECTURE.md: `controller/<capability>/`) hold their pure logic,
# their adapter and their `service`; the service is a service like those in
# `controller.services`, the rest sits below the services.
CAPABILITIES = (
    "draftpr",
    "ingress",
    "discovery",
    "replay",
    "portfolio",
    "summary",
    "accounts",
    "compat",
    "diffruns",
    "agentmanifest",
    "retention",
)
CAPABILITY_SERVICES = tuple(f"controller.{name}.service" for name in CAPABILITIES)


def is_service(module: str) -> bool:
    return (
        module == "controller.services"
        or module.startswith("controller.services.")
        or module in CAPABILITY_SERVICES
    )


def test_nothing_below_the_services_imports_a_service_or_the_scheduler() -> None:
    offenders = sorted(
        f"{module} imports {target}"
        for module, targets in module_graph().items()
        if module.startswith("controller.")
        and not is_service(module)
        and module != "controller.scheduler"
        for target in targets
        if is_service(target) or target == "controller.scheduler"
    )
    assert offenders == []


def test_services_do_not_import_the_controller_process() -> None:
    offenders = sorted(
        f"{module} imports controller.scheduler"
        for module, targets in module_graph().items()
        if is_service(module) and "controller.scheduler" in targets
    )
    assert offenders == []


def test_the_web_process_never_imports_the_scheduler() -> None:
    graph = module_graph()
    reached: dict[str, str] = {}  # module -> the module that imported it first
    pending = [m for m in graph if m == "web" or m.startswith("web.")]
    reached.update((m, m) for m in pending)
    while pending:
        module = pending.pop()
        for target in graph[module]:
            if target not in reached:
                reached[target] = module
                pending.append(target)
    assert "controller.scheduler" not in reached, reached.get("controller.scheduler")
    apscheduler = sorted(
        module
        for module in reached
        if module in graph
        and any(m.split(".")[0] == "apscheduler" for m in imported_modules(path_of(module)))
    )
    assert apscheduler == []


def path_of(module: str) -> Path:
    base = ROOT.joinpath(*module.split("."))
    # A module file wins over a data directory of the same name (controller/replay/catalog/).
    return base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__init__.py"


def test_the_graph_sees_from_imports() -> None:
    graph = module_graph()
    assert "controller.services.drift" in graph["web.api.watches"]  # `from ... import drift`
    assert "controller.model.watch" in graph["web.api.watches"]  # `from ...watch import ...`


# What the web shell may take from the controller: the services (all work goes through them),
# the shared models and errors, the base (settings, logs, crypto, the version), the database
# handle it opens sessions on, and two names of the store (the request id generator and the
# trial row a handler is given).
WEB_MAY_IMPORT = (
    "controller.services",
    *CAPABILITY_SERVICES,
    "controller.model",
    "controller.errors",
    "controller.settings",
    "controller.logs",
    "controller.crypto",
    "controller.store.db",
)
WEB_STORE_NAMES = {"controller.store.models.request_id", "controller.store.models.TrialSession"}


def controller_imports(path: Path) -> set[str]:
    """What a file takes from `controller`: each imported module, or `module.name` for each
    name imported from a module (`from controller import jobs` is `controller.jobs`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    taken: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            taken.update(a.name for a in node.names if a.name.startswith("controller."))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "controller" or node.module.startswith("controller."):
                taken.update(f"{node.module}.{alias.name}" for alias in node.names)
    return taken


def web_offenders(root: Path) -> list[str]:
    offenders = []
    for path in sorted(root.rglob("*.py")):
        for name in sorted(controller_imports(path)):
            allowed = name in WEB_STORE_NAMES or name == "controller.__version__"
            allowed = allowed or any(
                name == prefix or name.startswith(prefix + ".") for prefix in WEB_MAY_IMPORT
            )
            if not allowed:
                offenders.append(f"{path.relative_to(root)} imports {name}")
    return offenders


def test_the_web_shell_goes_through_the_services(tmp_path: Path) -> None:
    assert web_offenders(ROOT / "web") == []
    (tmp_path / "sample.py").write_text(
        "from controller import jobs\nfrom controller.store.models import Watch, request_id\n"
        "from controller.services import drift\nimport controller.checks\n"
    )
    assert web_offenders(tmp_path) == [
        "sample.py imports controller.checks",
        "sample.py imports controller.jobs",
        "sample.py imports controller.store.models.Watch",
    ]


# The domain decides; it does not encode. Wire formats and HTTP statuses belong to the services
# and the shells (`controller.services.preflight` encodes the run gate's rows, `web.api` picks
# the status).
DOMAIN = ("controller/policy.py", "controller/status.py", "controller/actions.py")
WIRE_LIBRARIES = ("orjson", "json", "flask", "werkzeug", "http")


def test_the_gate_domain_imports_no_wire_format() -> None:
    offenders = [
        f"{name} imports {module}"
        for name in DOMAIN
        for module in imported_modules(ROOT / name)
        if module.split(".")[0] in WIRE_LIBRARIES
    ]
    assert offenders == []


def test_cli_commands_go_through_the_services_and_not_through_each_other() -> None:
    """Each group's module under cli/commands/ stands alone (shared pieces are in
    cli/common.py), and no command reaches past the services into the reconcile engine, the
    store's rows or the report renderer."""
    engines = ("controller.reconcile", "controller.store.models", "controller.reports")
    offenders = []
    for path in sorted((ROOT / "cli").rglob("*.py")):
        name = path.relative_to(ROOT)
        for module in imported_modules(path):
            if module.startswith(engines):
                offenders.append(f"{name} imports {module}")
            if "commands" in path.parts and module.startswith("cli.commands."):
                offenders.append(f"{name} imports {module}")
    assert offenders == []


def test_the_demo_is_a_shell_of_its_own() -> None:
    """`demo` uses the controller's services (it runs driftgate as a child process, never the
    web app or the CLI in-process); only `driftgate demo` (cli/commands/demo.py) imports it,
    and the web process never does."""
    offenders = []
    for path in sorted((ROOT / "demo").rglob("*.py")):
        for module in imported_modules(path):
            if module.split(".")[0] in ("web", "cli", "flask", "click") or module.startswith(
                ("controller.reconcile", "controller.store.models", "controller.scheduler")
            ):
                offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    for package in ("web", "cli"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "cli" / "commands" / "demo.py":
                continue
            if any(m.split(".")[0] == "demo" for m in imported_modules(path)):
                offenders.append(f"{path.relative_to(ROOT)} imports demo")
    assert offenders == []
