"""Diff of two standalone JSON Schemas into classified changes (direction chosen by caller)."""

from __future__ import annotations

from typing import Any

from controller.diffs.core import changes_from_findings
from controller.diffs.jsonschema import diff_schemas as _diff_findings
from controller.diffs.rules import Direction
from controller.model.change import Change


def diff_schemas(base: Any, revision: Any, direction: Direction | str) -> list[Change]:
    """Return classified changes between two JSON Schemas used as a request or a response."""
    d = Direction(direction)
    root, nested = (
        ("request-body", "request-property")
        if d is Direction.REQUEST
        else (
            "response-body",
            "response-property",
        )
    )
    return changes_from_findings(
        _diff_findings(base, revision, d),
        direction=d,
        root_prefix=root,
        nested_prefix=nested,
        pointer="",
        location=None,
        label=f"{d.value} schema",
    )
