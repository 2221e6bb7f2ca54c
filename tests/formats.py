"""The CI report formats checked against their published schemas (tests/fixtures/formats):
SARIF 2.1.0 against OASIS's JSON schema, JUnit XML against the Jenkins xUnit `junit-10.xsd`.

A document that does not validate fails the test with every error the validator names.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import xmlschema

SCHEMAS = Path(__file__).parent / "fixtures" / "formats"


@cache
def _sarif_validator() -> jsonschema.Draft4Validator:
    schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())


@cache
def _junit_schema() -> xmlschema.XMLSchema10:
    return xmlschema.XMLSchema10(SCHEMAS / "junit-10.xsd")


def assert_valid_sarif(log: Any) -> None:
    """`log` (a parsed SARIF document) is valid SARIF 2.1.0."""
    errors = [
        f"{'/'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}"
        for error in _sarif_validator().iter_errors(log)
    ]
    assert not errors, "not valid SARIF 2.1.0:\n" + "\n".join(errors)


def assert_valid_junit(text: str) -> None:
    """`text` is a JUnit XML report valid against junit-10.xsd."""
    errors = [str(error) for error in _junit_schema().iter_errors(text)]
    assert not errors, "not valid JUnit XML (junit-10.xsd):\n" + "\n".join(errors)
