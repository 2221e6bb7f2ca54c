"""JSON Schemas of driftgate's configuration files, generated from the pydantic models.

`config-schema/*.json` is committed so editors and CI can validate files without
driftgate installed; `python -m controller.gitsources.configschema` (or `make schemas`)
rewrites them, and a test fails when the committed copies differ from the models.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter

from controller.model.coverage import CoverageFile
from controller.model.gitops import (
    AgentsFile,
    DashboardsFile,
    TemplatesFile,
    WaiversFile,
    WatchSetsFile,
)
from controller.model.ingress_profiles import ProfileDocument
from controller.settings import Settings
from controller.toollock.lock import lock_schema

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def settings_schema() -> dict[str, Any]:
    """Schema of driftgate.yaml: the settings, under their snake_case names."""
    schema = Settings.model_json_schema(mode="validation")
    schema["properties"].pop("config", None)
    secret = schema["properties"]["secret_key"]
    secret["description"] = (
        "Encryption keys for secrets at rest (the first encrypts); prefer DRIFTGATE_SECRET_KEY"
    )
    schema["properties"]["secret_key"] = {
        "anyOf": [secret, {"type": "string", "description": "comma-separated keys"}]
    }
    schema["additionalProperties"] = False
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": "https://driftgate.dev/schemas/driftgate.schema.json",
        **schema,
        "title": "driftgate.yaml",
    }


# `.driftgate/` file name -> schema file name and the model it is generated from.
GITOPS_FILES: dict[str, tuple[str, type[BaseModel]]] = {
    "agents.yaml": ("agents.schema.json", AgentsFile),
    "templates.yaml": ("templates.schema.json", TemplatesFile),
    "watch-sets.yaml": ("watch-sets.schema.json", WatchSetsFile),
    "dashboards.yaml": ("dashboards.schema.json", DashboardsFile),
    "waivers.yaml": ("waivers.schema.json", WaiversFile),
}


def gitops_schema(file_name: str) -> dict[str, Any]:
    """Schema of one `.driftgate/` file (`agents.yaml`, `templates.yaml`, `watch-sets.yaml`,
    `dashboards.yaml`)."""
    schema_name, model = GITOPS_FILES[file_name]
    schema = model.model_json_schema(mode="validation")
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": f"https://driftgate.dev/schemas/{schema_name}",
        **schema,
        "title": f".driftgate/{file_name}",
    }


def profile_schema() -> dict[str, Any]:
    """Schema of a consumer profile (`.driftgate/profiles/*.json|yaml`, `driftgate
    check-payload --profile`, the registry's PUT body)."""
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": "https://driftgate.dev/schemas/consumer-profile.schema.json",
        "title": "consumer profile",
        **TypeAdapter(ProfileDocument).json_schema(mode="validation"),
    }


def coverage_schema() -> dict[str, Any]:
    """Schema of `.driftgate/coverage.yaml`, the acknowledged local servers that the coverage
    gate reads (not the reconciler)."""
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": "https://driftgate.dev/schemas/coverage.schema.json",
        **CoverageFile.model_json_schema(mode="validation"),
        "title": ".driftgate/coverage.yaml",
    }


def mcp_lock_schema() -> dict[str, Any]:
    """Schema of `.driftgate/mcp.lock`, the pinned tool sets of MCP servers
    (`controller.toollock`); JSON, written by `driftgate mcp lock`."""
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": "https://driftgate.dev/schemas/mcp-lock.schema.json",
        **lock_schema(),
        "title": ".driftgate/mcp.lock",
    }


def all_schemas() -> dict[str, dict[str, Any]]:
    schemas = {
        "driftgate.schema.json": settings_schema(),
        "consumer-profile.schema.json": profile_schema(),
        "coverage.schema.json": coverage_schema(),
        "mcp-lock.schema.json": mcp_lock_schema(),
    }
    for file_name, (schema_name, _) in GITOPS_FILES.items():
        schemas[schema_name] = gitops_schema(file_name)
    return schemas


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write_all(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in all_schemas().items():
        path = directory / name
        path.write_text(render(schema), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":  # pragma: no cover - developer tool
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("config-schema")
    for path in write_all(target):
        print(f"wrote {path}")
