"""Prometheus metrics of real processes (issue 43, point 1): `driftgate up` answers `/metrics` on
its serving port for every process of the run (the gunicorn workers and the controller it
started), behind the metrics token; a controller alone serves its own on `--metrics-port`;
and Debian's `prometheus` binary, when installed, scrapes it.

What happens between two scrapes is real: a reconcile of a git repository (applied, then
stalled on a bad commit), checks of a loopback vendor (the baseline, then drift), a
preflight, deliveries to a loopback webhook receiver, a controller that stops answering
(its queue grows and lags), a controller killed in the middle of a check (its lease expires
and the reaper hands the job on). Each exposition is parsed with prometheus_client's parser.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from sqlalchemy import select

from controller.store.db import Database
from controller.store.models import ControllerHeartbeat
from tests.conftest import OrgKey
from tests.factories import make_watches
from tests.gitrepos import RepoBuilder, isolated_git_config
from tests.processes import DRIFTGATE, PATIENCE, driftgate_env, free_port, wait_until
from tests.receivers import Receiver
from tests.scrapes import scrape
from tests.servers import SpecServer, spec_server
from tests.specs import as_json, charges_spec
from tests.system.conftest import ROOT, child_env, conditions, driftgate

pytestmark = pytest.mark.slow

TOKEN = "scrape-token-for-the-tests"
WATCH_SET = """\
version: 1
watchSets:
  - name: fleet
    watches:
      - name: fleet-api
        url: {url}
        watchType: {kind}
"""


@contextmanager
def started(command: list[str], log_path: Path, env: dict[str, str]) -> Iterator[Any]:
    """A subprocess in its own session; SIGTERM, then SIGKILL to its whole group, at the end."""
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            env=env,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            yield process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                with suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=30)
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def wait_for(what: str, probe: Callable[[], Any], log_path: Path, timeout: float = PATIENCE) -> Any:
    """Call `probe` until it returns something true; fail with the server's log otherwise."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except httpx.TransportError as exc:
            last = exc
        if last and not isinstance(last, Exception):
            return last
        time.sleep(0.2)
    raise AssertionError(
        f"waiting for {what}; last seen: {last!r}\n" + log_path.read_text(errors="replace")[-6000:]
    )


def controller_pid(database: Database) -> int:
    """The pid of the one controller running on the store (its heartbeat's worker id is
    `host:pid:object`)."""
    with database.session() as session:
        (worker,) = session.scalars(select(ControllerHeartbeat.worker)).all()
    return int(worker.split(":")[1])


@pytest.fixture
def specs() -> Iterator[SpecServer]:
    with spec_server() as running:
        yield running


def test_up_answers_for_all_its_processes_and_every_metric_moves(
    tmp_path: Path, database: Database, specs: SpecServer
) -> None:
    fleet_url = specs.set("/fleet.json", as_json(charges_spec()))
    local_url = specs.set("/openapi.json", as_json(charges_spec()))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with isolated_git_config(tmp_path / "gitconfig"):
        repo = RepoBuilder(tmp_path / "fleet.git")
        repo.commit({".driftgate/watch-sets.yaml": WATCH_SET.format(url=fleet_url, kind="openapi")})
        config = {
            "data_dir": str(tmp_path / "data"),
            "database_url": database.url,
            "port": port,
            "workers": 2,
            "threads": 4,
            "metrics_token": TOKEN,
            "sources": [{"name": "fleet", "org": "acme", "url": str(repo.path), "interval": "10s"}],
        }
        config_path = tmp_path / "driftgate.yaml"
        config_path.write_text(yaml.safe_dump(config))
        driftgate(config_path, "orgs", "create", "acme")
        key = driftgate(config_path, "keys", "create", "--org", "acme")
        secret = driftgate(config_path, "orgs", "webhook-secret", "acme")
        receiver = Receiver(secret=secret)
        log_path = tmp_path / "up.log"
        # The vendor and the receiver are on loopback (the environment wins over the file).
        env = {**child_env(), "DRIFTGATE_ALLOW_PRIVATE_TARGETS": "true"}
        try:
            with (
                started([*DRIFTGATE, "--config", str(config_path), "up"], log_path, env),
                httpx.Client(
                    base_url=base,
                    headers={"Authorization": f"Bearer {key}", "User-Agent": "driftgate-tests"},
                    timeout=40,
                ) as http,
            ):
                _exercise(http, base, repo, receiver, database, log_path, specs, local_url)
        finally:
            receiver.close()


def _exercise(
    http: httpx.Client,
    base: str,
    repo: RepoBuilder,
    receiver: Receiver,
    database: Database,
    log_path: Path,
    specs: SpecServer,
    local_url: str,
) -> None:
    wait_for("the server", lambda: http.get("/health").status_code == 200, log_path)

    def source() -> dict[str, Any]:
        (found,) = [s for s in http.get("/api/sources").json()["sources"] if s["name"] == "fleet"]
        return dict(found)

    wait_for("the first reconcile", lambda: conditions(source()).get("Ready") == "True", log_path)
    # Without the token, or with the API key, no metrics.
    assert httpx.get(f"{base}/metrics").status_code == 401
    assert http.get("/metrics").status_code == 401
    before = scrape(base, TOKEN)
    assert before.value("driftgate_database_up") == 1
    # The controller of `up` wrote these (the first reconcile, the fleet watch's first check):
    # the web port answers for it too.
    assert before.value("driftgate_reconciles_total", source="fleet", result="applied") >= 1
    assert before.value("driftgate_jobs_claimed_total", kind="reconcile") >= 1

    # A check (the baseline), drift on a second one, an incident and two deliveries.
    assert (
        http.put(
            "/api/org/notification-defaults",
            json={"destination": {"kind": "webhook", "url": receiver.url}},
        ).status_code
        == 200
    )
    watch = http.post("/api/watches", json={"name": "local", "url": local_url}).json()
    first = http.post(f"/api/watches/{watch['id']}/check?wait=60").json()
    assert first["watch"]["driftStatus"] == "ok"
    specs.set("/openapi.json", as_json(charges_spec(refunds=False)))  # refunds are gone
    second = http.post(f"/api/watches/{watch['id']}/check?wait=60").json()
    assert second["watch"]["driftStatus"] == "drifted"
    # A preflight on the drifted watch, answered by a web worker.
    gate = http.post("/api/preflight", json={"watchIds": [watch["id"]]})
    assert gate.status_code == 200 and gate.json()["allowed"] is False
    wait_for("two deliveries", lambda: len(receiver.received) >= 2, log_path)
    # A bad commit: a watch type that does not exist. Its reconcile stalls.
    bad = repo.commit({".driftgate/watch-sets.yaml": WATCH_SET.format(url=local_url, kind="x")})
    assert http.post("/api/sources/fleet/reconcile").status_code == 202
    wait_for(
        "the stalled reconcile",
        lambda: (
            source()["lastAttemptedRevision"] == bad and conditions(source())["Stalled"] == "True"
        ),
        log_path,
    )

    # The controller stops answering (SIGSTOP): a check asked for now waits in the queue, and
    # its lag grows; once it goes on (SIGCONT), the queue empties.
    pid = controller_pid(database)
    os.kill(pid, signal.SIGSTOP)
    try:
        assert http.post(f"/api/watches/{watch['id']}/check").status_code == 202
        stuck = wait_for(
            "a lagging queue",
            lambda: (
                (s := scrape(base, TOKEN)).value("driftgate_job_lag_seconds", kind="check") >= 1
                and s
            ),
            log_path,
        )
    finally:
        os.kill(pid, signal.SIGCONT)
    assert stuck.value("driftgate_jobs_queued", kind="check") >= 1
    drained = wait_for(
        "the queue drained",
        lambda: (
            (s := scrape(base, TOKEN)).value("driftgate_jobs_queued", kind="check") == 0
            and s.value("driftgate_job_leases", kind="check", state="running") == 0
            and s
        ),
        log_path,
    )
    assert drained.value("driftgate_job_lag_seconds", kind="check") == 0

    after = scrape(base, TOKEN)
    moved = [
        ("driftgate_checks_total", {"type": "openapi", "result": "baseline"}),
        ("driftgate_checks_total", {"type": "openapi", "result": "changed"}),
        ("driftgate_check_duration_seconds_count", {"type": "openapi"}),
        ("driftgate_check_duration_seconds_sum", {"type": "openapi"}),
        ("driftgate_preflight_total", {"decision": "blocked"}),
        ("driftgate_preflight_duration_seconds_count", {}),
        ("driftgate_deliveries_total", {"channel": "webhook", "result": "success"}),
        ("driftgate_delivery_duration_seconds_count", {"channel": "webhook"}),
        ("driftgate_reconciles_total", {"source": "fleet", "result": "stalled"}),
        ("driftgate_reconcile_duration_seconds_count", {"source": "fleet"}),
        ("driftgate_reconcile_errors_total", {"source": "fleet"}),
        ("driftgate_jobs_claimed_total", {"kind": "check"}),
        ("driftgate_incidents_open", {"state": "open"}),
        ("driftgate_watches", {"status": "drifted"}),
    ]
    for name, labels in moved:
        assert after.value(name, **labels) > before.value(name, **labels), (name, labels)
    assert after.value("driftgate_deliveries_total", channel="webhook") >= 2
    assert after.value("driftgate_database_up") == 1
    # Every web worker answers the same totals (they are added up from the run's directory):
    # each scrape is a new connection, which either worker may take. The one preflight was
    # counted by one of them; the controller's schedule may add checks meanwhile.
    totals = {scrape(base, TOKEN).value("driftgate_preflight_total") for _ in range(6)}
    assert totals == {after.value("driftgate_preflight_total")} == {1}


@pytest.mark.parametrize("token", [None, TOKEN])
def test_a_controller_alone_serves_its_own_metrics(
    tmp_path: Path, database: Database, acme: OrgKey, specs: SpecServer, token: str | None
) -> None:
    """A controller killed in the middle of a slow check leaves its job running under a lease
    that expires; a second controller, serving its own `/metrics` on `--metrics-port`, hands
    the job on (`driftgate_jobs_reaped_total`) and checks the watch."""
    specs.set("/slow.json", as_json(charges_spec()), delay=3.0)
    make_watches(database, acme, tmp_path, [specs.url("/slow.json")])
    settings = {"allow_private_targets": "true"}
    if token is not None:
        settings["metrics_token"] = token
    env = driftgate_env(database.url, tmp_path, **settings)
    controller = [sys.executable, "-m", "cli", "controller", "--tick", "0.2"]
    with started([*controller, "--lease", "1"], tmp_path / "victim.log", env) as victim:
        wait_until(lambda: any(path == "/slow.json" for _, path, _ in specs.requests))
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = tmp_path / "controller.log"
    with started([*controller, "--metrics-port", str(port)], log_path, env):
        # One scrape reads the store's gauges and the process's counters one after the other:
        # on a busy machine a check can commit between the two reads, so the scrape counts the
        # check but still shows the watch as it was. Both are waited for.
        scraped = wait_for(
            "the reaped job checked and the watch ok",
            lambda: (
                (s := scrape(base, token)).value("driftgate_jobs_reaped_total", kind="check") >= 1
                and s.value("driftgate_checks_total", type="openapi") >= 1
                and s.value("driftgate_watches", status="ok") == 1
                and s
            ),
            log_path,
        )
        assert scraped.value("driftgate_jobs_claimed_total", kind="check") >= 1
        assert scraped.value("driftgate_database_up") == 1
        # A process on its own: prometheus_client's process metrics are its.
        assert scraped.has("process_resident_memory_bytes")
        if token is not None:
            refused = httpx.get(f"{base}/metrics")
            assert refused.status_code == 401 and token not in refused.text
    assert token is None or token not in log_path.read_text()


PROMETHEUS = shutil.which("prometheus")


@pytest.mark.skipif(
    PROMETHEUS is None, reason="Debian's prometheus is not installed (apt-get install prometheus)"
)
def test_prometheus_scrapes_driftgate(tmp_path: Path, database: Database, acme: OrgKey) -> None:
    """The real Prometheus server, with the sample configuration
    (`examples/monitoring/prometheus.yml`: the bearer token from a file), scrapes
    `driftgate serve` and sees a preflight counted."""
    assert PROMETHEUS is not None
    port, prometheus_port = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    env = driftgate_env(database.url, tmp_path, workers="2", metrics_token=TOKEN)
    # The sample configuration, scraping this server every second with the token's file.
    config = yaml.safe_load((ROOT / "examples" / "monitoring" / "prometheus.yml").read_text())
    config["global"] = {"scrape_interval": "1s", "scrape_timeout": "1s"}
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "driftgate"]
    config["scrape_configs"] = [job]
    (tmp_path / "token").write_text(TOKEN)
    job["authorization"]["credentials_file"] = str(tmp_path / "token")
    job["static_configs"] = [{"targets": [f"127.0.0.1:{port}"]}]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    prometheus = [
        PROMETHEUS,
        f"--config.file={tmp_path / 'prometheus.yml'}",
        f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{prometheus_port}",
    ]
    serve_log, prometheus_log = tmp_path / "serve.log", tmp_path / "prometheus.log"

    def query(expression: str) -> list[dict[str, Any]]:
        answer = httpx.get(
            f"http://127.0.0.1:{prometheus_port}/api/v1/query",
            params={"query": expression},
            timeout=5,
        )
        assert answer.status_code == 200, answer.text
        return list(answer.json()["data"]["result"])

    def scalar(expression: str) -> float | None:
        found = query(expression)
        return float(found[0]["value"][1]) if found else None

    with (
        started([*DRIFTGATE, "serve", "--port", str(port)], serve_log, env),
        started(prometheus, prometheus_log, dict(os.environ)),
    ):
        wait_for("serve", lambda: httpx.get(f"{base}/health").status_code == 200, serve_log)
        wait_for("a scrape", lambda: scalar('up{job="driftgate"}') == 1, prometheus_log)
        assert wait_for(
            "the store's gauge", lambda: scalar("driftgate_database_up"), prometheus_log
        )
        headers = {**acme.headers, "User-Agent": "driftgate-tests"}
        watch = httpx.post(
            f"{base}/api/watches",
            json={"name": "w", "url": "https://api.example.com/openapi.json"},
            headers=headers,
        ).json()
        gate = httpx.post(
            f"{base}/api/preflight", json={"watchIds": [watch["id"]]}, headers=headers
        )
        assert gate.status_code == 200
        wait_for(
            "the preflight counted",
            lambda: scalar("sum(driftgate_preflight_total)") == 1,
            prometheus_log,
        )
        assert scalar('driftgate_watches{status="never_run"}') == 1
        targets = httpx.get(f"http://127.0.0.1:{prometheus_port}/api/v1/targets").json()
        (target,) = targets["data"]["activeTargets"]
        assert target["health"] == "up", json.dumps(target)
