"""One live driftgate per test module (`driftgate up` under gunicorn, on a SQLite file, with a
controller for checks) and the orgs the hosted clients act for. A module that overrides the
`behind_tls` fixture to answer True gets nginx in front of it (tests/compat/tlsfront.py), as
docs/operations.md runs it, for the clients that take only an https:// base URL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml

from controller.orgs import auth_service
from controller.orgs import service as org_service
from controller.store import migrate
from controller.store.db import Database
from tests.compat.tlsfront import TlsFront, tls_front
from tests.gitrepos import RepoBuilder, isolated_git_config
from tests.processes import (
    DRIFTGATE,
    driftgate_env,
    free_port,
    spawn,
    stop_process,
    wait_until,
    wait_until_healthy,
)
from tests.servers import SpecServer, spec_server
from tests.specs import as_json, charges_spec

# Real processes end to end: left out of `make check`, run by `make test`.
pytestmark = pytest.mark.slow

# acme's git source: a watch and an agent gated by an enforcing policy (fuseguard's agent mode).
AGENT = "billing-bot"
AGENT_WATCH = "ledger-git"


@dataclass
class Live:
    """A running driftgate and the credentials of its orgs."""

    base: str
    key: str  # acme: pro, with replay_cloud
    beta_key: str  # beta: pro, with replay_cloud
    plain_key: str  # plain: pro, no overlay products
    specs: SpecServer
    home: Path  # HOME of the clients (fuseguard keeps ~/.fuseguard there)
    tls: TlsFront | None = None  # nginx in front, when the module asks for it (`behind_tls`)
    database_url: str = ""  # for what only a git source declares (an agent's approval rules)

    def http(self, key: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key or self.key}", "User-Agent": "driftgate-tests"}
        return httpx.Client(base_url=self.base, headers=headers, timeout=90)

    def watch_id(self, name: str) -> str:
        with self.http() as http:
            watches = http.get("/api/watches", params={"limit": 200}).json()["watches"]
        found: str = next(w["id"] for w in watches if w["name"] == name)
        return found

    def drift(self, watch_id: str, path: str) -> None:
        """Check the watch (its baseline), break its contract, check again: drifted."""
        with self.http() as http:
            first = http.post(f"/api/watches/{watch_id}/check?wait=60").json()
            assert first["watch"]["driftStatus"] == "ok", first
            self.specs.set(path, as_json(charges_spec(refunds=False)))
            second = http.post(f"/api/watches/{watch_id}/check?wait=60").json()
            assert second["watch"]["driftStatus"] == "drifted", second

    def drifted_watch(self, name: str) -> str:
        """A watch of acme checked twice: a baseline, then breaking drift (an open incident)."""
        url = self.specs.set(f"/{name}.json", as_json(charges_spec()))
        with self.http() as http:
            watch = http.post("/api/watches", json={"name": name, "url": url}).json()
            first = http.post(f"/api/watches/{watch['id']}/check?wait=60").json()
            assert first["watch"]["driftStatus"] == "ok", first
            self.specs.set(f"/{name}.json", as_json(charges_spec(refunds=False)))
            second = http.post(f"/api/watches/{watch['id']}/check?wait=60").json()
            assert second["watch"]["driftStatus"] == "drifted", second
        watch_id: str = watch["id"]
        return watch_id


@pytest.fixture(scope="module")
def behind_tls() -> bool:
    """Whether the module's driftgate sits behind nginx (a module overrides it)."""
    return False


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, behind_tls: bool) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp("live")
    url = f"sqlite:///{tmp / 'driftgate.db'}"
    database = Database(url)
    migrate.upgrade(database)
    keys = {}
    with database.transaction() as session:
        orgs = (("acme", ("replay_cloud",)), ("beta", ("replay_cloud",)), ("plain", ()))
        for name, products in orgs:
            org = org_service.create_org(session, name, "pro", actor="test")
            for product in products:
                org_service.set_product(session, org, product, True, actor="test")
            keys[name] = auth_service.create_api_key(session, org, "compat", actor="test").secret
    database.dispose()
    port = free_port()
    # The hosted clients call the hosted product's anonymous routes (a trial session, the
    # coverage preview, funnel events): switched on, as an operator serving them would.
    settings = {
        "workers": "1",
        "allow_private_targets": "true",
        "trial_sessions_enabled": "true",
        "funnel_events_enabled": "true",
        "coverage_preview_enabled": "true",
    }
    tls_port = free_port() if behind_tls else None
    if tls_port is not None:
        # docs/operations.md, "Behind a TLS proxy": one proxy, and the public https URL.
        settings |= {
            "trusted_proxy_hops": "1",
            "public_base_url": f"https://127.0.0.1:{tls_port}",
        }
    env = driftgate_env(url, tmp, **settings)
    log_path = tmp / "server.log"
    logs = [log_path]
    with (
        log_path.open("w") as log,
        spec_server() as specs,
        isolated_git_config(tmp / "gitconfig"),
        ExitStack() as fronts,
    ):
        config = git_source(tmp, specs)
        process = spawn(
            [*DRIFTGATE, "--config", str(config), "up", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=log,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_until_healthy(base, process, log_path)
            agent_status = f"{base}/api/agents/{AGENT}/status"
            auth = {"Authorization": f"Bearer {keys['acme']}"}
            # The controller's first reconcile of the source makes the agent.
            wait_until(lambda: httpx.get(agent_status, headers=auth, timeout=60).status_code == 200)
            home = tmp / "home"
            home.mkdir()
            front = None
            if tls_port is not None:
                front = fronts.enter_context(tls_front(tmp / "nginx", tls_port, port))
                logs.extend(front.logs)
            yield Live(
                base,
                keys["acme"],
                keys["beta"],
                keys["plain"],
                specs,
                home,
                front,
                database_url=url,
            )
        finally:
            fronts.close()
            stop_process(process)
    # No secret reaches the server's log, nor the proxy's.
    for path in logs:
        text = path.read_text()
        assert not [key for key in keys.values() if key in text], path


def git_source(tmp: Path, specs: SpecServer) -> Path:
    """A git repository of acme declaring a watch and an agent under `staging-strict`, and the
    configuration file that names it as a source."""
    url = specs.set(f"/{AGENT_WATCH}.json", as_json(charges_spec()))
    repo = RepoBuilder(tmp / "fleet.git")
    watch_sets = {
        "version": 1,
        "watchSets": [
            {
                "name": "ledger",
                "watches": [{"name": AGENT_WATCH, "url": url, "watchType": "openapi"}],
            }
        ],
    }
    agents = {
        "version": 1,
        "agents": [{"id": AGENT, "policy": "staging-strict", "watches": [AGENT_WATCH]}],
    }
    repo.commit(
        {
            ".driftgate/watch-sets.yaml": yaml.safe_dump(watch_sets),
            ".driftgate/agents.yaml": yaml.safe_dump(agents),
        }
    )
    config = tmp / "driftgate.yaml"
    config.write_text(
        yaml.safe_dump({"sources": [{"name": "fleet", "org": "acme", "url": str(repo.path)}]})
    )
    return config
