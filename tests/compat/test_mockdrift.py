"""mockdrift (the hosted product's replay fixtures), unchanged, against a live driftgate: its
three hosted commands and its CI-run telemetry, run as a team runs them (docs/compat.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.compat.clients import PATHS, require_clients
from tests.compat.conftest import Live

require_clients()

pytestmark = pytest.mark.slow

SHIPPED = "oss-everything-2025.7.1-to-2025.7.29"


def mockdrift(
    live: Live, cwd: Path, *args: str, key: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`mockdrift <args>` from its own folder, pointed at driftgate."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(PATHS),
        "HOME": str(live.home),
        "NO_PROXY": "127.0.0.1",
        "DRIFTGUARD_API_URL": live.base,
        "DRIFTGUARD_API_KEY": key or live.key,
    }
    return subprocess.run(
        [sys.executable, "-m", "mockdrift", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def read(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))


def test_catalog_lists_driftgates_rows(live: Live, tmp_path: Path) -> None:
    done = mockdrift(live, tmp_path, "catalog")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith(f"{SHIPPED} [oss/oss-curated] [install] ") for line in lines)
    assert any(line.startswith("stub-stripe [hosted/hosted-stub] ") for line in lines)
    assert "[install]" not in next(line for line in lines if line.startswith("stub-stripe"))
    assert done.stderr.startswith("# ")  # the disclaimer
    with live.http() as http:
        rows = http.get("/v1/replay/fixtures/catalog", params={"limit": 200}).json()["rows"]
    assert [line.split(" ")[0] for line in lines] == [row["id"] for row in rows][: len(lines)]


def test_install_writes_the_fixture_driftgate_serves(live: Live, tmp_path: Path) -> None:
    done = mockdrift(live, tmp_path, "install", SHIPPED)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / ".mockdrift" / "cache" / f"catalog_{SHIPPED}"
    with live.http() as http:
        files = http.post("/v1/replay/fixtures/install", json={"id": SHIPPED}).json()["files"]
    assert read(folder / "before.schema.json") == json.loads(files["before.schema.json"])
    assert read(folder / "after.schema.json") == json.loads(files["after.schema.json"])
    assert read(folder / "before.schema.json") != read(folder / "after.schema.json")
    mocks = sorted(p.name for p in (folder / "mock-responses").iterdir())
    assert mocks == sorted(
        path.removeprefix("mock-responses/") for path in files if path.startswith("mock-")
    )
    assert read(folder / "metadata.json") == json.loads(files["cloud-meta.json"])
    assert read(folder / "cloud-meta.json")["fixtureId"] == SHIPPED  # type: ignore[index]


def test_install_refusals_say_why(live: Live, tmp_path: Path) -> None:
    unknown = mockdrift(live, tmp_path, "install", "vendor/nothing-like-it")
    assert unknown.returncode == 2 and "(404)" in unknown.stderr
    unlicensed = mockdrift(live, tmp_path, "install", SHIPPED, key=live.plain_key)
    assert unlicensed.returncode == 2
    assert "PRODUCT_REQUIRED: replay_cloud" in unlicensed.stderr


def test_simulate_drift_caches_the_watchs_drift(live: Live, tmp_path: Path) -> None:
    watch_id = live.drifted_watch("refunds")
    done = mockdrift(
        live,
        tmp_path,
        "run",
        "--simulate-drift",
        watch_id,
        "--cache-fixture",
        "--pytest",
        "--version",
    )
    # pytest --version ran after the fixture was cached; the telemetry call (refused by
    # design, 501) did not stop the run.
    assert done.returncode == 0, done.stderr
    assert f"simulate-drift: watch={watch_id}" in done.stderr
    folder = tmp_path / ".mockdrift" / "cache" / watch_id
    before, after = read(folder / "before.schema.json"), read(folder / "after.schema.json")
    assert "/v1/refunds" in before["paths"] and "/v1/refunds" not in after["paths"]  # type: ignore[index]
    meta = read(folder / "cloud-meta.json")
    assert isinstance(meta, dict)
    assert meta["watchId"] == watch_id and meta["eventId"]
    assert meta["fixtureId"] == f"{watch_id}:{meta['eventId']}"
    assert meta["incident"]["status"] == "open"
    assert read(folder / "expect.json")["breaking"] >= 1  # type: ignore[index]
    assert sorted(p.name for p in (folder / "mock-responses").iterdir())


def test_simulate_drift_of_another_orgs_watch_is_not_found(live: Live, tmp_path: Path) -> None:
    watch_id = live.drifted_watch("ledger")
    done = mockdrift(
        live,
        tmp_path,
        "run",
        "--simulate-drift",
        watch_id,
        "--pytest",
        "--version",
        key=live.beta_key,
    )
    # mockdrift prints the envelope's `error` token (the message says "Watch not found").
    assert done.returncode == 2 and "(404): not_found" in done.stderr
    assert not (tmp_path / ".mockdrift").exists()
