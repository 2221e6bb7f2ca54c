"""The `.driftgate/` loader: every problem at its exact line and column, all of them at once."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest
import yaml

from controller.gitsources.load import FILES, Bundle, Problem, load_bundle
from controller.model.gitops import (
    POLICY_PRESETS,
    AgentsFile,
    InlineWatch,
    Policy,
    env_reference,
    is_sensitive_header,
)
from controller.model.watch import WatchType

ROOT = Path(__file__).resolve().parents[2]

AGENTS = """\
version: 1
policies:
  review-first:
    on_breaking: [notify, draft_pr]
    require_ack_to_unblock: true
agents:
  - id: billing-agent
    name: Billing agent
    environment: production
    policy: production-guard
    watches:
      - stripe-api
      - {name: petstore, url: "https://petstore.example.com/openapi.json", type: openapi}
    runtime_webhook: https://orchestrator.example.com/hooks/driftgate
    repoRef: acme/billing-agent@main
  - id: triage-bot
    slug: triage
    policy: review-first
"""

TEMPLATES = """\
version: 1
templates:
  - name: stripe
    watchType: openapi
    urlPattern: https://stripe.example.com/openapi.json
    policyPreset: production-guard
    headers:
      Authorization: ${env:STRIPE_AUTHORIZATION}
      Stripe-Version: "2024-06-20"
    tags: [vendor:stripe]
"""

WATCH_SETS = """\
version: 1
watchSets:
  - name: production
    environment: production
    watches:
      - name: stripe-api
        template: stripe
        intervalMinutes: 5
      - name: github-mcp
        url: https://mcp.example.com/mcp
        watchType: mcp
"""


def load(**texts: str) -> Bundle:
    """Load files given as keyword arguments: agents=..., templates=..., watch_sets=..."""
    files = {f"{key.replace('_', '-')}.yaml": dedent(text).encode() for key, text in texts.items()}
    return load_bundle(files)


def problems(**texts: str) -> list[tuple[str, int, int, str]]:
    return [(p.file, p.line, p.column, p.message) for p in load(**texts).problems]


def only(**texts: str) -> Problem:
    found = load(**texts).problems
    assert len(found) == 1, found
    return found[0]


def test_a_valid_bundle_builds_the_models() -> None:
    bundle = load(agents=AGENTS, templates=TEMPLATES, watch_sets=WATCH_SETS)
    assert bundle.problems == [] and bundle.ok
    assert bundle.agents is not None and bundle.templates is not None
    assert bundle.watch_sets is not None
    billing, triage = bundle.agents.agents
    assert billing.slug == "billing-agent" and triage.slug == "triage"
    assert billing.watches[0] == "stripe-api"
    inline = billing.watches[1]
    assert isinstance(inline, InlineWatch) and inline.watch_type is WatchType.OPENAPI
    assert billing.repo_ref == "acme/billing-agent@main"
    assert triage.policy == "review-first" and triage.environment is None
    policy = bundle.agents.policies["review-first"]
    assert policy.on_breaking == ["notify", "draft_pr"] and policy.on_warning == ["notify"]
    assert policy.require_ack_to_unblock and policy.auto_resolve_incident
    template = bundle.templates.templates[0]
    assert template.headers["Authorization"] == "${env:STRIPE_AUTHORIZATION}"
    entry = bundle.watch_sets.watch_sets[0].watches[0]
    assert entry.template == "stripe" and entry.interval_minutes == 5 and entry.url is None


def test_defaults() -> None:
    bundle = load(agents="version: 1\nagents:\n  - id: a\n")
    assert bundle.agents is not None
    agent = bundle.agents.agents[0]
    assert (agent.slug, agent.policy, agent.watches, agent.runtime_webhook) == (
        "a",
        "notify-only",
        [],
        None,
    )
    assert bundle.agents.policies == {}


def test_a_single_action_is_a_list_of_one() -> None:
    policy = Policy.model_validate({"on_breaking": "kill_in_flight", "on_warning": []})
    assert policy.on_breaking == ["kill_in_flight"] and policy.on_warning == []


def test_model_dump_by_alias_round_trips() -> None:
    bundle = load(agents=AGENTS)
    assert bundle.agents is not None
    dumped = bundle.agents.model_dump(by_alias=True, exclude_none=True)
    assert dumped["agents"][0]["repoRef"] == "acme/billing-agent@main"
    assert dumped["agents"][0]["watches"][1]["type"] == "openapi"
    assert AgentsFile.model_validate(dumped) == bundle.agents


def test_problems_are_formatted_file_line_column() -> None:
    problem = Problem(".driftgate/agents.yaml", 3, 7, "something", "agents[0].policy")
    assert str(problem) == ".driftgate/agents.yaml:3:7: something"


def test_locate_finds_values_keys_and_ancestors() -> None:
    bundle = load(agents=AGENTS)
    assert bundle.locate("agents.yaml", ("agents", 0, "policy")) == (10, 13)
    assert bundle.locate(".driftgate/agents.yaml", ("agents", 0, "policy"), key=True) == (10, 5)
    assert bundle.locate("agents.yaml", ("agents", 0, "watches", 1, "url")) == (13, 31)
    assert bundle.locate("agents.yaml", ("agents", 0, "nothing", 3)) == (7, 5)
    assert bundle.locate("templates.yaml", ("templates",)) == (1, 1)


# Step 1: YAML


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


def test_version() -> None:
    assert problems(agents="version: 2\nagents: []\n") == [
        (".driftgate/agents.yaml", 1, 10, "unsupported version 2: only version 1 exists")
    ]
    assert problems(agents='version: "1"\nagents: []\n') == [
        (".driftgate/agents.yaml", 1, 10, "version must be a whole number, not a string")
    ]
    assert problems(agents="agents: []\n") == [
        (".driftgate/agents.yaml", 1, 1, "missing required key 'version'")
    ]


def test_a_missing_key_is_reported_at_its_mapping() -> None:
    text = "version: 1\nagents:\n  - id: a\n  - name: No id\n    policy: staging-strict\n"
    problem = only(agents=text)
    assert (problem.line, problem.column, problem.message) == (4, 5, "missing required key 'id'")
    assert problem.path == "agents[1].id"


def test_unknown_keys_suggest_the_right_one() -> None:
    text = "version: 1\nagents:\n  - id: a\n    repo_ref: acme/a@main\n    colour: blue\n"
    assert problems(agents=text) == [
        (".driftgate/agents.yaml", 4, 5, "unknown key 'repo_ref': did you mean 'repoRef'?"),
        (
            ".driftgate/agents.yaml",
            5,
            5,
            "unknown key 'colour' (expected id, slug, name, environment, policy, watches, "
            "runtime_webhook, repoRef, vendoredPaths, approvals, a2a, mcp, tool_costs)",
        ),
    ]


def test_value_errors_point_at_the_value() -> None:
    text = """\
        version: 1
        agents:
          - id: Billing Agent
            environment: yes
            runtime_webhook: http://orchestrator.example.com/hook
            repoRef: not a ref
            watches:
              - 5
              - {name: x, url: "ftp://example.com/spec", type: soap}
        """
    assert problems(agents=text) == [
        (
            ".driftgate/agents.yaml",
            3,
            9,
            "id must be a lowercase slug: a-z, 0-9, '-' and '_', at most 64 characters, "
            "starting and ending with a letter or digit",
        ),
        (
            ".driftgate/agents.yaml",
            4,
            18,
            "environment must be a string, not true or false (quote the value)",
        ),
        (".driftgate/agents.yaml", 5, 22, "runtime_webhook must be an https:// URL"),
        (".driftgate/agents.yaml", 6, 14, "repoRef must look like owner/repo@branch"),
        (
            ".driftgate/agents.yaml",
            8,
            9,
            "watches[0] must be a watch name, id or URL, or an inline watch {name, url, watchType}",
        ),
        (
            ".driftgate/agents.yaml",
            9,
            24,
            "url must be an absolute http:// or https:// URL",
        ),
        (
            ".driftgate/agents.yaml",
            9,
            56,
            "type must be one of openapi, rest, mcp, a2a_card, api, not 'soap'",
        ),
    ]


def test_policies() -> None:
    text = """\
        version: 1
        policies:
          notify-only:
            on_breaking: notify
          Loud:
            on_breaking: [notify, page_everyone]
            on_warning: [notify, notify]
        agents: []
        """
    assert problems(agents=text) == [
        (
            ".driftgate/agents.yaml",
            3,
            3,
            "policy 'notify-only' shadows the built-in preset; choose another name",
        ),
        (
            ".driftgate/agents.yaml",
            5,
            3,
            "policy name 'Loud' must be a lowercase slug: a-z, 0-9, '-' and '_', at most 64 "
            "characters, starting and ending with a letter or digit",
        ),
        (
            ".driftgate/agents.yaml",
            6,
            27,
            "on_breaking[1] must be one of notify, draft_pr, block_new_runs, kill_in_flight, "
            "not 'page_everyone'",
        ),
        (".driftgate/agents.yaml", 7, 17, "on_warning must not list the same value twice"),
    ]


def test_watch_set_entries_need_a_template_or_url_and_type() -> None:
    text = """\
        version: 1
        watchSets:
          - name: prod
            watches:
              - name: a
                url: https://a.example.com/openapi.json
              - name: b
                template: stripe
                watchType: openapi
              - name: c
                type: mcp
                url: https://c.example.com/mcp
                intervalMinutes: 0
        """
    assert problems(templates=TEMPLATES, watch_sets=text) == [
        (
            ".driftgate/watch-sets.yaml",
            5,
            9,
            "missing 'watchType': give template, or url and watchType",
        ),
        (".driftgate/watch-sets.yaml", 9, 9, "watchType comes from the template; remove it"),
        (
            ".driftgate/watch-sets.yaml",
            10,
            9,
            "missing 'watchType': give template, or url and watchType",
        ),
        (".driftgate/watch-sets.yaml", 11, 9, "unknown key 'type': did you mean 'watchType'?"),
        (".driftgate/watch-sets.yaml", 13, 26, "intervalMinutes must be at least 1"),
    ]


SECRET_SETS = """\
version: 1
watchSets:
  - name: prod
    watches:
      - name: a
        url: https://a.example.com/openapi.json
        watchType: openapi
        headers:
          Authorization: Bearer sk_live_0123456789abcdef
          X-Api-Key: sk_live_0123456789abcdef
          X-Session-Token: ${env:lower_case}
          Cookie: ${env:SESSION_COOKIE}
          Accept-Language: en
          Bad Header: x
"""


def test_plain_secrets_are_refused_without_being_echoed() -> None:
    found = load(watch_sets=SECRET_SETS).problems
    assert [(p.line, p.column, p.message) for p in found] == [
        (9, 26, "header Authorization: plain secrets in git are refused: use ${env:NAME}"),
        (10, 22, "header X-Api-Key: plain secrets in git are refused: use ${env:NAME}"),
        (
            11,
            28,
            "header X-Session-Token: write ${env:NAME} with NAME in A-Z, 0-9 and _ "
            "(the whole value)",
        ),
        (14, 11, "'Bad Header' is not a valid header name"),
    ]
    assert found[0].path == "watchSets[0].watches[0].headers.Authorization"
    assert found[3].path == 'watchSets[0].watches[0].headers["Bad Header"]'
    assert not any("sk_live" in str(p) or "lower_case" in str(p) for p in found)


def test_env_references_and_plain_ordinary_headers_are_accepted() -> None:
    bundle = load(templates=TEMPLATES)
    assert bundle.problems == []
    assert bundle.templates is not None
    headers = bundle.templates.templates[0].headers
    assert env_reference(headers["Authorization"]) == "STRIPE_AUTHORIZATION"
    assert env_reference(headers["Stripe-Version"]) is None


@pytest.mark.parametrize(
    ("name", "sensitive"),
    [
        ("Authorization", True),
        ("proxy-authorization", True),
        ("Cookie", True),
        ("X-API-Key", True),
        ("X-Auth-Token", True),
        ("X-Client-Secret", True),
        ("Db-Password", True),
        ("Accept", False),
        ("Stripe-Version", False),
        ("Set-Cookie-Policy", False),
    ],
)
def test_sensitive_header_names(name: str, sensitive: bool) -> None:
    assert is_sensitive_header(name) is sensitive
    text = (
        "version: 1\ntemplates:\n  - name: t\n    watchType: rest\n"
        f"    urlPattern: https://x.example.com/v1\n    headers:\n      {name}: plain\n"
    )
    assert load(templates=text).ok is not sensitive


def test_templates() -> None:
    text = """\
        version: 1
        templates:
          - name: stripe
            watchType: soap
            urlPattern: https://{host}/openapi.json
            policyPreset: strict
            tags: ["-x"]
          - name: other
        """
    assert problems(templates=text) == [
        (
            ".driftgate/templates.yaml",
            4,
            16,
            "watchType must be one of openapi, rest, mcp, a2a_card, api, not 'soap'",
        ),
        (
            ".driftgate/templates.yaml",
            6,
            19,
            "policyPreset must be one of notify-only, staging-strict, production-guard, "
            "not 'strict'",
        ),
        (
            ".driftgate/templates.yaml",
            7,
            12,
            "tags[0] must be a tag: letters, digits and _.:/=@+-, starting with a letter or digit",
        ),
        (".driftgate/templates.yaml", 8, 5, "missing required key 'urlPattern'"),
        (".driftgate/templates.yaml", 8, 5, "missing required key 'watchType'"),
    ]


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
    assert problems(templates=TEMPLATES, watch_sets=text) == [
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
        {"templates.yaml": TEMPLATES.encode(), "watch-sets.yaml": dedent(text).encode()},
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
    templates = TEMPLATES + (
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
    problem = only(agents=agents, templates=TEMPLATES, watch_sets=WATCH_SETS)
    assert (problem.file, problem.line, problem.column) == (".driftgate/agents.yaml", 9, 16)
    assert problem.message == (
        "watch 'github-mcp' is declared with another URL or type in watch-sets.yaml (line 9); "
        "refer to it by name"
    )


# Files


def test_misnamed_files_are_pointed_out_and_others_ignored() -> None:
    bundle = load_bundle(
        {
            "agents.yml": b"version: 1\nagents: []\n",
            "watch_sets.yaml": b"",
            "README.md": b"# hello",
            "notes.yaml": b"x: 1",
        },
        directory="repo/.driftgate",
    )
    assert [str(p) for p in bundle.problems] == [
        "repo/.driftgate/agents.yml:1:1: did you mean agents.yaml? driftgate reads only "
        "agents.yaml, templates.yaml, watch-sets.yaml, dashboards.yaml",
        "repo/.driftgate/watch_sets.yaml:1:1: did you mean watch-sets.yaml? driftgate reads only "
        "agents.yaml, templates.yaml, watch-sets.yaml, dashboards.yaml",
    ]
    assert bundle.agents is None


def test_problems_are_sorted_by_file_line_column() -> None:
    found = load(
        watch_sets=SECRET_SETS, agents="version: 1\nagents:\n  - id: B\n  - id: C\n"
    ).problems
    keys = [(p.file, p.line, p.column) for p in found]
    assert keys == sorted(keys) and keys[0][0] == ".driftgate/agents.yaml"


def test_the_examples_load_without_problems() -> None:
    examples = ROOT / "examples"
    files = {name: (examples / name).read_bytes() for name in FILES}
    split = sorted((examples / "watch-sets").glob("*.yaml"))
    files |= {f"watch-sets/{path.name}": path.read_bytes() for path in split}
    bundle = load_bundle(files, directory="examples")
    assert bundle.problems == []
    assert bundle.agents is not None and bundle.watch_sets is not None
    assert len(bundle.watch_set_files) == 1 + len(split) > 1
    declared = {w.name for s in bundle.watch_sets.watch_sets for w in s.watches}
    referenced = {w for a in bundle.agents.agents for w in a.watches if isinstance(w, str)}
    assert {"stripe-api", "github-mcp", "partner-orders"} <= declared
    assert referenced <= declared
    assert {a.policy for a in bundle.agents.agents} <= {*POLICY_PRESETS, *bundle.agents.policies}


def test_a_file_that_could_not_be_read_is_a_problem_and_never_counts_as_absent() -> None:
    from controller.gitsources.load import is_read
    from controller.model.gitops import Unreadable

    sets = (
        "version: 1\nwatchSets:\n  - name: prod\n    watches:\n"
        "      - {name: s, template: stripe, url: 'https://example.com/s.json'}\n"
    )
    bundle = load_bundle(
        {"watch-sets.yaml": sets.encode()},
        unreadable={
            "templates.yaml": Unreadable("symlink"),
            "profiles/orders.json": Unreadable("too_large", 2048, 1024),
            "agents.yml": Unreadable("directory"),  # a near miss: said as such
        },
    )
    assert [str(problem) for problem in bundle.problems] == [
        ".driftgate/agents.yml:1:1: did you mean agents.yaml? driftgate reads only agents.yaml, "
        "templates.yaml, watch-sets.yaml, dashboards.yaml",
        ".driftgate/profiles/orders.json:1:1: the file has 2,048 bytes (2 KiB), more than the "
        "limit of 1 KiB per file (git_max_file_bytes); driftgate did not read it (split it, or "
        "raise the limit)",
        ".driftgate/templates.yaml:1:1: " + Unreadable("symlink").message,
    ]  # and no "unknown template 'stripe'": templates.yaml is unknown, not empty
    assert bundle.templates is None and bundle.watch_sets is not None
    assert [
        name
        for name in ("agents.yaml", "agents.yml", "profiles/a.yaml", "profiles")
        if is_read(name)
    ] == ["agents.yaml", "agents.yml", "profiles/a.yaml"]
    assert not any(map(is_read, ("README.md", "profiles/x/a.json", "profiles/a.txt", "x.bin")))


def test_bytes_over_the_limit_are_not_parsed() -> None:
    bundle = load_bundle({"agents.yaml": b"version: 1\n" + b"#" * 2000}, max_file_bytes=1024)
    assert [str(p) for p in bundle.problems] == [
        ".driftgate/agents.yaml:1:1: the file has 2,011 bytes (2 KiB), more than the limit of "
        "1 KiB per file (git_max_file_bytes); driftgate did not read it (split it, or raise "
        "the limit)"
    ]
