"""An agent's watch reference one typo away from a known watch is a problem at its line, with a
"did you mean"; a reference that resembles nothing may name a watch created through the API
and is left to reconcile (an unresolved binding, failing closed)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from cli.main import main
from controller.gitsources.load import load_bundle

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = {p.name: p.read_bytes() for p in (ROOT / "examples").glob("*.yaml")}


def with_agents_watch(old: str, new: str) -> dict[str, bytes]:
    agents = EXAMPLES["agents.yaml"].decode()
    assert f"- {old} " in agents
    return {**EXAMPLES, "agents.yaml": agents.replace(f"- {old} ", f"- {new} ", 1).encode()}


def line_of(files: dict[str, bytes], text: str) -> int:
    lines = files["agents.yaml"].decode().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_a_typo_in_a_watch_reference_is_a_problem_with_a_suggestion() -> None:
    assert load_bundle(EXAMPLES).problems == []
    files = with_agents_watch("stripe-api", "stripe-apii")
    (problem,) = load_bundle(files).problems
    assert problem.file == ".driftgate/agents.yaml"
    assert problem.line == line_of(files, "- stripe-apii")
    assert problem.path == "agents[0].watches[0]"
    assert problem.message == (
        "unknown watch 'stripe-apii': no watch of that name in these files; "
        "did you mean 'stripe-api'?"
    )


def test_a_reference_to_nothing_alike_is_left_to_reconcile_and_org_watches_count() -> None:
    # Perhaps a watch created through the API: not a problem offline.
    assert load_bundle(with_agents_watch("stripe-api", "payments-ledger")).problems == []
    # When reconciling, the org's watches are known: a near miss of one is a problem, and the
    # org's own watch of that name is a valid reference.
    typo = with_agents_watch("stripe-api", "ledger-v22")
    (problem,) = load_bundle(typo, known_watches={"ledger-v2"}).problems
    assert problem.message.endswith("in these files or the org; did you mean 'ledger-v2'?")
    assert load_bundle(typo, known_watches={"ledger-v22"}).problems == []
    # URLs and inline watches declared by another agent are references too.
    url = with_agents_watch("stripe-api", "https://api.stripe.com/openapi.json")
    assert load_bundle(url).problems == []


def test_driftgate_validate_reports_it_and_fails(tmp_path: Path) -> None:
    directory = tmp_path / ".driftgate"
    directory.mkdir()
    files = with_agents_watch("stripe-api", "stripe-apii")
    for name, content in files.items():
        (directory / name).write_bytes(content)
    result = CliRunner().invoke(main, ["validate", str(directory)])
    assert result.exit_code == 1
    line = line_of(files, "- stripe-apii")
    assert f"agents.yaml:{line}:" in result.output
    assert "did you mean 'stripe-api'?" in result.output
