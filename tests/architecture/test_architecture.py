"""The arrows of ARCHITECTURE.md: `controller` never imports web, cli, flask or click."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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


# The layers (docs/architecture.md), from the top: the shells (web, cli, demo, and
# controller.scheduler, the controller process); the use cases (every capability package's
# `service` and `<topic>_service` modules); the rest of each capability package (its pure logic,
# its engine, its adapter); the adapters (store, sources, events); the domain every layer reads
# (model, diffs, and the contract kinds that name the diff engines); the base (settings, errors,
# logs, crypto, registry, collector, loopback, metrics, tracing).
# A module's layer follows from its name, so a new module needs no list to be placed.

PACKAGES = ("controller", "web", "cli", "demo")
BASE = {
    "controller",
    "controller.settings",
    "controller.errors",
    "controller.logs",
    "controller.crypto",
    "controller.registry",
    "controller.collector",
    "controller.loopback",
    "controller.targets",
    "controller.metrics",
    "controller.tracing",
}
DOMAIN_PACKAGES = ("controller.model", "controller.diffs", "controller.contracts")
ADAPTER_PACKAGES = ("controller.store", "controller.sources", "controller.events")
LAYERS = ("base", "domain", "adapter", "capability", "service", "shell")


@cache
def module_graph() -> dict[str, set[str]]:
    """Each module of the project and the project modules it imports (at any depth of its
    code: an import inside a function counts too). Read once per test process; callers do
    not change it."""
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


def within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def is_service(module: str) -> bool:
    """A use case: a capability package's `service` or `<topic>_service` module."""
    leaf = module.rsplit(".", 1)[-1]
    return module.startswith("controller.") and (leaf == "service" or leaf.endswith("_service"))


def layer_of(module: str) -> str:
    if not module.startswith("controller") or module == "controller.scheduler":
        return "shell"
    if module in BASE:
        return "base"
    if within(module, DOMAIN_PACKAGES):
        return "domain"
    if within(module, ADAPTER_PACKAGES):
        return "adapter"
    return "service" if is_service(module) else "capability"


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    rank = {name: index for index, name in enumerate(LAYERS)}
    return sorted(
        f"{module} ({layer_of(module)}) imports {target} ({layer_of(target)})"
        for module, targets in graph.items()
        for target in targets
        if rank[layer_of(target)] > rank[layer_of(module)]
    )


def test_no_import_runs_up_a_layer() -> None:
    """Every arrow points down or stays in its layer; there is no list of exceptions."""
    assert upward_imports(module_graph()) == []


def test_the_layer_test_sees_an_upward_import() -> None:
    graph = {
        "controller.diffs.core": {"controller.store.db"},
        "controller.store.db": {"controller.settings"},
        "controller.checks.engine": {"controller.drift.service"},
    }
    assert upward_imports(graph) == [
        "controller.checks.engine (capability) imports controller.drift.service (service)",
        "controller.diffs.core (domain) imports controller.store.db (adapter)",
    ]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The circles of imports: strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_circle_of_imports() -> None:
    graph = module_graph()
    # A package's __init__ that imports its own modules is not a circle of design.
    graph = {m: {t for t in ts if not m.startswith(t + ".")} for m, ts in graph.items()}
    assert cycles(graph) == []


def test_the_circle_finder_sees_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


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
    assert "controller.drift.service" in graph["web.api.watches"]  # `from ... import drift`
    assert "controller.model.watch" in graph["web.api.watches"]  # `from ...watch import ...`


# What the web shell may take from the controller: the services (all work goes through them),
# the shared models and errors, the contract kinds (the console's type lists and labels), the
# base (settings, logs, tracing, crypto, the version), the database handle it opens sessions
# on, and two names of the store (the request id generator and the trial row a handler is
# given).
WEB_MAY_IMPORT = (
    "controller.model",
    "controller.contracts",
    "controller.errors",
    "controller.settings",
    "controller.logs",
    "controller.tracing",
    "controller.crypto",
    "controller.store.db",
)
WEB_STORE_NAMES = {"controller.store.models.request_id", "controller.store.models.TrialSession"}


def controller_imports(path: Path) -> set[str]:
    """What a file takes from `controller`: each imported module, or `module.name` for each
    name imported from a module (`from controller.store import jobs` is `controller.store.jobs`)."""
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
            allowed = allowed or is_service(name) or is_service(name.rsplit(".", 1)[0])
            allowed = allowed or any(
                name == prefix or name.startswith(prefix + ".") for prefix in WEB_MAY_IMPORT
            )
            if not allowed:
                offenders.append(f"{path.relative_to(root)} imports {name}")
    return offenders


def test_the_web_shell_goes_through_the_services(tmp_path: Path) -> None:
    assert web_offenders(ROOT / "web") == []
    (tmp_path / "sample.py").write_text(
        "from controller.store import jobs\nfrom controller.store.models import Watch, request_id\n"
        "from controller.drift import service\nimport controller.checks.engine\n"
    )
    assert web_offenders(tmp_path) == [
        "sample.py imports controller.checks.engine",
        "sample.py imports controller.store.jobs",
        "sample.py imports controller.store.models.Watch",
    ]


# The domain decides; it does not encode. Wire formats and HTTP statuses belong to the services
# and the shells (`controller.gate.service` encodes the run gate's rows, `web.api` picks
# the status).
DOMAIN = (
    "controller/agents/policy.py",
    "controller/watches/status.py",
    "controller/agents/actions.py",
)
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
    engines = (
        "controller.gitsources.reconcile",
        "controller.store.models",
        "controller.diffs.reports",
    )
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
                (
                    "controller.gitsources.reconcile",
                    "controller.store.models",
                    "controller.scheduler",
                )
            ):
                offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    for package in ("web", "cli"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "cli" / "commands" / "demo.py":
                continue
            if any(m.split(".")[0] == "demo" for m in imported_modules(path)):
                offenders.append(f"{path.relative_to(ROOT)} imports demo")
    assert offenders == []
