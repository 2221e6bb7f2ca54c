"""The `.driftgate/` loader reads YAML safely and says where it fails: the parser's position,
duplicate keys (merge keys are not), aliases bounded, empty files and non-mappings, encodings,
control characters and tags, dates and numbers that need quotes, one document per file."""

from __future__ import annotations

import yaml

from controller.gitsources.load import load_bundle
from tests.gitsources.conftest import (
    load,
    only,
    problems,
)


def test_invalid_yaml_reports_the_parser_position() -> None:
    text = "version: 1\nagents:\n  - id: a\n    policy: [unclosed\n"
    (problem,) = load(agents=text).problems
    assert problem.file == ".driftgate/agents.yaml"
    assert (problem.line, problem.column) == (5, 1)
    assert problem.message.startswith("invalid YAML: ")


def test_a_tab_indentation_is_invalid_yaml_with_its_position() -> None:
    assert problems(agents="version: 1\nagents:\n\t- id: a\n") == [
        (
            ".driftgate/agents.yaml",
            3,
            1,
            "invalid YAML: found character that cannot start any token"
            if yaml.__with_libyaml__
            else "invalid YAML: found character '\\t' that cannot start any token",
        )
    ]


def test_duplicate_keys_name_both_lines() -> None:
    text = "version: 1\nagents:\n  - id: a\n    policy: notify-only\n    policy: staging-strict\n"
    problem = only(agents=text)
    assert (problem.line, problem.column) == (5, 5)
    assert problem.message == "duplicate key 'policy' (first at line 4)"
    assert problem.path == "agents[0].policy"
    assert load(agents=text).agents is None


def test_merge_keys_are_not_duplicates() -> None:
    text = """\
        version: 1
        agents:
          - &base
            id: a
            policy: staging-strict
          - <<: *base
            id: b
        """
    bundle = load(agents=text)
    assert bundle.problems == []
    assert bundle.agents is not None
    assert [(a.id, a.policy) for a in bundle.agents.agents] == [
        ("a", "staging-strict"),
        ("b", "staging-strict"),
    ]


def test_alias_expansion_is_bounded() -> None:
    lines = ["version: 1", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 8):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    problem = only(agents="\n".join(lines) + "\n")
    assert problem.message == "too many values (more than 100000)"
    assert (problem.line, problem.column) == (6, 1)  # a4 is the first to expand past the limit


def test_recursive_aliases_and_deep_nesting_are_refused() -> None:
    problem = only(agents="version: 1\nagents: &loop [*loop]\n")
    assert (problem.line, problem.column) == (2, 1)
    assert problem.message == "nested deeper than 64 levels"
    assert only(agents="version: 1\nagents: " + "[" * 70 + "]" * 70 + "\n").line == 2


def test_empty_file_and_non_mapping() -> None:
    assert problems(agents="# nothing yet\n") == [
        (".driftgate/agents.yaml", 1, 1, "the file is empty: start it with `version: 1`")
    ]
    assert problems(agents="- id: a\n") == [
        (
            ".driftgate/agents.yaml",
            1,
            1,
            "the file must be a mapping that starts with `version: 1`",
        )
    ]


def test_not_utf8() -> None:
    bundle = load_bundle({"agents.yaml": b"version: 1\nagents:\n  - id: caf\xe9\n"})
    assert [(p.line, p.column, p.message) for p in bundle.problems] == [
        (3, 12, "the file is not UTF-8 text: save it as UTF-8")
    ]


def test_control_characters_and_unsafe_tags() -> None:
    assert problems(agents="version: 1\nagents:\n  - id: a\x07b\n") == [
        (".driftgate/agents.yaml", 3, 10, "invalid YAML: a control character is not allowed")
    ]
    problem = only(agents="version: 1\nagents:\n  - id: !!python/name:os.system x\n")
    assert (problem.line, problem.column) == (3, 9)
    assert problem.message.startswith("invalid YAML: could not determine a constructor")


def test_unquoted_dates_and_numbers_ask_for_quotes() -> None:
    assert problems(agents="version: 1\nagents:\n  - id: a\n    environment: 2024-01-01\n") == [
        (
            ".driftgate/agents.yaml",
            4,
            18,
            "environment must be a string, not a date (quote the value)",
        )
    ]


def test_multiple_documents_are_refused() -> None:
    problem = only(agents="version: 1\nagents: []\n---\nversion: 1\n")
    assert (problem.line, problem.column) == (3, 1)
    assert problem.message == (
        "invalid YAML: expected a single document in the stream, but found another document"
    )


# Step 2: schema
