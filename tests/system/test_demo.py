"""`driftgate demo` end to end: the command as a child process (simulator, receiver and
`driftgate up` on loopback), driven by its HTTP trigger, the outcomes read through the API."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.processes import DRIFTGATE, free_port, spawn, stop_process

# Real processes end to end: left out of `make check`, run by `make test`.
pytestmark = pytest.mark.slow


@dataclass
class RunningDemo:
    process: subprocess.Popen[str]
    lines: queue.Queue[str]
    seen: list[str]
    url: str
    vendor: str
    key: str = ""

    def wait_for(self, needle: str, timeout: float = 60) -> str:
        """The first output line (from now or already seen) holding `needle`."""
        for line in self.seen:
            if needle in line:
                return line
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                assert self.process.poll() is None, "\n".join(self.seen)
                continue
            self.seen.append(line)
            if needle in line:
                return line
        raise AssertionError(f"no line with {needle!r} in:\n" + "\n".join(self.seen))

    def next_stage(self) -> dict[str, Any]:
        answer = httpx.post(f"{self.vendor}/_demo/next", timeout=120)
        assert answer.status_code == 200, answer.text
        body: dict[str, Any] = answer.json()
        return body

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.key}"}
        return httpx.request(method, self.url + path, headers=headers, timeout=30, **kwargs)

    def watch(self, name: str) -> dict[str, Any]:
        watches = self.api("GET", "/api/watches").json()["watches"]
        found: dict[str, Any] = next(w for w in watches if w["name"] == name)
        return found

    def runtime(self, agent: str) -> str:
        state: str = self.api("GET", f"/api/agents/{agent}/status").json()["runtime"]["state"]
        return state

    def preflight(self, agent: str) -> int:
        return self.api("POST", "/api/preflight", json={"agentId": agent}).status_code


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[RunningDemo]:
    port, vendor_port, receiver_port = free_port(), free_port(), free_port()
    data_dir = tmp_path / "demo"
    process = spawn(
        [
            *DRIFTGATE,
            "demo",
            "--interval=0",
            f"--port={port}",
            f"--vendor-port={vendor_port}",
            f"--receiver-port={receiver_port}",
            f"--data-dir={data_dir}",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line.rstrip("\n"))

    threading.Thread(target=read, daemon=True).start()
    running = RunningDemo(
        process, lines, [], f"http://127.0.0.1:{port}", f"http://127.0.0.1:{vendor_port}"
    )
    try:
        yield running
    finally:
        stop_process(process, timeout=40)
        assert process.stdout is not None
        process.stdout.close()


def test_the_demo_shows_drift_a_killed_agent_the_gate_and_the_way_back(
    demo: RunningDemo, tmp_path: Path
) -> None:
    demo.wait_for("The vendors change", timeout=90)
    env = (tmp_path / "demo" / "demo.env").read_text()
    demo.key = env.split("DRIFTGATE_API_KEY=")[1].splitlines()[0].strip()
    # The console account the demo made signs in with the password in demo.env.
    password = env.split("password ")[1].splitlines()[0].strip()
    with httpx.Client(base_url=demo.url, follow_redirects=False, timeout=60) as browser:
        form = browser.get("/console/sign-in").text
        token = form.split('name="csrf_token" value="')[1].split('"')[0]
        signed = browser.post(
            "/console/sign-in",
            data={"email": "demo@example.com", "password": password, "csrf_token": token},
        )
        assert signed.status_code == 302, signed.text
        assert "Overview of demo" in browser.get("/console/").text
    assert demo.watch("stripe-api")["driftStatus"] == "ok"
    assert demo.preflight("billing-agent") == 200

    assert demo.next_stage()["name"] == "breaking"
    stripe = demo.watch("stripe-api")
    assert stripe["driftStatus"] == "drifted" and stripe["incident"]["status"] == "open"
    assert demo.runtime("billing-agent") == "killed"
    assert demo.preflight("billing-agent") == 409
    demo.wait_for("[breaking] operation GET /v1/refunds/{refund} removed")
    # The receiver verified the Standard Webhooks signature before the demo printed it.
    demo.wait_for("webhook agent.contract.blocked billing-agent (signature verified")

    assert demo.next_stage()["name"] == "warning"
    demo.wait_for("[warning] description of tool create_issue changed")
    demo.wait_for("baseline of github-mcp accepted (HTTP 200, status ok)")
    assert demo.watch("github-mcp")["openChanges"]["warning"] == 0

    assert demo.next_stage()["name"] == "info"
    demo.wait_for("[info] tool list_pull_requests added")

    assert demo.next_stage()["name"] == "revert"
    stripe = demo.watch("stripe-api")
    assert stripe["driftStatus"] == "ok" and stripe["incident"] is None
    assert demo.runtime("billing-agent") == "running"
    assert demo.preflight("billing-agent") == 200
    demo.wait_for("The script is over")
    assert httpx.post(f"{demo.vendor}/_demo/next", timeout=60).status_code == 409

    assert stop_process(demo.process, timeout=40) == 0
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{demo.url}/health", timeout=2)  # driftgate stopped with it


def test_a_data_directory_in_use_is_refused(tmp_path: Path) -> None:
    (tmp_path / "something").write_text("x")
    result = subprocess.run(
        [*DRIFTGATE, "demo", f"--data-dir={tmp_path}", f"--port={free_port()}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "is not empty" in result.stderr


def start_demo(tmp_path: Path, *args: str) -> RunningDemo:
    """`driftgate demo` with its temporary folder under `tmp_path` (TMPDIR), output read."""
    port, vendor_port, receiver_port = free_port(), free_port(), free_port()
    process = spawn(
        [
            *DRIFTGATE,
            "demo",
            "--interval=0",
            f"--port={port}",
            f"--vendor-port={vendor_port}",
            f"--receiver-port={receiver_port}",
            *args,
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line.rstrip("\n"))

    threading.Thread(target=read, daemon=True).start()
    return RunningDemo(
        process, lines, [], f"http://127.0.0.1:{port}", f"http://127.0.0.1:{vendor_port}"
    )


def interrupt(running: RunningDemo) -> list[str]:
    """Ctrl-C: SIGINT, then every line it printed until it ended (its exit code checked)."""
    running.process.send_signal(signal.SIGINT)
    assert running.process.wait(timeout=60) == 0, "\n".join(running.seen)
    assert running.process.stdout is not None
    while True:
        try:
            running.seen.append(running.lines.get(timeout=5))
        except queue.Empty:
            break
    running.process.stdout.close()
    return running.seen


def test_ctrl_c_stops_everything_and_removes_the_folder_with_the_secrets(tmp_path: Path) -> None:
    running = start_demo(tmp_path)
    try:
        running.wait_for("The vendors change", timeout=90)
        data_dir = Path(running.wait_for("API key in ").split("API key in ")[1].split()[0]).parent
        assert data_dir.parent == tmp_path and (data_dir / "demo.env").is_file()
        assert "(removed when the demo stops)" in running.wait_for("API key in ")
        seen = interrupt(running)
    finally:
        stop_process(running.process, timeout=40)
    assert "Ctrl-C: stopping driftgate, the vendor simulator and the webhook receiver ..." in seen
    assert f"removed {data_dir} (the demo's store, API key and console password)" in seen
    assert seen[-1] == "stopped."
    assert not data_dir.exists()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{running.url}/health", timeout=2)  # driftgate stopped with it
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{running.vendor}/_demo/stage", timeout=2)


def test_keep_keeps_the_folder_and_says_what_it_holds(tmp_path: Path) -> None:
    running = start_demo(tmp_path, "--keep")
    try:
        # Interrupted before the script starts: the clean-up is the same at every stage.
        line = running.wait_for("API key in ", timeout=90)
        assert "removed when" not in line
        data_dir = Path(line.split("API key in ")[1].split(";")[0]).parent
        seen = interrupt(running)
    finally:
        stop_process(running.process, timeout=40)
    assert (
        f"kept {data_dir}: it holds the demo's API key and console password; delete it when "
        f"done (rm -rf {data_dir})"
    ) in seen
    assert (data_dir / "demo.env").is_file() and seen[-1] == "stopped."
