"""deploy/kubernetes/ (kustomize) renders, every object is valid for the pinned Kubernetes
versions (kubernetes-validate's bundled schemas, offline), and what the manifests name is
real: each DRIFTGATE_* variable is a setting, each command a driftgate command with its
options, each probe a route of the API, each secret a reference (no secret in the tree), the
user the image's, and the disruption budgets and the Service select the pods they mean."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from click.testing import CliRunner

from cli.main import main
from controller.settings import Settings
from tests.deploy.manifests import containers, kustomization, pod_spec, render

ROOT = Path(__file__).resolve().parents[2]
KUBE = ROOT / "deploy" / "kubernetes"
BASE = KUBE / "base"
EXAMPLE = KUBE / "overlays" / "example"
# The oldest Kubernetes release still commonly run, and the newest the schemas cover.
VERSIONS = ("1.30.0", "1.37.0")
SETTINGS = {f"DRIFTGATE_{name.upper()}" for name in Settings.model_fields}
IMAGE_USER = re.search(r"^USER (\d+):(\d+)$", (ROOT / "Dockerfile").read_text(), re.M)


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    return render(EXAMPLE)


def kinds(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [obj for obj in objects if obj["kind"] == kind]


def test_the_kustomizations_list_every_manifest_and_only_existing_ones() -> None:
    for directory in (BASE, EXAMPLE):
        listed = kustomization(directory)["resources"]
        assert all((directory / entry).exists() for entry in listed), listed
        files = sorted(p.name for p in directory.glob("*.yaml") if p.name != "kustomization.yaml")
        assert sorted(entry for entry in listed if entry.endswith(".yaml")) == files


@pytest.mark.parametrize("version", VERSIONS)
def test_every_object_is_valid_for_kubernetes(objects: list[dict[str, Any]], version: str) -> None:
    assert {obj["kind"] for obj in objects} == {
        "Namespace", "ConfigMap", "Service", "Deployment", "Job", "PodDisruptionBudget",
    }  # fmt: skip
    for obj in objects:
        kubernetes_validate.validate(obj, version, strict=True)


def test_the_overlay_sets_namespace_and_image(objects: list[dict[str, Any]]) -> None:
    namespaced = [obj for obj in objects if obj["kind"] != "Namespace"]
    assert {obj["metadata"].get("namespace") for obj in namespaced} == {"driftgate"}
    images = {c["image"] for obj in objects for c in containers(obj)}
    assert images == {"registry.example.com/driftgate:0.1.0"}


def test_the_processes_and_their_replicas(objects: list[dict[str, Any]]) -> None:
    deployments = {d["metadata"]["name"]: d for d in kinds(objects, "Deployment")}
    assert {name: d["spec"]["replicas"] for name, d in deployments.items()} == {
        "driftgate-web": 2,
        "driftgate-controller": 2,
    }
    commands = {
        obj["metadata"]["name"]: pod_spec(obj)["containers"][0]["command"][:2]  # type: ignore[index]
        for obj in objects
        if pod_spec(obj) is not None
    }
    assert commands == {
        "driftgate-web": ["driftgate", "serve"],
        "driftgate-controller": ["driftgate", "controller"],
        "driftgate-migrate": ["driftgate", "db"],
    }


def command_lines(objects: list[dict[str, Any]]) -> list[list[str]]:
    """Each driftgate command the containers run: their command, or in a shell script the
    words after `driftgate` up to a pipe or the end of the command."""
    found = []
    for obj in objects:
        for container in containers(obj):
            command = container["command"]
            if command[0] == "driftgate":
                found.append(command[1:])
            else:
                assert command[:2] == ["sh", "-c"], command
                for match in re.finditer(r"\bdriftgate ([a-z0-9 -]+?)\s*(?:\||;|$)", command[2]):
                    found.append(match.group(1).split())
    return found


def test_every_command_is_a_driftgate_command_with_its_options(
    objects: list[dict[str, Any]],
) -> None:
    lines = command_lines(objects)
    assert ["db", "upgrade"] in lines and ["db", "current", "--check"] in lines
    for words in lines:
        result = CliRunner().invoke(main, [*words, "--help"])
        assert result.exit_code == 0, (words, result.output)


def test_every_variable_is_a_setting_and_secrets_are_references(
    objects: list[dict[str, Any]],
) -> None:
    (config,) = kinds(objects, "ConfigMap")
    assert set(config["data"]) <= SETTINGS, set(config["data"]) - SETTINGS
    Settings.model_validate(
        {k.removeprefix("DRIFTGATE_").lower(): v for k, v in config["data"].items()}
    )
    assert kinds(objects, "Secret") == []
    for obj in objects:
        for container in containers(obj):
            assert [e["configMapRef"]["name"] for e in container["envFrom"]] == ["driftgate"]
            env = {e["name"]: e for e in container["env"]}
            assert set(env) <= SETTINGS, set(env) - SETTINGS
            for name in ("DRIFTGATE_DATABASE_URL", "DRIFTGATE_SECRET_KEY"):
                if name in env or container["name"] != "wait-for-schema":
                    ref = env[name]["valueFrom"]["secretKeyRef"]
                    assert ref["name"] == "driftgate" and "value" not in env[name]
            assert all("value" not in e for e in env.values()), env


def test_probes_are_the_health_routes(objects: list[dict[str, Any]]) -> None:
    paths = json.loads((ROOT / "docs" / "openapi.json").read_text())["paths"]
    (web,) = [d for d in kinds(objects, "Deployment") if d["metadata"]["name"] == "driftgate-web"]
    container = web["spec"]["template"]["spec"]["containers"][0]
    probes = {k: container[k]["httpGet"] for k in ("livenessProbe", "readinessProbe")}
    assert probes["livenessProbe"]["path"] == "/health"
    assert probes["readinessProbe"]["path"] == "/health/ready"
    assert {p["path"] for p in probes.values()} <= set(paths)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert all(p["port"] in ports for p in probes.values())
    config = kinds(objects, "ConfigMap")[0]["data"]
    assert ports["http"] == int(config["DRIFTGATE_PORT"])


def test_pods_run_as_the_image_user_without_privileges(objects: list[dict[str, Any]]) -> None:
    assert IMAGE_USER is not None
    for obj in objects:
        spec = pod_spec(obj)
        if spec is None:
            continue
        context = spec["securityContext"]
        assert context["runAsNonRoot"] is True
        assert (context["runAsUser"], context["runAsGroup"]) == tuple(map(int, IMAGE_USER.groups()))
        for container in containers(obj):
            own = container["securityContext"]
            assert own["allowPrivilegeEscalation"] is False
            assert own["readOnlyRootFilesystem"] is True
            assert own["capabilities"]["drop"] == ["ALL"]
            mounts = {m["mountPath"] for m in container["volumeMounts"]}
            assert "/tmp" in mounts
            assert set(container["resources"]) == {"requests", "limits"}


def test_budgets_and_the_service_select_the_pods_they_mean(objects: list[dict[str, Any]]) -> None:
    pods = {
        d["metadata"]["name"]: d["spec"]["template"]["metadata"]["labels"]
        for d in kinds(objects, "Deployment")
    }

    def selected(selector: dict[str, str]) -> list[str]:
        return sorted(n for n, labels in pods.items() if selector.items() <= labels.items())

    budgets = {
        b["metadata"]["name"]: selected(b["spec"]["selector"]["matchLabels"])
        for b in kinds(objects, "PodDisruptionBudget")
    }
    assert budgets == {
        "driftgate-web": ["driftgate-web"],
        "driftgate-controller": ["driftgate-controller"],
    }
    (service,) = kinds(objects, "Service")
    assert selected(service["spec"]["selector"]) == ["driftgate-web"]
    for deployment in kinds(objects, "Deployment"):
        assert (
            deployment["spec"]["selector"]["matchLabels"].items()
            <= pods[deployment["metadata"]["name"]].items()
        )


def test_without_kubectl_the_same_objects(objects: list[dict[str, Any]]) -> None:
    """The reader used where kubectl is missing renders what kustomize renders."""
    from tests.deploy.manifests import read_kustomization

    def key(obj: dict[str, Any]) -> tuple[str, str]:
        return obj["kind"], obj["metadata"]["name"]

    assert sorted(read_kustomization(EXAMPLE), key=key) == sorted(objects, key=key)
