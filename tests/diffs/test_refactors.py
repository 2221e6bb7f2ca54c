"""Equivalent refactors are no change; the ones that are not say what changed.

Covers `allOf` splits and joins, `anyOf` <-> `oneOf` switches, a schema added to or removed
from a media type (and OpenAPI 3.2 `itemSchema`), type changes where values are text on the
wire, property sunset dates, the opt-in version checks and the never-silent fallback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cli.main import main
from controller.diffs import diff_schemas
from controller.diffs.openapi import DiffOptions, diff_openapi

S: dict[str, Any] = {"type": "string"}
INT: dict[str, Any] = {"type": "integer"}
OBJ: dict[str, Any] = {
    "type": "object",
    "properties": {"a": S, "b": INT},
    "required": ["a"],
}
SPLIT: dict[str, Any] = {
    "allOf": [
        {"type": "object", "properties": {"a": S}, "required": ["a"]},
        {"type": "object", "properties": {"b": INT}, "description": "the b part"},
    ]
}


def rules(before: Any, after: Any, direction: str) -> dict[str, str]:
    return {c.rule: c.severity.value for c in diff_schemas(before, after, direction)}


def document(
    request: Any = None,
    response: Any = None,
    *,
    media: str = "application/json",
    version: str = "1.0.0",
    components: dict[str, Any] | None = None,
    keyword: str = "schema",
) -> dict[str, Any]:
    """One POST operation; `None` leaves the media type without a schema."""

    def content(schema: Any) -> dict[str, Any]:
        return {media: {} if schema is None else {keyword: schema}}

    operation: dict[str, Any] = {
        "requestBody": {"content": content(request)},
        "responses": {"200": {"description": "ok", "content": content(response)}},
    }
    out: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": version},
        "paths": {"/x": {"post": operation}},
    }
    if components is not None:
        out["components"] = components
    return out


def found(base: dict[str, Any], revision: dict[str, Any], **options: Any) -> dict[str, str]:
    changes = diff_openapi(base, revision, options=DiffOptions(**options))
    return {c.rule: c.severity.value for c in changes}


# -- allOf ---------------------------------------------------------------------------------


@pytest.mark.parametrize("direction", ["request", "response"])
def test_a_schema_split_into_all_of_parts_or_joined_back_is_no_change(direction: str) -> None:
    assert rules(OBJ, SPLIT, direction) == {}
    assert rules(SPLIT, OBJ, direction) == {}


def test_a_split_that_also_changes_the_schema_reports_the_change_not_the_split() -> None:
    stricter = json.loads(json.dumps(SPLIT))
    stricter["allOf"][1]["required"] = ["b"]
    assert rules(OBJ, stricter, "request") == {"request-property-became-required": "breaking"}
    assert rules(OBJ, stricter, "response") == {"response-property-became-required": "info"}


def test_a_bound_in_a_part_is_judged_as_if_written_in_the_schema() -> None:
    # One meaning, one verdict: `maxProperties` added through an `allOf` part is the same
    # constraint added to the schema itself.
    bounded = {"allOf": [OBJ, {"type": "object", "maxProperties": 3}]}
    assert rules(OBJ, bounded, "request") == rules(OBJ, {**OBJ, "maxProperties": 3}, "request")
    assert rules(OBJ, bounded, "request") == {"request-body-max-properties-set": "warning"}


def test_parts_that_do_not_merge_cleanly_are_compared_as_before() -> None:
    # Two parts with no type in common allow nothing: no merge, member by member.
    clash = {"allOf": [OBJ, {"type": "string"}]}
    found_rules = rules(OBJ, clash, "request")
    assert found_rules and "request-body-type-generalized" in found_rules


def test_an_annotation_only_part_added_or_dropped_is_info() -> None:
    noted = {"allOf": [OBJ, {"description": "a note"}]}
    assert rules(OBJ, noted, "request") == {"request-body-all-of-added-annotation-only": "info"}
    assert rules(noted, OBJ, "response") == {"response-body-all-of-removed-annotation-only": "info"}


def test_parts_regrouped_between_all_of_lists_stay_member_by_member() -> None:
    """Two `allOf` lists are compared part by part, as the field's reference does; a list
    cut down to one part is that part, compared merged."""
    x = {"type": "object", "properties": {"a": S}}
    y = {"type": "object", "properties": {"b": S}}
    xy = {"type": "object", "properties": {"a": S, "b": S}}
    # Inline parts pair up in order: x with xy, y with the bare object.
    assert rules({"allOf": [x, y]}, {"allOf": [xy, {"type": "object"}]}, "request") == {
        "request-property-added-optional": "info",
        "request-property-removed": "warning",
    }
    three = {"allOf": [x, y, {"type": "object", "properties": {"c": S}}]}
    assert rules({"allOf": [x, y]}, three, "request") == {"request-body-all-of-added": "breaking"}
    assert rules({"allOf": [x, y]}, {"allOf": [x]}, "request") == {
        "request-property-removed": "warning"
    }


# -- anyOf <-> oneOf -------------------------------------------------------------------------


@pytest.mark.parametrize("direction", ["request", "response"])
def test_any_of_and_one_of_over_disjoint_types_are_the_same(direction: str) -> None:
    assert rules({"anyOf": [S, INT]}, {"oneOf": [S, INT]}, direction) == {}
    assert rules({"oneOf": [S, INT]}, {"anyOf": [S, INT]}, direction) == {}


def test_any_of_and_one_of_over_tagged_alternatives_are_the_same() -> None:
    def tagged(kind: str) -> dict[str, Any]:
        return {"type": "object", "required": ["kind"], "properties": {"kind": {"const": kind}}}

    assert (
        rules(
            {"anyOf": [tagged("a"), tagged("b")]}, {"oneOf": [tagged("a"), tagged("b")]}, "request"
        )
        == {}
    )


def test_any_of_becoming_one_of_over_overlapping_alternatives_is_reported() -> None:
    overlapping = [OBJ, {"type": "object"}]
    assert rules({"anyOf": overlapping}, {"oneOf": overlapping}, "request") == {
        "request-body-any-of-became-one-of": "warning"
    }
    assert rules({"anyOf": overlapping}, {"oneOf": overlapping}, "response") == {
        "response-body-any-of-became-one-of": "info"
    }
    assert rules({"oneOf": overlapping}, {"anyOf": overlapping}, "response") == {
        "response-body-one-of-became-any-of": "warning"
    }


def test_a_switch_with_a_new_member_reports_only_the_member() -> None:
    after = {"oneOf": [S, INT, {"type": "boolean"}]}
    assert rules({"anyOf": [S, INT]}, after, "request") == {"request-body-one-of-added": "info"}
    assert rules({"anyOf": [S, INT]}, after, "response") == {
        "response-body-one-of-added": "breaking"
    }


# -- media types ---------------------------------------------------------------------------


def test_a_schema_added_to_or_removed_from_a_media_type_is_one_change() -> None:
    assert found(document(None, OBJ), document(OBJ, OBJ)) == {
        "request-body-media-type-schema-added": "warning"
    }
    assert found(document(OBJ, OBJ), document(None, OBJ)) == {
        "request-body-media-type-schema-removed": "info"
    }
    assert found(document(OBJ, None), document(OBJ, OBJ)) == {
        "response-body-media-type-schema-added": "info"
    }
    assert found(document(OBJ, OBJ), document(OBJ, None)) == {
        "response-body-media-type-schema-removed": "warning"
    }


def test_item_schemas_of_streamed_bodies_are_compared() -> None:
    stream = "application/jsonl"
    before = document(OBJ, OBJ, media=stream, keyword="itemSchema")
    narrower = json.loads(json.dumps(before))
    narrower["paths"]["/x"]["post"]["responses"]["200"]["content"][stream]["itemSchema"][
        "required"
    ] = []
    assert found(before, narrower) == {"response-property-became-optional": "breaking"}
    untyped = document(OBJ, None, media=stream, keyword="itemSchema")
    assert found(before, untyped) == {
        "response-body-media-type-item-schema-removed-untyped": "warning"
    }
    assert found(untyped, before) == {"response-body-media-type-item-schema-added": "info"}


def test_a_type_change_where_values_are_text_is_judged_by_the_texts_accepted() -> None:
    """Where values are text on the wire (XML, headers), an integer is a string that fewer
    texts satisfy: string -> integer narrows (breaks senders), integer -> string widens
    (breaks readers); an object where a string was is not told apart in XML at all."""
    xml = "application/xml"
    assert found(document(S, None, media=xml), document(INT, None, media=xml)) == {
        "request-body-type-specialized": "breaking"
    }
    assert found(document(INT, None, media=xml), document(S, None, media=xml)) == {
        "request-body-type-generalized": "info"
    }
    assert found(document(OBJ, None, media=xml), document(S, None, media=xml)) == {
        "request-body-type-compatible": "info"
    }
    assert found(document(S, None), document(INT, None)) == {
        "request-body-type-changed": "breaking"
    }
    base = document(None, None)
    revision = json.loads(json.dumps(base))
    for doc, kind in ((base, INT), (revision, S)):
        doc["paths"]["/x"]["post"]["responses"]["200"]["headers"] = {"X-Count": {"schema": kind}}
    assert found(base, revision) == {"response-header-type-generalized": "breaking"}
    assert found(revision, base) == {"response-header-type-specialized": "info"}


# -- lifecycle and versions ----------------------------------------------------------------


def test_a_property_deprecated_with_a_sunset_that_is_not_a_date() -> None:
    before = {"type": "object", "properties": {"a": S}}
    after = {"type": "object", "properties": {"a": {**S, "deprecated": True, "x-sunset": "soon"}}}
    assert rules(before, after, "response") == {
        "response-property-deprecated-sunset-invalid": "info"
    }
    dated = {
        "type": "object",
        "properties": {"a": {**S, "deprecated": True, "x-sunset": "2030-01-01"}},
    }
    assert rules(before, dated, "response") == {"response-property-deprecated-with-sunset": "info"}


def test_version_checks_are_opt_in_and_follow_the_version_number() -> None:
    removed = {"type": "object", "properties": {"b": INT}}
    same = (document(OBJ, OBJ), document(OBJ, removed))
    assert "api-version-not-bumped" not in found(*same)
    assert found(*same, check_version=True)["api-version-not-bumped"] == "warning"
    lower = (document(OBJ, OBJ, version="2.0.0"), document(OBJ, removed, version="1.9.0"))
    assert found(*lower, check_version=True)["api-version-decreased"] == "warning"
    minor = (document(OBJ, OBJ, version="2.0.0"), document(OBJ, removed, version="2.1.0"))
    assert found(*minor, check_version=True)["api-major-version-not-bumped"] == "warning"
    major = (document(OBJ, OBJ, version="2.0.0"), document(OBJ, removed, version="3.0.0"))
    assert not any(r.startswith("api-") for r in found(*major, check_version=True))
    # Nothing breaking: nothing to say about the version.
    info_only = (document(OBJ, removed), document(OBJ, {**removed, "description": "d"}))
    assert found(*info_only, check_version=True) == {}


def test_the_cli_reports_version_checks_when_asked(tmp_path: Path) -> None:
    base, revision = tmp_path / "a.json", tmp_path / "b.json"
    base.write_text(json.dumps(document(OBJ, OBJ)))
    revision.write_text(json.dumps(document(OBJ, {"type": "object"})))
    runner = CliRunner()
    plain = runner.invoke(main, ["diff", str(base), str(revision), "--format", "json"])
    asked = runner.invoke(
        main, ["diff", str(base), str(revision), "--format", "json", "--check-version"]
    )
    assert plain.exit_code == asked.exit_code == 1
    assert "api-version-not-bumped" not in plain.output
    rules_asked = {c["rule"] for c in json.loads(asked.output)["changes"]}
    assert "api-version-not-bumped" in rules_asked


# -- never silent ------------------------------------------------------------------------


def test_a_reference_inlined_while_its_component_goes_is_no_change() -> None:
    components = {"schemas": {"Obj": OBJ}}
    by_reference = document({"$ref": "#/components/schemas/Obj"}, None, components=components)
    assert found(by_reference, document(OBJ, None)) == {}


def test_a_new_component_section_the_rules_do_not_read_is_unclassified() -> None:
    callbacks = {
        "callbacks": {
            "done": {
                "{$request.body#/url}": {"post": {"responses": {"200": {"description": "ok"}}}}
            }
        }
    }
    assert found(document(OBJ, None), document(OBJ, None, components=callbacks)) == {
        "unclassified-difference": "warning"
    }
