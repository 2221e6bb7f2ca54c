"""The hosted product's agents.yaml (`.driftguard/agents.yaml`), read as it is: the snapshot's
own examples and this repository's fixtures pass `driftgate validate`; what is wrong is a
file:line problem, the hosted product's own checks included."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import main
from controller.gitsources.load import HOSTED_AGENTS, derived_name, load_bundle
from controller.model.gitops import InlineWatch

HERE = Path(__file__).parent / "hosted"
SNAPSHOT = Path(__file__).resolve().parents[3] / "shared" / "clients" / "driftguard"
EXAMPLES = sorted((SNAPSHOT / "examples").rglob("agents.yaml")) if SNAPSHOT.is_dir() else []


def hosted(text: str | bytes, **kw: object) -> list[tuple[int, int, str]]:
    raw = text.encode() if isinstance(text, str) else text
    bundle = load_bundle({HOSTED_AGENTS: raw}, **kw)  # type: ignore[arg-type]
    return [(p.line, p.column, p.message) for p in bundle.problems]


@pytest.mark.skipif(not EXAMPLES, reason=f"{SNAPSHOT} (../shared/clients/driftguard) is absent")
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: str(p.relative_to(SNAPSHOT)))
def test_every_agents_yaml_of_the_snapshot_passes_validate(example: Path, tmp_path: Path) -> None:
    # As the hosted product keeps it: `.driftguard/agents.yaml` at a repository's root.
    (tmp_path / ".driftguard").mkdir()
    shutil.copy(example, tmp_path / ".driftguard" / "agents.yaml")
    result = CliRunner().invoke(main, ["validate", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "valid: 1 agent" in result.output
    # And given as the directory that holds it.
    alone = CliRunner().invoke(main, ["validate", str(example.parent)])
    assert alone.exit_code == 0, alone.output


@pytest.mark.parametrize("fixture", sorted((HERE / "valid").glob("*.yaml")), ids=lambda p: p.name)
def test_the_repositorys_hosted_fixtures_pass(
    fixture: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert hosted(fixture.read_bytes(), org=["acme"]) == []
    (tmp_path / ".driftguard").mkdir()
    shutil.copy(fixture, tmp_path / ".driftguard" / "agents.yaml")
    result = CliRunner().invoke(main, ["validate", str(tmp_path)])
    assert result.exit_code == 0, result.output
    # With no argument, in a repository that has only .driftguard/ (a hosted user's first run).
    with monkeypatch.context() as patch:
        patch.chdir(tmp_path)
        plain = CliRunner().invoke(main, ["validate"])
    assert plain.exit_code == 0, plain.output
    assert ".driftguard" in plain.output


def test_what_the_hosted_checks_refuse_is_a_problem_at_its_line() -> None:
    text = (HERE / "invalid" / "semantics.yaml").read_text()
    assert hosted(text, org=["acme", "0c1d"]) == [
        (
            2,
            6,
            "org 'someone-else' is not the org this source applies to; fix it or remove the "
            "key (the source's org decides)",
        ),
        (8, 7, "a2a.cardUrl needs mcp.skillToolMap: map each A2A skill to its MCP tools"),
        (
            8,
            16,
            "a2a.cardUrl needs a watch of type a2a_card with the same URL in this agent's "
            "watches (add {type: a2a_card, url: <the card URL>})",
        ),
        (
            10,
            9,
            "an mcp watch needs mcp.configPath (the agent's MCP client configuration) in the "
            "hosted agents.yaml",
        ),
        (13, 11, "duplicate agent id or slug 'card-agent' (first at line 4)"),
        (
            15,
            13,
            "unknown policy 'strict-ish': use a preset (notify-only, staging-strict, "
            "production-guard) or declare it under policies",
        ),
    ]
    # Offline (no org known) the org is not checked; the org's id matches as its name does.
    assert not any("org" in m for _, _, m in hosted(text)[:1])
    assert all("org '" not in m for _, _, m in hosted(text, org=["someone-else"]))


def test_schema_problems_of_the_hosted_form() -> None:
    text = (HERE / "invalid" / "schema.yaml").read_text()
    assert hosted(text) == [
        (6, 22, "runtime_webhook must be an https:// URL"),
        (8, 15, "search must be at least 0"),
        (10, 15, "type must be one of openapi, rest, mcp, a2a_card, api, not 'graphql'"),
    ]


def test_validate_names_the_hosted_file_and_line(tmp_path: Path) -> None:
    (tmp_path / ".driftguard").mkdir()
    shutil.copy(HERE / "invalid" / "schema.yaml", tmp_path / ".driftguard" / "agents.yaml")
    result = CliRunner().invoke(main, ["validate", str(tmp_path)])
    assert result.exit_code == 1
    assert f"{tmp_path}/.driftguard/agents.yaml:6:22: runtime_webhook" in result.output


def test_inline_watches_without_a_name_are_named_and_one_url_is_one_watch() -> None:
    text = """\
version: 1
agents:
  - id: a
    watches:
      - {type: api, url: "https://x.test/v1/items?key=abc"}
      - {type: openapi, url: https://x.test/openapi.json}
  - id: b
    watches:
      - {type: openapi, url: https://x.test/openapi.json}
      - {type: mcp, url: https://m.test/mcp}
"""
    sets = """\
version: 1
watchSets:
  - name: prod
    watches:
      - {name: mcp-server, url: https://m.test/mcp, watchType: mcp}
"""
    # The hosted form is read in .driftgate/agents.yaml too (without the hosted-only rule
    # that an mcp watch needs mcp.configPath).
    bundle = load_bundle({"agents.yaml": text.encode(), "watch-sets.yaml": sets.encode()})
    assert bundle.ok, bundle.problems
    assert bundle.agents is not None
    named = [
        [(w.name, w.watch_type.value) for w in agent.watches if isinstance(w, InlineWatch)]
        for agent in bundle.agents.agents
    ]
    query = derived_name("https://x.test/v1/items?key=abc")
    assert query.startswith("x.test/v1/items~") and "abc" not in query
    assert named == [
        [(query, "rest"), ("x.test/openapi.json", "openapi")],
        # the same URL is the same watch; a URL a watch set declares is that watch
        [("x.test/openapi.json", "openapi"), ("mcp-server", "mcp")],
    ]
    assert derived_name("https://X.test/a/") == "x.test/a"
    assert len(derived_name("https://x.test/" + "p" * 300)) == 189


def test_both_directories_are_one_namespace() -> None:
    ours = "version: 1\npolicies:\n  careful: {}\nagents:\n  - id: billing\n"
    theirs = """\
version: 1
policies:
  careful: {on_breaking: block_new_runs}
agents:
  - id: billing
    environment: prod
    policy: careful
    watches: [{type: openapi, url: https://o.test/openapi.json}]
  - id: search
    environment: prod
    policy: dev-flexible
    watches: [{type: openapi, url: https://o.test/openapi.json}]
"""
    bundle = load_bundle({"agents.yaml": ours.encode(), HOSTED_AGENTS: theirs.encode()})
    assert [str(p) for p in bundle.problems] == [
        ".driftguard/agents.yaml:3:12: duplicate policy 'careful' (first at "
        ".driftgate/agents.yaml:3)",
        ".driftguard/agents.yaml:5:9: duplicate agent id or slug 'billing' (first at "
        ".driftgate/agents.yaml:5)",
    ]
    fine = theirs.replace("careful", "hold").replace("id: billing", "id: invoices")
    merged = load_bundle({"agents.yaml": ours.encode(), HOSTED_AGENTS: fine.encode()})
    assert merged.ok and merged.agents is not None
    assert [a.id for a in merged.agents.agents] == ["billing", "invoices", "search"]
    assert set(merged.agents.policies) == {"careful", "hold"}
    assert list(merged.agent_files) == ["agents.yaml", HOSTED_AGENTS]


def test_the_hosted_preset_cannot_be_redeclared_and_api_is_rest_everywhere() -> None:
    text = "version: 1\npolicies:\n  dev-flexible: {}\nagents: []\n"
    assert hosted(text) == [
        (3, 3, "policy 'dev-flexible' shadows the built-in preset; choose another name")
    ]
    templates = (
        "version: 1\ntemplates:\n  - {name: t, watchType: api, urlPattern: https://t.test}\n"
    )
    bundle = load_bundle({"templates.yaml": templates.encode()})
    assert bundle.ok and bundle.templates is not None
    assert bundle.templates.templates[0].watch_type.value == "rest"


def test_the_hosted_api_type_is_an_openapi_or_a_rest_watch_by_its_url() -> None:
    text = """\
version: 1
agents:
  - id: a
    watches:
      - {type: api, url: https://x.test/openapi.json}
      - {type: api, url: https://x.test/v1/items}
      - {type: api, url: https://x.test/items.json}
"""
    sets = """\
version: 1
watchSets:
  - name: prod
    watches:
      - {name: spec, url: https://y.test/swagger.yaml, watchType: api}
      - {name: orders, url: https://y.test/v1/orders, watchType: api}
"""
    templates = """\
version: 1
templates:
  - {name: vendor, watchType: api, urlPattern: "https://{host}/openapi.json"}
"""
    files = {"agents.yaml": text, "watch-sets.yaml": sets, "templates.yaml": templates}
    bundle = load_bundle({name: body.encode() for name, body in files.items()})
    assert bundle.ok, bundle.problems
    assert bundle.agents is not None and bundle.watch_sets is not None
    assert bundle.templates is not None
    inline = [
        w.watch_type.value for w in bundle.agents.agents[0].watches if isinstance(w, InlineWatch)
    ]
    # A `.json` name that does not tell is `rest` in files: nothing is fetched to find out.
    assert inline == ["openapi", "rest", "rest"]
    entries = bundle.watch_sets.watch_sets[0].watches
    assert [(e.name, e.watch_type.value if e.watch_type else None) for e in entries] == [
        ("spec", "openapi"),
        ("orders", "rest"),
    ]
    assert bundle.templates.templates[0].watch_type.value == "openapi"
