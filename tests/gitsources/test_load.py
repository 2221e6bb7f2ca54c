"""The `.driftgate/` loader: a valid bundle builds the models, every problem of each file's schema
is at its exact line and column, and which files it reads (misnamed, unreadable, over the limit,
the shipped examples). YAML itself, secrets and what spans entries and files are in
test_load_yaml.py, test_load_secrets.py and test_load_references.py."""

from __future__ import annotations

from pathlib import Path

from controller.gitsources.load import FILES, Problem, load_bundle
from controller.model.gitops import (
    POLICY_PRESETS,
    AgentsFile,
    InlineWatch,
    Policy,
)
from controller.model.watch import WatchType
from tests.gitsources.conftest import (
    SECRET_SETS,
    VALID_AGENTS,
    VALID_TEMPLATES,
    VALID_WATCH_SETS,
    load,
    only,
    problems,
)

ROOT = Path(__file__).resolve().parents[2]


def test_a_valid_bundle_builds_the_models() -> None:
    bundle = load(agents=VALID_AGENTS, templates=VALID_TEMPLATES, watch_sets=VALID_WATCH_SETS)
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
    bundle = load(agents=VALID_AGENTS)
    assert bundle.agents is not None
    dumped = bundle.agents.model_dump(by_alias=True, exclude_none=True)
    assert dumped["agents"][0]["repoRef"] == "acme/billing-agent@main"
    assert dumped["agents"][0]["watches"][1]["type"] == "openapi"
    assert AgentsFile.model_validate(dumped) == bundle.agents


def test_problems_are_formatted_file_line_column() -> None:
    problem = Problem(".driftgate/agents.yaml", 3, 7, "something", "agents[0].policy")
    assert str(problem) == ".driftgate/agents.yaml:3:7: something"


def test_locate_finds_values_keys_and_ancestors() -> None:
    bundle = load(agents=VALID_AGENTS)
    assert bundle.locate("agents.yaml", ("agents", 0, "policy")) == (10, 13)
    assert bundle.locate(".driftgate/agents.yaml", ("agents", 0, "policy"), key=True) == (10, 5)
    assert bundle.locate("agents.yaml", ("agents", 0, "watches", 1, "url")) == (13, 31)
    assert bundle.locate("agents.yaml", ("agents", 0, "nothing", 3)) == (7, 5)
    assert bundle.locate("templates.yaml", ("templates",)) == (1, 1)


# Step 1: YAML


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
    assert problems(templates=VALID_TEMPLATES, watch_sets=text) == [
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
        "agents.yaml, templates.yaml, watch-sets.yaml, dashboards.yaml, waivers.yaml",
        "repo/.driftgate/watch_sets.yaml:1:1: did you mean watch-sets.yaml? driftgate reads only "
        "agents.yaml, templates.yaml, watch-sets.yaml, dashboards.yaml, waivers.yaml",
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
        "templates.yaml, watch-sets.yaml, dashboards.yaml, waivers.yaml",
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
