"""The committed config-schema/ files are exactly what the models generate, and they work."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml

from controller.gitsources.configschema import all_schemas, render

ROOT = Path(__file__).resolve().parents[2]


def test_committed_schemas_match_the_models() -> None:
    for name, schema in all_schemas().items():
        committed = (ROOT / "config-schema" / name).read_text(encoding="utf-8")
        assert committed == render(schema), f"config-schema/{name} is stale: run `make generate`"


def test_example_config_validates() -> None:
    schema = all_schemas()["driftgate.schema.json"]
    jsonschema.Draft202012Validator.check_schema(schema)
    example = yaml.safe_load((ROOT / "examples" / "driftgate.yaml").read_text(encoding="utf-8"))
    jsonschema.validate(example, schema)
    errors = list(
        jsonschema.Draft202012Validator(schema).iter_errors({"port": "eighty", "colour": 1})
    )
    assert len(errors) == 2


def test_every_schema_is_generated_and_committed() -> None:
    committed = {path.name for path in (ROOT / "config-schema").glob("*.json")}
    assert committed == set(all_schemas())
    assert {"agents.schema.json", "templates.schema.json", "watch-sets.schema.json"} <= committed


def test_example_gitops_files_validate() -> None:
    for name in ("agents", "templates", "watch-sets", "dashboards"):
        schema = all_schemas()[f"{name}.schema.json"]
        jsonschema.Draft202012Validator.check_schema(schema)
        example = yaml.safe_load((ROOT / "examples" / f"{name}.yaml").read_text(encoding="utf-8"))
        jsonschema.validate(example, schema)
