"""`driftgate demo`: the vendor simulator, a webhook receiver and driftgate itself on loopback,
with no internet, walking a newcomer through drift, an incident, a killed agent, the run
gate's 409 and the way back.

What it sets up, in a data directory of its own:
- a git repository made from `examples/` (its `.driftgate/` files, the simulator's address
  written in), reconciled by driftgate as the source `demo` of the org `demo`;
- the org, an API key (written to `demo.env` for the CLI), a console account
  (`demo@example.com`, its password in `demo.env`), the webhook destination (the receiver,
  which verifies every signature);
- `driftgate up` as a child process with a config file that allows the simulator's and the
  receiver's `address:port` and no other private target.

Then each stage of `demo.contracts.STAGES` (on a timer, on Enter, or on `POST /_demo/next`)
is followed by checks and a report of what driftgate did.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pygit2
import yaml

from controller.accounts import service as accounts
from controller.crypto import load_secret_box
from controller.errors import ConfigError
from controller.notifications import service as notifications
from controller.orgs import auth_service as auth
from controller.orgs import service as orgs
from controller.settings import Settings, load_settings
from controller.store import migrate
from controller.store.db import Database
from demo.contracts import LAST, Stage
from demo.receiver import WebhookReceiver
from demo.vendor import MCP_PATH, SPEC_PATH, Vendor, VendorServer

ORG = "demo"
ACTOR = "demo"
CONSOLE_USER = "demo@example.com"
EXAMPLES_ADDRESS = "127.0.0.1:8090"  # what examples/ points at
CONFIG_FILES = ("agents.yaml", "templates.yaml", "watch-sets.yaml")
WATCHES = ("stripe-api", "github-mcp", "stripe-api-staging")
GUARDED_AGENT = "billing-agent"  # production-guard: killed on breaking drift
# billing-agent's approval rule in examples/agents.yaml: who may acknowledge its incidents.
APPROVAL = {"repository": "acme/billing-agent", "branch": "main"}

Say = Callable[[str], None]


@dataclass
class DemoOptions:
    data_dir: Path
    examples: Path
    host: str = "127.0.0.1"
    port: int = 8080
    vendor_port: int = 8090
    receiver_port: int = 8091
    interval: float | None = 15.0  # seconds between stages; None: only Enter or the trigger
    keypress: bool = True
    exit_when_done: bool = False
    # The data directory is a temporary one of this run: removed when the demo ends (it holds
    # the API key and the console password), unless the run failed and it holds the log.
    remove_data_dir: bool = False


@dataclass
class Demo:
    options: DemoOptions
    say: Say
    url: str = ""
    key: str = ""
    secret: str = ""
    password: str = ""
    seen: set[str] = field(default_factory=set)  # drift events already shown
    watch_ids: dict[str, str] = field(default_factory=dict)
    child: subprocess.Popen[bytes] | None = None
    done: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    # -- setting up ------------------------------------------------------------------------

    def prepare(self) -> Settings:
        """The data directory: repository, config file, database, org, key, secret."""
        opts = self.options
        for port in (opts.port, opts.vendor_port, opts.receiver_port):
            if _port_taken(opts.host, port):
                raise ConfigError(
                    f"port {port} on {opts.host} is in use; stop what serves it or choose "
                    "other ports (--port, --vendor-port, --receiver-port)"
                )
        if opts.data_dir.exists() and any(opts.data_dir.iterdir()):
            raise ConfigError(f"{opts.data_dir} is not empty; give an empty or new --data-dir")
        missing = [name for name in CONFIG_FILES if not (opts.examples / name).is_file()]
        if missing:
            raise ConfigError(
                f"{opts.examples} lacks {', '.join(missing)}: run the demo from a clone of "
                "the driftgate repository or pass --examples DIR"
            )
        opts.data_dir.mkdir(parents=True, exist_ok=True)
        data_dir = opts.data_dir.resolve()
        repo = data_dir / "repo.git"
        vendor_address = f"{opts.host}:{opts.vendor_port}"
        _commit_examples(repo, opts.examples, vendor_address)
        config = data_dir / "driftgate.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "data_dir": str(data_dir),
                    "host": opts.host,
                    "port": opts.port,
                    "workers": 1,
                    "threads": 8,
                    "log_format": "text",
                    "log_level": "WARNING",
                    "private_target_allowlist": [
                        vendor_address,
                        f"{opts.host}:{opts.receiver_port}",
                    ],
                    "sources": [
                        {
                            "name": "demo",
                            "org": ORG,
                            "url": str(repo),
                            "branch": "main",
                            "path": ".driftgate",
                            "interval": "60s",
                        }
                    ],
                },
                sort_keys=False,
            )
        )
        settings = load_settings(env={"DRIFTGATE_CONFIG": str(config)})
        box = load_secret_box(settings, create=True)
        database = Database(settings.effective_database_url)
        try:
            migrate.upgrade(database, "head")
            with database.transaction() as session:
                org = orgs.create_org(session, ORG, "pro", actor=ACTOR)
                self.key = auth.create_api_key(session, org, "demo", actor=ACTOR).secret
                self.secret = notifications.signing_secret(session, org.id, box)
                # A console account whose password lives only in this run's data directory.
                self.password = secrets.token_urlsafe(12)
                _user, token = accounts.create_user(
                    session, org, CONSOLE_USER, "admin", actor=ACTOR, now=datetime.now(UTC)
                )
                accounts.set_password(session, token, self.password, datetime.now(UTC))
        finally:
            database.dispose()
        self.url = f"http://{opts.host}:{opts.port}"
        (data_dir / "demo.env").write_text(
            f"export DRIFTGATE_URL={self.url}\nexport DRIFTGATE_API_KEY={self.key}\n"
            f"# console: {self.url}/console as {CONSOLE_USER}, password {self.password}\n"
        )
        return settings

    def start_driftgate(self) -> None:
        config = self.options.data_dir.resolve() / "driftgate.yaml"
        log = (self.options.data_dir / "driftgate.log").open("ab")
        env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTGATE_")}
        self.child = subprocess.Popen(  # noqa: S603 - our own CLI, no shell
            [sys.executable, "-m", "cli", "--config", str(config), "up"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        deadline = time.monotonic() + 60
        while True:
            if self.child.poll() is not None:
                raise RuntimeError(
                    f"driftgate exited with code {self.child.returncode}; "
                    f"see {self.options.data_dir / 'driftgate.log'}"
                )
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("driftgate did not answer /health within 60 s")
            time.sleep(0.2)

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.key}", "User-Agent": "driftgate-demo"}
        return httpx.request(method, self.url + path, headers=headers, timeout=60, **kwargs)

    def wait_for_watches(self) -> None:
        """Until reconcile has applied the repository's watches."""
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            answer = self.api("GET", "/api/watches", params={"limit": 100})
            if answer.status_code == 200:
                found = {w["name"]: w["id"] for w in answer.json()["watches"]}
                if all(name in found for name in WATCHES):
                    self.watch_ids = {name: found[name] for name in WATCHES}
                    return
            time.sleep(0.5)
        raise RuntimeError("the demo repository's watches did not appear within 90 s")

    def check_all(self) -> dict[str, dict[str, Any]]:
        """Check every watch now and wait for the results: watch name → watch."""
        results = {}
        for name, watch_id in self.watch_ids.items():
            answer = self.api("POST", f"/api/watches/{watch_id}/check", params={"wait": 30})
            body = answer.json()
            results[name] = body.get("watch") or {}
        return results

    # -- the script -------------------------------------------------------------------------

    def baseline(self) -> None:
        self.say("")
        self.say("== stage 0: baseline. The vendors serve their first contracts.")
        self._report_watches(self.check_all())
        self._preflight()

    def react(self, stage: Stage) -> None:
        """After the vendor moved: check, then show what driftgate did."""
        with self.lock:
            self.say("")
            self.say(f"== stage {stage.number}: {stage.name}. Vendor: {stage.says}.")
            watches = self.check_all()
            self._report_watches(watches)
            self._report_drift(stage)
            if stage.name == "breaking":
                self._report_agent()
                self._preflight()
            elif stage.name == "warning":
                self._accept_baseline("github-mcp", "demo: reviewed the new tool description")
            elif stage.name == "revert":
                self._acknowledge_agent()
                self._preflight()
            if stage.number == LAST:
                self._next_steps()
                self.done.set()

    def _report_watches(self, watches: dict[str, dict[str, Any]]) -> None:
        for name, watch in watches.items():
            changes = watch.get("openChanges") or {}
            counts = ", ".join(f"{changes.get(k, 0)} {k}" for k in ("breaking", "warning", "info"))
            incident = " (incident open)" if watch.get("incident") else ""
            self.say(f"   {name:<20} {watch.get('driftStatus', '?'):<10} open: {counts}{incident}")

    def _report_drift(self, stage: Stage) -> None:
        for name, watch_id in self.watch_ids.items():
            status = self.api("GET", f"/api/watches/{watch_id}/status").json()
            event = status.get("lastDriftEvent")
            if not event or event["id"] in self.seen:
                continue
            self.seen.add(event["id"])
            detail = self.api("GET", f"/api/drift/events/{event['id']}").json()
            self.say(f"   drift on {name}:")
            for change in detail.get("changes", []):
                self.say(f"     [{change['severity']}] {change.get('summary', change['rule'])}")
                if change.get("hint"):
                    self.say(f"       hint: {change['hint']}")

    def _report_agent(self) -> None:
        runtime = self.api("GET", f"/api/agents/{GUARDED_AGENT}/status").json()["runtime"]
        self.say(
            f"   agent {GUARDED_AGENT} (policy production-guard): {runtime['state']}"
            f" ({runtime['reason'] or 'no reason'}); its orchestrator gets a signed"
            " agent.contract.blocked"
        )

    def _preflight(self) -> None:
        answer = self.api("POST", "/api/preflight", json={"agentId": GUARDED_AGENT})
        body = answer.json()
        if answer.status_code == 200 and body.get("allowed"):
            self.say(f"   preflight {GUARDED_AGENT}: HTTP 200, allowed")
            return
        blocked = "; ".join(
            f"{row['name'] or row['watchId']}: {', '.join(row['reasons'])}"
            for row in body.get("blocked") or []
        )
        self.say(f"   preflight {GUARDED_AGENT}: HTTP {answer.status_code}, blocked ({blocked})")

    def _accept_baseline(self, name: str, reason: str) -> None:
        answer = self.api(
            "POST", f"/api/watches/{self.watch_ids[name]}/baseline", json={"reason": reason}
        )
        self.say(
            f"   the way back for a change you accept: baseline of {name} accepted "
            f"(HTTP {answer.status_code}, status {answer.json().get('driftStatus')})"
        )

    def _acknowledge_agent(self) -> None:
        note = {"note": "demo: vendor reverted, safe again", **APPROVAL}
        answer = self.api("POST", f"/api/agents/{GUARDED_AGENT}/ack", json=note)
        status = answer.json()["status"]["runtime"]["state"]
        self.say(
            f"   the way back after a revert: {GUARDED_AGENT} acknowledged "
            f"(HTTP {answer.status_code}), runtime {status}"
        )

    def _next_steps(self) -> None:
        data_dir = self.options.data_dir
        command = _driftgate_command()
        self.say("")
        self.say("The script is over; driftgate and the simulator keep running. Try:")
        self.say(f"   source {data_dir / 'demo.env'}")
        self.say(f"   {command} watches list")
        self.say(f"   {command} drift list          # then: {command} drift show ID")
        self.say(f"   {command} preflight --agent {GUARDED_AGENT}")
        self.say(f"   {command} agents status {GUARDED_AGENT}   # and: {command} incidents list")
        self.say(f"   curl -s {self.url}/openapi.json | head")
        self.say(
            f"   the console: {self.url}/console as {CONSOLE_USER} "
            f"(password in {data_dir / 'demo.env'})"
        )
        self.say(f"   driftgate log: {data_dir / 'driftgate.log'}")
        removed = f" and removes {data_dir}" if self.options.remove_data_dir else ""
        self.say(f"Ctrl-C stops everything{removed}.")

    # -- events -------------------------------------------------------------------------------

    def on_webhook(self, event: dict[str, Any], message_id: str) -> None:
        data = event.get("data") or {}
        subject = data.get("agentId") or data.get("watchName") or ""
        self.say(f"   webhook {event.get('type')} {subject} (signature verified, id {message_id})")

    def on_refused(self, why: str) -> None:
        self.say(f"   webhook refused: {why}")

    def signal_stop(self) -> None:
        """Ask driftgate to stop at once (SIGINT: gunicorn's quick shutdown; `up` then stops
        its controller): the demo's store is throwaway, nothing in flight needs to finish."""
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(signal.SIGINT)

    def reap(self, grace: float) -> None:
        """Wait `grace` seconds for driftgate to exit, then kill it (its web workers and its
        controller die with it: cli/supervision.py)."""
        if self.child is None:
            return
        try:
            self.child.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.child.kill()
            self.child.wait()


def default_examples() -> Path:
    """examples/ of the checkout this package runs from."""
    return Path(__file__).resolve().parents[1] / "examples"


def serve_vendor(host: str, port: int, interval: float | None, say: Say) -> None:
    """The simulator alone, until interrupted (Ctrl-C or SIGTERM); says each stage."""
    vendor = Vendor(f"http://{host}:{port}")
    vendor.on_change(lambda stage: say(f"stage {stage.number} ({stage.name}): {stage.says}"))
    with _stop_on_signal():
        server = VendorServer(vendor, host, port)
        server.start()
        try:
            say(
                f"vendor simulator: {vendor.base_url}{SPEC_PATH} (OpenAPI), "
                f"{vendor.base_url}{MCP_PATH}"
            )
            say(f"stage 0 (baseline): {vendor.stage.says}")
            _start_triggers(vendor, interval, keypress=True, say=say)
            _wait(None, exit_when_done=False)
        except Stopped as stopped:
            say("")
            say(f"{stopped}: stopping the vendor simulator ...")
        finally:
            server.stop()


def run(options: DemoOptions, say: Say) -> None:
    """Set everything up, play the script, serve until interrupted (or, with
    `exit_when_done`, until the last stage); then stop everything within about a second and
    remove the temporary data directory (`remove_data_dir`)."""
    demo = Demo(options, say)
    opts = options
    server: VendorServer | None = None
    receiver: WebhookReceiver | None = None
    outcome = "failed"
    with _stop_on_signal():
        try:
            demo.prepare()
            vendor = Vendor(f"http://{opts.host}:{opts.vendor_port}")
            server = VendorServer(vendor, opts.host, opts.vendor_port)
            server.start()
            receiver = WebhookReceiver(
                opts.host, opts.receiver_port, demo.secret, demo.on_webhook, demo.on_refused
            )
            receiver.start()
            say(
                f"vendor simulator: {vendor.base_url}{SPEC_PATH} (OpenAPI), "
                f"{vendor.base_url}{MCP_PATH}"
            )
            say(f"webhook receiver: {receiver.url} (verifies every signature)")
            say(f"driftgate: starting on {demo.url} (log: {opts.data_dir / 'driftgate.log'})")
            demo.start_driftgate()
            answer = demo.api(
                "PUT",
                "/api/org/notification-defaults",
                json={"destination": {"kind": "webhook", "url": receiver.url}},
            )
            answer.raise_for_status()
            say(
                f"org {ORG}: API key in {opts.data_dir / 'demo.env'}"
                f"{' (removed when the demo stops)' if opts.remove_data_dir else ''}; "
                "reconciling examples/ ..."
            )
            demo.wait_for_watches()
            demo.baseline()
            vendor.on_change(demo.react)
            _start_triggers(vendor, opts.interval, keypress=opts.keypress, say=say)
            _wait(demo, exit_when_done=opts.exit_when_done)
            outcome = "done"
        except Stopped as stopped:
            outcome = "stopped"
            say("")
            say(f"{stopped}: stopping driftgate, the vendor simulator and the webhook receiver ...")
        finally:
            # driftgate first: once it is gone, so are the MCP sessions it held open on the
            # simulator, whose server then stops without waiting for them.
            demo.signal_stop()
            if receiver is not None and receiver.thread.is_alive():
                receiver.stop()
            demo.reap(STOP_GRACE)
            if server is not None:
                server.stop()
            _tidy(opts, say, failed=outcome == "failed")
            if outcome == "stopped":
                say("stopped.")


# Seconds driftgate gets to exit after SIGINT before it is killed: Ctrl-C ends the demo
# within about a second however busy the machine is.
STOP_GRACE = 0.5


class Stopped(Exception):
    """SIGINT (Ctrl-C) or SIGTERM: the demo stops what it started and cleans up."""


@contextmanager
def _stop_on_signal() -> Iterator[None]:
    """SIGINT and SIGTERM raise `Stopped` in the main thread, once: a second Ctrl-C while
    the demo stops is ignored, so the clean-up runs to its end."""
    stopping = False

    def stop(signum: int, _frame: Any) -> None:
        nonlocal stopping
        if stopping:
            return
        stopping = True
        raise Stopped("Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name)

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _tidy(options: DemoOptions, say: Say, *, failed: bool) -> None:
    """Remove the run's temporary data directory (it holds the API key and the console
    password), or say where it is kept and what it holds."""
    data_dir = options.data_dir
    if not data_dir.exists():
        return
    log = data_dir / "driftgate.log"
    if options.remove_data_dir and not (failed and log.exists()):
        for _attempt in range(10):
            # A driftgate process killed a moment ago may still be closing its files.
            shutil.rmtree(data_dir, ignore_errors=True)
            if not data_dir.exists():
                say(f"removed {data_dir} (the demo's store, API key and console password)")
                return
            time.sleep(0.05)
        say(f"could not remove {data_dir}: it holds the demo's API key and console password")
        return
    why = f"for its log ({log})" if failed and options.remove_data_dir else ""
    say(
        f"kept {data_dir}{' ' + why if why else ''}: it holds the demo's API key and console "
        f"password; delete it when done (rm -rf {data_dir})"
    )


def _start_triggers(vendor: Vendor, interval: float | None, *, keypress: bool, say: Say) -> None:
    how = [f"POST {vendor.base_url}/_demo/next"]
    if keypress and sys.stdin.isatty():
        how.insert(0, "Enter")
        threading.Thread(target=_keys, args=(vendor,), daemon=True).start()
    if interval:
        how.insert(0, f"every {interval:g} s")
        threading.Thread(target=_timer, args=(vendor, interval), daemon=True).start()
    say("")
    say(f"The vendors change {' or '.join(how)}.")


def _timer(vendor: Vendor, interval: float) -> None:
    while True:
        time.sleep(interval)
        if vendor.advance() is None:
            return


def _keys(vendor: Vendor) -> None:
    for _line in sys.stdin:
        vendor.advance()


def _wait(demo: Demo | None, *, exit_when_done: bool) -> None:
    """Until interrupted (`Stopped`), the script's end with `exit_when_done`, or driftgate's
    death."""
    while True:
        if demo is not None:
            if exit_when_done and demo.done.is_set():
                return
            if demo.child is not None and demo.child.poll() is not None:
                raise RuntimeError(f"driftgate exited with code {demo.child.returncode}")
        time.sleep(0.2)


def _driftgate_command() -> str:
    """How this shell runs `driftgate`: on PATH, else the script beside this Python."""
    if shutil.which("driftgate"):
        return "driftgate"
    script = Path(sys.executable).parent / "driftgate"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


def _port_taken(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((host, port)) == 0


def _commit_examples(repo_path: Path, examples: Path, vendor_address: str) -> None:
    """A bare repository whose `main` holds examples' files under `.driftgate/`, pointed at
    the simulator's address."""
    if repo_path.exists():
        shutil.rmtree(repo_path)
    repo = pygit2.init_repository(str(repo_path), bare=True, initial_head="main")
    inner = repo.TreeBuilder()
    for name in CONFIG_FILES:
        text = (examples / name).read_text(encoding="utf-8")
        blob = repo.create_blob(text.replace(EXAMPLES_ADDRESS, vendor_address).encode())
        inner.insert(name, blob, pygit2.enums.FileMode.BLOB)
    root = repo.TreeBuilder()
    root.insert(".driftgate", inner.write(), pygit2.enums.FileMode.TREE)
    signature = pygit2.Signature("driftgate demo", "demo@driftgate.invalid")
    repo.create_commit(
        "refs/heads/main", signature, signature, "examples/ for the demo", root.write(), []
    )
