"""The image, built from this checkout as an operator builds it, starts and answers `/health`.

No container registry is reached from the machines that run the suite, so the base comes from
Debian's packages (deploy/image/build-base.sh: debootstrap, then `podman import`) and is passed
as the build argument BASE_IMAGE; the dependencies come from the package index, checked
against requirements.lock. Needs root, podman, runc and debootstrap: without them the test
skips, unless DRIFTGATE_REQUIRE_IMAGE=1 (CI sets it), where it fails.

What a run leaves: the base image and the image of the locked dependencies (named, reused by
the next run, so that a run that changes only driftgate's code builds in well under a minute);
the image under test and the intermediate images of its build are removed."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from controller import __version__
from tests.processes import free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BUILD_BASE = ROOT / "deploy" / "image" / "build-base.sh"
REQUIRED = os.environ.get("DRIFTGATE_REQUIRE_IMAGE") == "1"
# The image of the locked dependencies: kept between runs, named so that nothing prunes it.
DEPS = "localhost/driftgate-test-deps:latest"
# This machine's CA bundle, for pip in the build: on a network whose proxy re-signs TLS it
# holds that proxy's CA; elsewhere it is the usual public ones. A build secret: not kept.
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
# Containers here run under runc, with limits the machine allows (its defaults are refused).
RUNC = shutil.which("runc") or ("/usr/sbin/runc" if Path("/usr/sbin/runc").exists() else None)
LIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]


def missing() -> str | None:
    for tool in ("podman", "debootstrap"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install podman runc debootstrap)"
    if RUNC is None:
        return "runc is not installed (apt-get install runc)"
    if os.geteuid() != 0:
        return "debootstrap needs root"
    return None


def run(*args: str, timeout: float = 1800) -> str:
    """A command's stdout; its output in the failure when it fails."""
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert done.returncode == 0, (
        f"{' '.join(args)}: {done.returncode}\n{done.stdout}\n{done.stderr}"
    )
    return done.stdout.strip()


def image_id(name: str) -> str | None:
    done = subprocess.run(
        ["podman", "image", "inspect", "--format", "{{.Id}}", name],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() if done.returncode == 0 else None


def build(base: str, tag: str, *options: str) -> None:
    secret = [f"--secret=id=ca-bundle,src={CA_BUNDLE}"] if CA_BUNDLE.is_file() else []
    run(
        "podman", "build", f"--runtime={RUNC}", *LIMITS, "--format=docker", *secret,
        f"--build-arg=BASE_IMAGE={base}", f"--tag={tag}", *options, str(ROOT),
    )  # fmt: skip


@pytest.fixture
def image() -> Iterator[str]:
    """The image built from the checkout on the Debian-built base; removed afterwards, with
    the intermediate images of its build (the dependencies' image stays, for the next run)."""
    reason = missing()
    if reason is not None:
        if REQUIRED:
            pytest.fail(f"DRIFTGATE_REQUIRE_IMAGE=1 but {reason}")
        pytest.skip(reason)
    base = run(str(BUILD_BASE)).splitlines()[-1]
    # The dependencies first, as an image of their own: a lock that changed leaves the old one
    # without a name, and it goes (with what only it used).
    before = image_id(DEPS)
    build(base, DEPS, "--target=deps")
    if before is not None and before != image_id(DEPS):
        subprocess.run(["podman", "rmi", before], capture_output=True)
    name = f"localhost/driftgate-test-{uuid.uuid4().hex[:8]}"
    stage = f"{name}-build"
    try:
        build(base, stage, "--target=build")
        build(base, name)
        yield name
    finally:
        # Removing a named image removes its unnamed parents that nothing else uses.
        subprocess.run(["podman", "rmi", "--force", name, stage], capture_output=True)


def test_the_image_starts_and_answers_health(image: str, tmp_path: Path) -> None:
    port = free_port()
    container = image.rsplit("/", 1)[-1]
    run(
        "podman", f"--runtime={RUNC}", "run", "--detach", f"--name={container}", *LIMITS,
        "--no-healthcheck", "--read-only", f"--publish=127.0.0.1:{port}:8080", image,
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        health = None
        while health is None:
            try:
                answer = httpx.get(f"{base}/health", timeout=2)
                if answer.status_code == 200:
                    health = answer.json()
            except httpx.TransportError:
                pass
            state = run("podman", "inspect", "--format", "{{.State.Status}}", container)
            assert state == "running", run("podman", "logs", container)
            assert time.monotonic() < deadline, run("podman", "logs", container)
            time.sleep(0.5)
        assert health == {"status": "ok", "version": __version__}
        ready = httpx.get(f"{base}/health/ready", timeout=10)
        assert ready.status_code == 200 and ready.json()["database"] == "ok", ready.text
        # `up` ran the migrations on the SQLite file in the data volume, as the image's user,
        # with the rest of the file system read-only (as the Kubernetes manifests run it).
        assert run("podman", "exec", container, "id", "-u") == "10001"
        assert run("podman", "exec", container, "driftgate", "version").endswith(__version__)
    finally:
        subprocess.run(
            ["podman", "rm", "--force", "--volumes", "--time=5", container], capture_output=True
        )
