"""What the `.driftgate/` loader checks across entries and files: every error of every file at
once, duplicate ids, slugs and names, policies that exist, watches listed once, templates that
exist and have what a watch needs, and inline watches that agree with their declaration."""

from __future__ import annotations

from textwrap import dedent

from controller.gitsources.load import load_bundle
from tests.gitsources.conftest import (
    VALID_TEMPLATES,
    VALID_WATCH_SETS,
    only,
    problems,
)


def test_every_error_of_every_file_is_reported_at_once() -> None:
    found = problems(
        agents="version: 1\nagents:\n  - id: A\n  - {}\n",
        templates="version: 1\ntemplates: {}\n",
        watch_sets="version: 1\nwatchSets:\n  - name: ''\n",
    )
    assert [(file.rsplit("/")[-1], line, column) for file, line, column, _ in found] == [
        ("agents.yaml", 3, 9),
        ("agents.yaml", 4, 5),
        ("templates.yaml", 2, 12),
        ("watch-sets.yaml", 3, 11),
    ]
    assert found[2][3] == "templates must be a list, not a mapping"
    assert found[3][3] == "name must not be empty"


# Step 4: semantics


def test_duplicate_agent_ids_and_slugs() -> None:
    text = """\
        version: 1
        agents:
          - id: billing
          - id: billing
          - id: triage
            slug: billing-v2
          - id: billing-v2
        """
    assert problems(agents=text) == [
        (".driftgate/agents.yaml", 4, 9, "duplicate agent id or slug 'billing' (first at line 3)"),
        (
            ".driftgate/agents.yaml",
            7,
            9,
            "duplicate agent id or slug 'billing-v2' (first at line 6)",
        ),
    ]


def test_an_agent_policy_must_be_a_preset_or_declared() -> None:
    text = """\
        version: 1
        policies:
          review-first: {}
        agents:
          - id: a
            policy: review-frist
          - id: b
            policy: review-first
        """
    problem = only(agents=text)
    assert (problem.line, problem.column) == (6, 13)
    assert problem.message == (
        "unknown policy 'review-frist': use a preset (notify-only, staging-strict, "
        "production-guard) or declare it under policies; did you mean 'review-first'?"
    )
    assert problem.path == "agents[0].policy"


def test_an_agent_lists_a_watch_once() -> None:
    text = "version: 1\nagents:\n  - id: a\n    watches: [x, y, x]\n"
    problem = only(agents=text)
    assert (problem.line, problem.column) == (4, 21)
    assert problem.message == "duplicate watch 'x' (first at line 4)"


def test_unknown_templates() -> None:
    text = """\
        version: 1
        watchSets:
          - name: prod
            watches:
              - name: a
                template: strpe
              - name: b
                template: system/stripe-openapi
        """
    assert problems(templates=VALID_TEMPLATES, watch_sets=text) == [
        (
            ".driftgate/watch-sets.yaml",
            6,
            19,
            "unknown template 'strpe': not in templates.yaml; did you mean 'stripe'?",
        ),
        (
            ".driftgate/watch-sets.yaml",
            8,
            19,
            "unknown template 'system/stripe-openapi': not in templates.yaml",
        ),
    ]
    bundle = load_bundle(
        {"templates.yaml": VALID_TEMPLATES.encode(), "watch-sets.yaml": dedent(text).encode()},
        known_templates={"system/stripe-openapi"},
    )
    assert [p.message for p in bundle.problems] == [
        "unknown template 'strpe': not in templates.yaml or the catalog; did you mean 'stripe'?"
    ]


def test_a_template_with_placeholders_needs_a_url() -> None:
    templates = (
        "version: 1\ntemplates:\n  - name: any-openapi\n    watchType: openapi\n"
        "    urlPattern: https://{host}/openapi.json\n"
    )
    sets = """\
        version: 1
        watchSets:
          - name: prod
            watches:
              - name: a
                template: any-openapi
              - name: b
                template: any-openapi
                url: https://b.example.com/openapi.json
        """
    problem = only(templates=templates, watch_sets=sets)
    assert (problem.line, problem.column) == (6, 19)
    assert problem.message == (
        "template 'any-openapi' has {placeholders} in its urlPattern: give url"
    )


def test_duplicate_names_in_templates_and_watch_sets() -> None:
    templates = VALID_TEMPLATES + (
        "  - name: stripe\n    watchType: openapi\n    urlPattern: https://s.example.com/x\n"
    )
    sets = """\
        version: 1
        watchSets:
          - name: prod
            watches:
              - {name: a, url: "https://a.example.com/openapi.json", watchType: openapi}
          - name: prod
            watches:
              - {name: a, url: "https://a.example.com/openapi.json", watchType: openapi}
        """
    assert problems(templates=templates, watch_sets=sets) == [
        (".driftgate/templates.yaml", 11, 11, "duplicate template name 'stripe' (first at line 3)"),
        (".driftgate/watch-sets.yaml", 6, 11, "duplicate watch set 'prod' (first at line 3)"),
        (".driftgate/watch-sets.yaml", 8, 16, "duplicate watch 'a' (first at line 5)"),
    ]


def test_an_inline_watch_may_repeat_a_declaration_but_not_contradict_it() -> None:
    agents = """\
        version: 1
        agents:
          - id: a
            watches:
              - {name: github-mcp, url: "https://mcp.example.com/mcp", type: mcp}
              - {name: petstore, url: "https://petstore.example.com/v3.json", type: openapi}
          - id: b
            watches:
              - {name: github-mcp, url: "https://other.example.com/mcp", type: mcp}
              - {name: petstore, url: "https://petstore.example.com/v3.json", type: openapi}
        """
    problem = only(agents=agents, templates=VALID_TEMPLATES, watch_sets=VALID_WATCH_SETS)
    assert (problem.file, problem.line, problem.column) == (".driftgate/agents.yaml", 9, 16)
    assert problem.message == (
        "watch 'github-mcp' is declared with another URL or type in watch-sets.yaml (line 9); "
        "refer to it by name"
    )


# Files
