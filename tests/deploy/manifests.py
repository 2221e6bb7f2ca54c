"""The Kubernetes manifests of deploy/kubernetes/ rendered as `kubectl apply -k` would apply
them: by kustomize (`kubectl kustomize`) where kubectl is installed, else by reading the
kustomizations here (resources, namespace, images: the features these ones use)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml


def render(directory: Path) -> list[dict[str, Any]]:
    """The objects a kustomization directory produces."""
    if shutil.which("kubectl") is not None:
        done = subprocess.run(
            ["kubectl", "kustomize", str(directory)],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return [doc for doc in yaml.safe_load_all(done.stdout) if doc]
    return read_kustomization(directory)


def kustomization(directory: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((directory / "kustomization.yaml").read_text())
    return loaded


def read_kustomization(directory: Path) -> list[dict[str, Any]]:
    spec = kustomization(directory)
    objects: list[dict[str, Any]] = []
    for resource in spec.get("resources", []):
        path = (directory / resource).resolve()
        if path.is_dir():
            objects.extend(read_kustomization(path))
        else:
            objects.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    for pairs in spec.get("labels", []):
        for obj in objects:
            obj["metadata"].setdefault("labels", {}).update(pairs["pairs"])
    if "namespace" in spec:
        for obj in objects:
            if obj["kind"] != "Namespace":
                obj["metadata"]["namespace"] = spec["namespace"]
    for image in spec.get("images", []):
        for obj in objects:
            for container in containers(obj):
                if container["image"] == image["name"]:
                    name = image.get("newName", image["name"])
                    container["image"] = f"{name}:{image['newTag']}" if "newTag" in image else name
    return objects


def pod_spec(obj: dict[str, Any]) -> dict[str, Any] | None:
    if obj["kind"] in ("Deployment", "Job", "StatefulSet", "DaemonSet"):
        spec: dict[str, Any] = obj["spec"]["template"]["spec"]
        return spec
    return None


def containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = pod_spec(obj)
    if spec is None:
        return []
    return [*spec.get("initContainers", []), *spec["containers"]]
