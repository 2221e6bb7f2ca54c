"""Loading again with what an earlier load checked (`checked`, `earlier`) changes nothing but
the time taken: the same models, the same problems at the same places."""

from __future__ import annotations

from textwrap import dedent
from typing import Any

import pytest

from controller.gitsources import load as loader
from controller.gitsources.load import Bundle, load_bundle

AGENTS = """\
version: 1
policies:
  careful:
    on_breaking: [notify]
agents:
  - id: billing-agent
    environment: production
    policy: production-guard
    watches:
      - stripe-api
      - {name: petstore, url: "https://petstore.example.com/openapi.json", type: openapi}
  - id: triage-bot
    policy: careful
    watches: [github-mcp]
  - id: support-bot
    name: Support
    policy: notify-only
    watches: [github-mcp, stripe-api]
"""

TEMPLATES = """\
version: 1
templates:
  - name: stripe
    watchType: openapi
    urlPattern: https://stripe.example.com/openapi.json
    tags: [vendor:stripe]
"""

WATCH_SETS = """\
version: 1
watchSets:
  - name: production
    watches:
      - name: stripe-api
        template: stripe
        intervalMinutes: 1
      - name: github-mcp
        url: https://mcp.example.com/mcp
        watchType: mcp
  - name: staging
    watches:
      - name: staging-api
        url: https://staging.example.com/openapi.json
        watchType: openapi
"""


def files(**texts: str) -> dict[str, bytes]:
    base = {"agents": AGENTS, "templates": TEMPLATES, "watch_sets": WATCH_SETS}
    merged = {**base, **texts}
    return {f"{key.replace('_', '-')}.yaml": dedent(text).encode() for key, text in merged.items()}


def outcome(bundle: Bundle) -> tuple[Any, ...]:
    return (
        bundle.agents,
        bundle.templates,
        bundle.watch_sets,
        [(p.file, p.line, p.column, p.path, p.message) for p in bundle.problems],
    )


def test_checked_files_are_not_parsed_again_and_give_the_same_models(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    full = load_bundle(files())
    assert full.ok and set(full.data) == {"agents.yaml", "templates.yaml", "watch-sets.yaml"}
    assert full.checked == frozenset()

    parsed: list[str] = []
    parse = loader._parse
    monkeypatch.setattr(
        loader, "_parse", lambda name, *args: parsed.append(name) or parse(name, *args)
    )
    changed = files(agents=AGENTS.replace("policy: notify-only", "policy: careful"))
    again = load_bundle(
        changed,
        checked={k: v for k, v in full.data.items() if k != "agents.yaml"},
    )
    assert parsed == ["agents.yaml"]
    assert again.checked == {"templates.yaml", "watch-sets.yaml"}
    assert outcome(again) == outcome(load_bundle(changed))
    assert again.data == load_bundle(changed).data


def test_a_problem_that_a_change_causes_in_a_checked_file_is_still_found() -> None:
    # watch-sets.yaml declares petstore with another URL: the problem is in agents.yaml
    # (unchanged, taken as checked); it is found, though placed at 1:1 (no positions).
    sets = WATCH_SETS + (
        "      - name: petstore\n"
        "        url: https://other.example.com/openapi.json\n"
        "        watchType: openapi\n"
    )
    full = load_bundle(files(watch_sets=sets))
    reused = load_bundle(
        files(watch_sets=sets), checked={"agents.yaml": load_bundle(files()).data["agents.yaml"]}
    )
    assert [p.message for p in full.problems] == [p.message for p in reused.problems]
    assert [(p.line, p.column) for p in full.problems] == [(11, 16)]
    assert [(p.line, p.column) for p in reused.problems] == [(1, 1)]


BAD_AGENT = """\
  - id: new-bot
    policy: 7
    colour: blue
    watches: github-mcp
"""


@pytest.mark.parametrize(
    ("key", "old", "new"),
    [
        ("agents", AGENTS, AGENTS.replace("name: Support", "name: Help desk")),
        ("agents", AGENTS, AGENTS + BAD_AGENT),
        ("agents", AGENTS, AGENTS.replace("  - id: billing-agent", BAD_AGENT + "  - id: billing")),
        # Moved items, one of them now wrong.
        (
            "agents",
            AGENTS,
            AGENTS.replace("agents:\n", "agents:\n  - id: support-bot\n    policy: [nope]\n"),
        ),
        # The same item twice (a duplicate id, found by the cross-checks).
        ("agents", AGENTS, AGENTS + "  - id: triage-bot\n    policy: careful\n"),
        # 1 == True in Python, not in the schema.
        (
            "watch_sets",
            WATCH_SETS,
            WATCH_SETS.replace("intervalMinutes: 1", "intervalMinutes: true"),
        ),
        (
            "watch_sets",
            WATCH_SETS,
            WATCH_SETS.replace("intervalMinutes: 1", "intervalMinutes: 1.0"),
        ),
        ("watch_sets", WATCH_SETS, WATCH_SETS.replace("watchType: mcp", "watchType: grpc")),
        ("watch_sets", WATCH_SETS, "version: 1\nwatchSets:\n  production: {}\n"),
        ("templates", TEMPLATES, TEMPLATES.replace("[vendor:stripe]", "[vendor:stripe, 7]")),
        ("agents", "version: 1\nagents: []\n", AGENTS),
    ],
)
def test_unchanged_items_of_an_earlier_version_give_the_same_problems(
    key: str, old: str, new: str
) -> None:
    earlier = load_bundle(files(**{key: old}))
    assert earlier.ok
    name = f"{key.replace('_', '-')}.yaml"
    reused = load_bundle(files(**{key: new}), earlier={name: earlier.data[name]})
    assert outcome(reused) == outcome(load_bundle(files(**{key: new})))


def test_only_items_equal_in_value_and_type_are_skipped() -> None:
    old = load_bundle(files()).data["watch-sets.yaml"]
    new = load_bundle(
        files(watch_sets=WATCH_SETS.replace("intervalMinutes: 1", "intervalMinutes: true"))
    )
    assert not new.ok
    data = {"version": 1, "watchSets": [old["watchSets"][1], {**old["watchSets"][0]}]}
    data["watchSets"][1]["watches"] = [
        {**old["watchSets"][0]["watches"][0], "intervalMinutes": True},
        old["watchSets"][0]["watches"][1],
    ]
    (skipped,) = loader._unchanged_items("watch-sets.yaml", data, old).values()
    assert skipped[1] == {0}  # the staging set, moved; not the set with `true` for 1
