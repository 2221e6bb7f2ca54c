"""Schemathesis over the whole `/openapi.json`, against an org that holds one of everything.

Each operation of the document is a test of its own (`schema.parametrize()`): Schemathesis'
examples, coverage and fuzzing phases with positive and negative data, seeded and bounded, and
the checks in `CONFIG`. Each test gets a fresh database with an org (pro plan) that already has
real objects, made through the API before the run: watches (one drifted, with an open incident
and a drift event; one checked and ok; one launched from a template and bound to an agent; one
declared in git), templates, agents, watch sets (from the API and from a git source), a fuse
trip and snapshot, and a preflight decision. Generated ids in paths, queries and bodies are
swapped for real ones in most positive cases (`World.use_real_values`), so an operation is
exercised past its 404, and every operation must answer 2xx at least once. A second test runs
Schemathesis' stateful mode over the links it infers (create, then read, change, delete), each
scenario from a freshly seeded org.

The app is served on a loopback port; checks fetch contracts from 127.0.0.1 only (a test
controller with a guarded fetcher, and no outbox deliveries), so nothing leaves the machine.
On Postgres only the deterministic phases run (see `CONFIG`); docs/decisions.md has the bound
and its figures.

Not `schemathesis.pytest.from_fixture`: its lazy loader sets `Function._nodeid`, which pytest
9.2 no longer has. The document is built at import by the same registry that serves
`/openapi.json`, and `test_the_app_serves_this_document` holds the two together.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import shutil
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import schemathesis
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, settings
from schemathesis import Case
from schemathesis.config import SchemathesisConfig
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation.stateful.state_machine import StepInput, StepOutput
from werkzeug.serving import WSGIRequestHandler, make_server

from controller.checks.engine import CheckInput, Fetched, contract_fetcher, run_check
from controller.crypto import SecretBox, load_secret_box
from controller.draftpr import service as draftpr
from controller.gitsources.reconcile import Reconciler
from controller.orgs import auth_service
from controller.orgs import service as org_service
from controller.scheduler import Controller
from controller.settings import Settings, load_settings
from controller.sources.http import FetchError, make_client
from controller.store.db import Database
from controller.summary import service as summary
from tests.conftest import HOSTED_ROUTES, ON_POSTGRES, OrgKey, empty_database, make_settings
from tests.gitrepos import RepoBuilder, isolated_git_config
from tests.servers import SpecServer, spec_server
from tests.specs import as_json, charges_spec
from web.api import REGISTRY

# Real processes end to end: left out of `make check`, run by `make test`.
pytestmark = pytest.mark.slow

SEED = 20260611
MAX_EXAMPLES = 10  # fuzzing cases per operation and mode; the coverage phase adds its own
STATEFUL_SCENARIOS = 15
STATEFUL_STEPS = 6
HOOK_SECRET = "schemathesis-hook-secret"

DOCUMENT = REGISTRY.openapi(load_settings(env={}))
REFUSED_BY_DESIGN = "^({})$".format(
    "|".join(
        re.escape(path)
        for path, item in DOCUMENT["paths"].items()
        for operation in item.values()
        if operation.get("x-driftgate-compat", {}).get("refused")
    )
)
CONFIG = SchemathesisConfig.from_dict(
    {
        "seed": SEED,
        "generation": {
            "max-examples": MAX_EXAMPLES,
            "deterministic": True,
            "database": "none",  # no example database in .hypothesis/
        },
        "phases": {
            # On Postgres (CI's second run) only the deterministic phases: their boundary
            # values (NUL characters, maximum lengths, extreme numbers) are where the stores
            # differ. Random fuzzing and the workflows run the same code on both; SQLite has them.
            "fuzzing": {"enabled": not ON_POSTGRES},
        },
        "checks": {
            # Every check runs (Schemathesis' default; none is switched off): a 5xx, a status,
            # content type, body or header the document does not give, schema-violating data
            # accepted, schema-valid data refused, a required header not enforced, an
            # undeclared method not answered 405 (with `Allow`), a request without credentials
            # not answered 401; the stateful test adds: a created object cannot be read, a
            # deleted one still can.
            # A schema-valid request may still be refused for a reason no schema can state:
            # 409 (a duplicate name, a managed object), 422 (a URL whose type cannot be
            # inferred, a target that cannot be sent to), 404 (an id the org does not have),
            # 429 (a rate limit).
            "positive_data_acceptance": {
                "expected-statuses": ["2XX", "401", "403", "404", "409", "422", "429"]
            },
        },
        "operations": [
            {
                # The hosted product's control-plane routes, refused by design: their only
                # answer is 501 `not_self_hosted` (docs/compat.md), held to it by
                # tests/compat/test_routes.py.
                "include-path-regex": REFUSED_BY_DESIGN,
                "enabled": False,
            },
            {
                # A repository's files: a request over the server's body limit is 413 before
                # any schema is read.
                "include-path-regex": "^/api/(repo/scan|coverage/.*|portfolio/compass)$",
                "checks": {
                    "negative_data_rejection": {
                        "expected-statuses": [
                            "400",
                            "401",
                            "403",
                            "404",
                            "405",
                            "406",
                            "409",
                            "413",
                            "415",
                            "422",
                            "428",
                            "429",
                            "5xx",
                        ]
                    }
                },
            },
        ],
    }
)
schema = schemathesis.openapi.from_dict(DOCUMENT, config=CONFIG)

# Findings of this run whose fixes belong to other changes in flight. Each operation here is
# still run with every check, and expected to fail until its fix lands; then it passes (pytest
# reports XPASS) and its entry goes.
KNOWN_FINDINGS: dict[str, str] = {}

# Operations whose handler waits for a check: they run with a test controller beside them.
WAITS_FOR_CHECKS = {"POST /api/watches/{watch_id}/check", "POST /v1/fuse/snapshots"}

Fetcher = Callable[[CheckInput], Fetched]


def loopback_only(fetch: Fetcher) -> Fetcher:
    """The fetcher of a test controller: 127.0.0.1 only, whatever URL a generated watch has."""

    def guarded(check: CheckInput) -> Fetched:
        if urlsplit(check.url).hostname != "127.0.0.1":
            raise FetchError(f"{check.url}: tests fetch from 127.0.0.1 only", "blocked_target")
        return fetch(check)

    return guarded


@pytest.fixture(scope="module")
def http_client() -> Iterator[httpx.Client]:
    with make_client(allow_private=True) as client:
        yield client


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, *args: Any, **kwargs: Any) -> None:
        return  # the app logs every request itself


@contextmanager
def serving(app: Flask) -> Iterator[str]:
    """The app on a loopback port, as clients reach it; yields its base URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextmanager
def running_checks(
    settings: Settings, database: Database, box: SecretBox, fetcher: Fetcher
) -> Iterator[None]:
    """A controller that only runs queued checks: no ticker, so no periodic checks and no
    outbox deliveries to the destinations generated requests configure."""
    controller = Controller(settings, database, box, concurrency=2, fetcher=fetcher)
    stop = threading.Event()

    def work() -> None:
        while not stop.wait(0.05):
            controller.dispatch()

    thread = threading.Thread(target=work, name="schemathesis-checks", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
        controller.stop(grace=5)


def git_files(url: str, template_url: str) -> dict[str, str]:
    """A git source's objects, read-only through the API (409 `managed_by_source`); the agent
    enforces (`production-guard`), so its drifted watch blocks it (preflight 409)."""
    return {
        ".driftgate/templates.yaml": f"""\
version: 1
templates:
  - name: git-template
    watchType: openapi
    urlPattern: {template_url}
""",
        ".driftgate/watch-sets.yaml": f"""\
version: 1
watchSets:
  - name: git-set
    watches:
      - name: git-watch
        url: {url}
        watchType: openapi
""",
        ".driftgate/agents.yaml": """\
version: 1
policies:
  pr-first:
    on_breaking: [notify, draft_pr]
agents:
  - id: git-agent
    policy: production-guard
    watches: [git-watch]
  - id: pr-agent
    policy: pr-first
    repoRef: acme/client@main
    watches: [git-watch]
""",
    }


@dataclass
class World:
    """The org under test, how to reach it, and the real values it holds."""

    base_url: str
    key: OrgKey
    server: SpecServer
    database: Database
    box: SecretBox
    fetcher: Fetcher
    start_checks: Callable[[], None]
    api: httpx.Client = field(init=False)
    path_values: dict[str, list[str]] = field(default_factory=dict)
    values: dict[str, list[str]] = field(default_factory=dict)
    statuses: dict[str, list[int]] = field(default_factory=dict)
    turns: dict[int, int] = field(default_factory=dict)  # by list of real values
    checking: bool = False

    def __post_init__(self) -> None:
        self.api = httpx.Client(base_url=self.base_url, headers=self.key.headers, trust_env=False)

    def call(self, method: str, path: str, body: Any = None, status: int = 200) -> Any:
        response = self.api.request(method, path, json=body)
        assert response.status_code == status, (method, path, response.text)
        return response.json()

    def check(self, watch_id: str) -> None:
        """Run a check of the watch now, in this thread."""
        now = datetime.now(UTC)
        run_check(self.database, watch_id, box=self.box, fetcher=self.fetcher, now=now)

    def use_real_values(
        self, case: Case, linked: Iterable[tuple[ParameterLocation, str | None]] = ()
    ) -> None:
        """Swap generated ids (and URLs) for real ones in most positive cases.

        Negative parts stay as generated: a real value there could make them valid, and so do
        the `linked` values a stateful step took from an earlier response. Each name takes its
        real values in turn and then keeps one generated value (an id the org does not have),
        so a seeded run swaps the same way every time.
        """
        kept = set(linked)
        for location, container in (
            (ParameterLocation.PATH, case.path_parameters),
            (ParameterLocation.QUERY, case.query),
            (ParameterLocation.BODY, case.body),
        ):
            if not container or (location, None) in kept:
                continue
            if not (case.meta and case.meta.is_negative_at(location)):
                names = self.path_values if location == ParameterLocation.PATH else self.values
                linked_names = {name for where, name in kept if where == location}
                real = {k: v for k, v in names.items() if k not in linked_names}
                self._swap(container, real)

    def _swap(self, value: Any, real: dict[str, list[str]]) -> Any:
        if isinstance(value, dict):
            for name, item in value.items():
                if name not in real:
                    value[name] = self._swap(item, real)
                elif isinstance(item, list):
                    value[name] = [self._pick(real[name], element) for element in item]
                else:
                    value[name] = self._pick(real[name], item)
        elif isinstance(value, list):
            return [self._swap(item, real) for item in value]
        return value

    def _pick(self, real: list[str], generated: Any) -> Any:
        turn = self.turns[id(real)] = self.turns.get(id(real), -1) + 1
        index = turn % (len(real) + 1)
        return real[index] if index < len(real) else generated


@dataclass
class Seeded:
    """An org seeded once with one of everything (`seed`), its database kept as a SQLite
    file: each test starts from a copy of it, as freshly seeded as if it had been seeded for
    that test, without doing it again (the seeding took over half of this module's time). The
    spec server, the git source and the data directory the seeded rows point at are shared."""

    directory: Path
    server: SpecServer
    key: OrgKey
    file: str
    path_values: dict[str, list[str]]
    values: dict[str, list[str]]


@contextmanager
def open_world(
    directory: Path,
    database: Database,
    key: OrgKey,
    client: httpx.Client,
    server: SpecServer,
    seeded: Seeded | None = None,
) -> Iterator[World]:
    """The org of `key` served on a loopback port: seeded with one of everything, or
    `seeded` already (its database a copy of the seeded one, the rest shared)."""
    with ExitStack() as stack:
        stack.enter_context(isolated_git_config(directory / "gitconfig"))
        url = server.url("/openapi.json")
        steady_url = server.url("/steady.json")
        git_url = server.url("/git.json")
        repo = directory / "remote.git"
        settings = make_settings(
            directory,
            database_url=database.url,
            allow_private_targets=True,
            github_webhook_secret=HOOK_SECRET,
            coverage_preview_per_minute=1_000_000,
            sources=[{"name": "fleet", "org": key.org_name, "url": repo.as_uri()}],
            **HOSTED_ROUTES,  # every operation answers 2xx at least once: served here
        )
        box = load_secret_box(settings, create=True)
        if seeded is None:
            server.set("/openapi.json", as_json(charges_spec()))
            server.set("/steady.json", as_json(charges_spec()))
            server.set("/git.json", as_json(charges_spec()))
            RepoBuilder(repo).commit(git_files(git_url, steady_url))
            spec = settings.source("fleet")
            assert spec is not None
            applied = Reconciler(settings, database, box, env={}).reconcile(spec)
            assert applied.result == "applied", applied.as_dict()

        from web.app import create_app

        app: Flask = create_app(settings, database=database)
        fetcher = loopback_only(contract_fetcher(settings, client))

        def start_checks() -> None:
            stack.enter_context(running_checks(settings, database, box, fetcher))

        base_url = stack.enter_context(serving(app))
        world = World(base_url, key, server, database, box, fetcher, start_checks)
        stack.callback(world.api.close)
        if seeded is None:
            seed(world, url, steady_url, git_url)
        else:
            world.path_values = {k: list(v) for k, v in seeded.path_values.items()}
            world.values = {k: list(v) for k, v in seeded.values.items()}
        yield world


@pytest.fixture(scope="module")
def seeded(
    tmp_path_factory: pytest.TempPathFactory, _template_database: str, http_client: httpx.Client
) -> Iterator[Seeded | None]:
    """The seeded org of this module's tests (None on Postgres: each test seeds its own, as
    the database is no file to copy)."""
    if ON_POSTGRES:
        yield None
        return
    directory = tmp_path_factory.mktemp("seeded")
    path = directory / "seeded.db"
    shutil.copyfile(_template_database, path)
    database = Database(f"sqlite:///{path}")
    with database.transaction() as session:
        org = org_service.create_org(session, "acme", "pro", actor="test")
        issued = auth_service.create_api_key(session, org, "test", actor="test")
        key = OrgKey(org.id, org.name, issued.secret, issued.key.id)
    with spec_server() as server:
        with open_world(directory, database, key, http_client, server) as world:
            values = world.path_values, world.values
        database.dispose()
        yield Seeded(directory, server, key, str(path), *values)


@contextmanager
def fresh_world(
    request: pytest.FixtureRequest,
    seeded: Seeded | None,
    directory: Path,
    database: Database,
    client: httpx.Client,
) -> Iterator[World]:
    """A world whose org is freshly seeded: a copy of `seeded`, or seeded now (Postgres)."""
    if seeded is not None:
        empty_database(database, seeded.file)
        with open_world(
            seeded.directory, database, seeded.key, client, seeded.server, seeded
        ) as world:
            yield world
        return
    empty_database(database, request.getfixturevalue("_template_database"))
    key: OrgKey = request.getfixturevalue("make_org")("acme", "pro")
    with spec_server() as server, open_world(directory, database, key, client, server) as world:
        yield world


@pytest.fixture
def world(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    database: Database,
    seeded: Seeded | None,
    http_client: httpx.Client,
) -> Iterator[World]:
    with fresh_world(request, seeded, tmp_path, database, http_client) as world:
        finding = KNOWN_FINDINGS.get(request.node.name.partition("[")[2].removesuffix("]"))
        if finding is not None:
            request.applymarker(pytest.mark.xfail(reason=finding))
        failed = request.session.testsfailed
        yield world
        if finding is None and request.session.testsfailed == failed:  # a failure stops early
            for label, codes in world.statuses.items():
                assert any(200 <= code < 300 for code in codes), (
                    f"no case of {label} was answered 2xx (only {sorted(set(codes))}): "
                    "seed the org with what it needs"
                )


def seed(world: World, url: str, steady_url: str, git_url: str) -> None:
    """One of everything the API names, made through the API."""
    drifting = world.call("POST", "/api/watches", {"name": "payments", "url": url}, 201)
    by_name = {w["name"]: w["id"] for w in world.call("GET", "/api/watches")["watches"]}
    for watch_id in (drifting["id"], by_name["git-watch"]):
        world.check(watch_id)  # the baseline
    breaking = as_json(charges_spec(required=("id",), refunds=False))
    world.server.set("/openapi.json", breaking)
    world.server.set("/git.json", breaking)
    for watch_id in (drifting["id"], by_name["git-watch"]):
        world.check(watch_id)  # breaking drift: an incident and a drift event
    events = world.call("GET", "/api/drift")["events"]
    assert len(events) == 2, "each drifted watch has a drift event"
    incidents = world.call("GET", "/api/incidents")["incidents"]
    steady = world.call(
        "POST", "/api/watches", {"name": "orders", "url": steady_url, "watchType": "openapi"}, 201
    )
    world.check(steady["id"])
    template = world.call(
        "POST",
        "/api/templates",
        {
            "name": "billing",
            "watchType": "openapi",
            "urlPattern": url,
            "policyPreset": "notify-only",
        },
        201,
    )
    launched = world.call(
        "POST",
        "/api/watches/from-template",
        {"templateId": template["id"], "name": "billing-1", "agent": {"id": "billing-bot"}},
        201,
    )
    watch_set = world.call(
        "POST", "/api/org/watch-sets", {"name": "prod", "watchIds": [steady["id"]]}, 201
    )
    decision = world.call("POST", "/api/preflight", {"watchIds": [drifting["id"]]})
    world.call(
        "POST",
        "/v1/fuse/trips",
        {
            "tripId": "trip-1",
            "reason": "contract_drift_blocked",
            "decisionId": decision["decisionId"],
            "watchId": drifting["id"],
        },
        201,
    )
    world.call("POST", "/v1/fuse/snapshots", {"watchId": steady["id"], "waitSeconds": 0}, 201)
    # Draft pull requests (stub mode: this world has no GitHub App credentials; the link is
    # recorded unverified, and the webhook needs none).
    world.call("PUT", "/api/org/products/draftpr_repo", {"enabled": True})
    world.call("PUT", "/api/org/products/replay_cloud", {"enabled": True})
    world.call("POST", "/v1/draftpr/installations", {"installationId": "4242"}, 201)
    draft = world.call(
        "POST",
        "/v1/draftpr/webhook",
        {
            "watchId": drifting["id"],
            "driftEventId": events[0]["id"]
            if events[0]["watchId"] == drifting["id"]
            else events[1]["id"],
            "repoFullName": "acme/client",
            "changes": [{"path": "/paths", "severity": "breaking", "message": "gone"}],
        },
        201,
    )
    published = world.call(
        "POST", "/v1/replay/fixtures/publish", {"watchId": drifting["id"], "public": True}
    )
    dashboard = world.call(
        "POST",
        "/api/portfolio/dashboards",
        {"name": "mine", "panels": ["health"]},
        201,
    )
    state = draftpr.sign_state(world.box, world.key.org_id, datetime.now(UTC))
    # The weekly summary's relay (never connected to here) and one recipient's unsubscribe link.
    world.call(
        "PUT",
        "/api/org/smtp",
        {"host": "smtp.example.com", "fromAddress": "driftgate@example.com"},
    )
    unsubscribe = summary.unsubscribe_token(world.box, world.key.org_id, "ops@example.com")
    world.call(
        "PUT",
        "/api/ingress-profiles/order",
        {"id": "order", "version": 1, "schema": {}},
        201,
    )
    # A named destination (a webhook never reached: no check or delivery runs here).
    destination = world.call(
        "POST",
        "/api/org/destinations",
        {"name": "hook", "kind": "webhook", "secrets": {"url": "https://hooks.example.com/x"}},
        201,
    )
    # Diff runs: the documents as text (JSON), a run to read.
    before, after = as_json(charges_spec()), breaking
    run = world.call("POST", "/api/openapi/diffs", {"before": before, "after": after}, 201)
    sets = {s["name"]: s["id"] for s in world.call("GET", "/api/org/watch-sets")["watchSets"]}
    templates = {t["name"]: t["id"] for t in world.call("GET", "/api/templates")["templates"]}
    watch_ids = [drifting["id"], steady["id"], launched["watch"]["id"], by_name["git-watch"]]
    agent_ids = ["billing-bot", "git-agent"]
    # By the names the paths give them, and the names in queries and bodies.
    world.path_values = {
        "watch_id": watch_ids,
        "event_id": [e["id"] for e in events],
        "incident_id": [i["id"] for i in incidents],
        "agent_id": agent_ids,
        "set_id": [watch_set["id"], sets["git-set"]],
        "template_id": [template["id"], templates["git-template"]],
        "name": ["fleet"],
        "product": ["draftpr_repo", "toolmanifest_org"],
        "draft_pr_id": [draft["draftPrId"]],
        # "order" exists at version 1 (a PUT needs a higher one); "fresh" does not yet.
        "profile_id": ["order", "fresh"],
        "row_id": [published["row"]["id"]],
        "dashboard_id": [dashboard["id"]],
        "run_id": [run["id"]],
        "destination_id": [destination["id"]],
    }
    world.values = {
        "watchId": watch_ids,
        "watchIds": watch_ids,
        "agentId": agent_ids,
        "watchSetId": [watch_set["id"]],
        "templateId": [template["id"], templates["git-template"], "system/stripe-openapi"],
        "decisionId": [decision["decisionId"]],
        "url": [url, steady_url],
        "urlPattern": [steady_url],
        "draftPrId": [draft["draftPrId"]],
        "driftEventId": [e["id"] for e in events],
        "state": [state],
        "profileId": ["order"],
        "id": ["order", "fresh"],
        "token": [unsubscribe],
        "before": [before],
        "after": [after],
        # A destination's kind and what that kind needs (a webhook: its URL, no settings).
        "kind": ["webhook"],
        "settings": [{}],
        "secrets": [{"url": "https://hooks.example.com/y"}],
    }


def call_kwargs(case: Case, world: World) -> dict[str, Any]:
    """The keyword arguments of a case's call: where the app is, and the org's key."""
    if case.operation.label in WAITS_FOR_CHECKS and not world.checking:
        world.start_checks()
        world.checking = True
    headers = dict(world.key.headers)
    if case.operation.label in ("POST /hooks/github", "POST /v1/draftpr/github/webhook"):
        digest = hmac.new(HOOK_SECRET.encode(), b"", hashlib.sha256).hexdigest()
        headers["X-Hub-Signature-256"] = f"sha256={digest}"  # the document gives no body
    return {"base_url": world.base_url, "headers": headers}


def test_the_app_serves_this_document(client: FlaskClient) -> None:
    assert client.get("/openapi.json").get_json() == DOCUMENT


@schema.parametrize()
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_every_operation_honours_the_document(case: Case, world: World) -> None:
    # One `world` per operation, shared by that operation's cases on purpose.
    world.use_real_values(case)
    kwargs = call_kwargs(case, world)
    response = case.call(**kwargs)
    if case.method.upper() == case.operation.method.upper():  # not a probe of another method
        world.statuses.setdefault(case.operation.label, []).append(response.status_code)
    case.validate_response(response, transport_kwargs=kwargs)


@pytest.mark.skipif(ON_POSTGRES, reason="the same HTTP paths as on SQLite; see CONFIG's phases")
def test_workflows_honour_the_document(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    database: Database,
    seeded: Seeded | None,
    http_client: httpx.Client,
) -> None:
    """Schemathesis' stateful mode: chains of calls along the links it infers between
    operations (a watch created, then read, changed, paused, deleted, read again), with the
    same checks plus its stateful ones (a created object can be read; a deleted one is gone).

    Each scenario starts from a freshly seeded org: Hypothesis requires that the same choices
    meet the same answers, which a server changed by earlier scenarios would not give
    (FlakyStrategyDefinition). For the same reason the check of a watch is left out: whether
    it answers 200 or 202 depends on how fast the controller picks it up.
    """
    scenarios = iter(range(STATEFUL_SCENARIOS * 10))
    workflows = schema.exclude(method="POST", path="/api/watches/{watch_id}/check")

    class Workflow(workflows.as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            self.stack = ExitStack()
            directory = tmp_path / f"scenario-{next(scenarios)}"
            directory.mkdir()
            self.world = self.stack.enter_context(
                fresh_world(request, seeded, directory, database, http_client)
            )

        def teardown(self) -> None:
            self.stack.close()

        def step(self, input: StepInput) -> StepOutput:
            self.world.use_real_values(input.case, linked=input.applied_parameters)
            return super().step(input)

        def get_call_kwargs(self, case: Case) -> dict[str, Any]:
            return call_kwargs(case, self.world)

    Workflow.run(
        settings=settings(
            max_examples=STATEFUL_SCENARIOS,
            stateful_step_count=STATEFUL_STEPS,
            derandomize=True,
            database=None,
            deadline=None,
        )
    )
