"""JSON samples (profiles), fingerprints, explanations and rules-file overrides."""

from __future__ import annotations

import pytest

from controller.diffs import (
    RulesFileError,
    apply_rules_file,
    canonical_json,
    diff_json_samples,
    explain_changes,
    fingerprint,
    infer_schema,
)


def test_infer_required_is_present_in_every_sample() -> None:
    schema = infer_schema([{"a": 1, "b": "x"}, {"a": 2.5}])
    assert schema["properties"]["a"] == {"type": "number"}
    assert schema["required"] == ["a"]


def test_profiles_differ_on_removed_optional_fields() -> None:
    base = [{"a": 1, "b": "x"}, {"a": 2}]
    rev = [{"a": 1}, {"a": 3}]
    hosted = diff_json_samples(base, rev, profile="hosted", multiple=True)
    cli = diff_json_samples(base, rev, profile="cli", multiple=True)
    assert [(c.rule, c.severity.value) for c in hosted] == [
        ("response-property-removed", "warning")
    ]
    assert [(c.rule, c.severity.value) for c in cli] == [
        ("response-property-removed-required", "breaking")
    ]


def test_hosted_profile_warns_on_a_field_missing_from_one_sample() -> None:
    """One sample cannot say a field was required: present before, missing after is a
    warning in the hosted profile (the hosted product's vectors), breaking in the cli one."""
    before = {"id": "ch_1", "amount": 100, "customer": {"id": "cus_1", "email": "a@b.c"}}
    after = {"id": "ch_1", "amount": 100, "customer": {"id": "cus_1"}}
    gone = {"id": "ch_1", "amount": 100}
    for revision, path in ((after, "/properties/customer/properties/email"), (gone, None)):
        hosted = diff_json_samples(before, revision, profile="hosted")
        cli = diff_json_samples(before, revision, profile="cli")
        assert [(c.rule, c.severity.value) for c in hosted] == [
            ("response-property-removed", "warning")
        ]
        assert [(c.rule, c.severity.value) for c in cli] == [
            ("response-property-removed-required", "breaking")
        ]
        assert path is None or hosted[0].path == path
    # Everything else keeps its class in both profiles.
    typed = diff_json_samples({"id": 1}, {"id": "1"}, profile="hosted")
    assert [c.severity.value for c in typed] == ["breaking"]


def test_sample_type_change_is_breaking() -> None:
    changes = diff_json_samples({"id": 1}, {"id": "1"})
    assert [(c.rule, c.severity.value) for c in changes] == [
        ("response-property-type-changed", "breaking")
    ]


def test_fingerprint_ignores_insignificant_differences() -> None:
    a = {"required": ["b", "a"], "enum": [2, 1], "x": 1.0, "tags": ["t2", "t1"]}
    b = {"tags": ["t1", "t2"], "x": 1, "enum": [1, 2], "required": ["a", "b"]}
    assert fingerprint(a) == fingerprint(b)
    assert canonical_json(a) == canonical_json(b)
    assert fingerprint(a) != fingerprint({**b, "x": 2})
    tools_a = {"tools": [{"name": "b"}, {"name": "a"}]}
    tools_b = {"tools": [{"name": "a"}, {"name": "b"}]}
    assert fingerprint(tools_a) == fingerprint(tools_b)
    assert len(fingerprint(a)) == 64


def test_explain_accepts_message_and_counts() -> None:
    result = explain_changes(
        [
            {"path": "/a", "severity": "breaking", "message": "gone", "rule": "endpoint-removed"},
            {"path": "/b", "severity": "info", "summary": "new", "rule": "some-foreign-rule"},
        ]
    )
    assert result["counts"] == {"breaking": 1, "warning": 0, "info": 1}
    first, second = result["changes"]
    assert first["summary"] == "gone" and first["hint"]
    assert second["agentAction"] == "accept_baseline" and second["hint"]
    assert result["summary"].startswith("1 breaking, 0 warning, 1 info")


def test_rules_file_override_and_ignore() -> None:
    changes = diff_json_samples({"a": 1, "b": 2}, {"a": "x"}, profile="hosted")
    rules = {
        "overrides": [{"rule": "response-property-type-changed", "severity": "warning"}],
        "ignore": [{"path": "/properties/b", "reason": "never read"}],
    }
    result = apply_rules_file(changes, rules)
    by_rule = {c.rule: c for c in result}
    assert by_rule["response-property-type-changed"].severity.value == "warning"
    removed = by_rule["response-property-removed"]
    assert removed.ignored and removed.ignoreReason == "never read"
    assert len(result) == len(changes)
    assert explain_changes(result)["ignored"] == 1


@pytest.mark.parametrize(
    "bad",
    [
        {"ignore": [{"rule": "endpoint-removed"}]},
        {"overrides": [{"rule": "no-such-rule", "severity": "info"}]},
        {"overrides": [{"rule": "endpoint-removed", "severity": "fatal"}]},
        {"unknown": 1},
    ],
)
def test_bad_rules_files_are_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(RulesFileError):
        apply_rules_file([], bad)
