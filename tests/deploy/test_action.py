"""action.yml, the GitHub Action: its metadata has the shape GitHub's documentation gives a
composite action (name, description, runs.using composite, each step a `uses` or a `run` with
its `shell`, every input it reads declared, no expression inside a script: inputs reach the
scripts through the environment, so that no input can inject shell), it installs driftgate
from its own checkout with the locked dependencies, and its driftgate step, run here with
GitHub's files (GITHUB_STEP_SUMMARY, GITHUB_OUTPUT) in a temporary directory and the runner's
GITHUB_* variables simulated, writes the report to the job's summary, keeps one comment on a
pull request (a loopback GitHub that checks every call against GitHub's REST description), and
exits as `driftgate diff --fail-on` or `preflight` does (wait-while-unknown, dry-run, formats)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from flask import Flask, testing

from tests.conftest import OrgKey
from tests.factories import make_watch, set_state
from tests.formats import assert_valid_junit
from tests.github_fake import COMMENT_IDS, FakeGitHub
from tests.servers import serving
from tests.specs import as_json, charges_spec

ROOT = Path(__file__).resolve().parents[2]
ACTION: dict[str, Any] = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
# What GitHub's metadata syntax allows (docs: "Metadata syntax for GitHub Actions").
SHELLS = {"bash", "pwsh", "python", "sh", "cmd", "powershell"}
COLORS = {"white", "black", "yellow", "blue", "green", "orange", "red", "purple", "gray-dark"}


def steps() -> list[dict[str, Any]]:
    return list(ACTION["runs"]["steps"])


def step(name_prefix: str) -> dict[str, Any]:
    (found,) = [s for s in steps() if s.get("name", "").startswith(name_prefix)]
    return found


def test_the_metadata_has_the_shape_of_a_composite_action() -> None:
    assert {"name", "description", "runs"} <= set(ACTION)
    assert set(ACTION) <= {"name", "author", "description", "inputs", "outputs", "runs", "branding"}
    assert ACTION["runs"]["using"] == "composite"
    assert ACTION["branding"]["color"] in COLORS
    for name, spec in ACTION["inputs"].items():
        assert re.fullmatch(r"[a-z][a-z0-9-]*", name), name
        assert spec["description"] and isinstance(spec.get("required", False), bool), name
        assert isinstance(spec.get("default", ""), str), name
    ids = {s["id"] for s in steps() if "id" in s}
    for name, spec in ACTION["outputs"].items():
        assert spec["description"], name
        (reference,) = EXPRESSION.findall(spec["value"])
        assert re.fullmatch(r"steps\.([a-z-]+)\.outputs\.[a-z-]+", reference), reference
        assert reference.split(".")[1] in ids
    for each in steps():
        if "uses" in each:
            assert "run" not in each and re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+", each["uses"])
        else:
            assert each["shell"] in SHELLS and each["run"].strip(), each


def test_every_expression_names_an_input_and_none_is_in_a_script() -> None:
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    used = set(EXPRESSION.findall(text))
    inputs = {e.removeprefix("inputs.") for e in used if e.startswith("inputs.")}
    assert inputs == set(ACTION["inputs"]), inputs ^ set(ACTION["inputs"])
    others = {e for e in used if not e.startswith("inputs.")}
    assert others == {
        "github.action_path",
        "github.token",  # the default of the input github-token, as GitHub documents it
        "runner.temp",
        "steps.driftgate.outputs.exit-code",
        "steps.driftgate.outputs.comment-url",
    }
    for each in steps():
        assert "run" not in each or EXPRESSION.search(each["run"]) is None, each["name"]


def test_it_installs_from_its_own_checkout_with_the_locked_dependencies() -> None:
    install = step("Install driftgate")
    script = install["run"]
    assert '--require-hashes -r "$ACTION_PATH/requirements.lock"' in script
    assert '--no-deps "$ACTION_PATH"' in script
    assert install["env"]["ACTION_PATH"] == "${{ github.action_path }}"
    assert re.search(r"pip\S* install[^\n]* driftgate\b", script) is None  # never from an index


@dataclass
class Ran:
    code: int
    stdout: str
    summary: str
    outputs: dict[str, str]


@pytest.fixture
def run_step(tmp_path: Path) -> Iterator[Any]:
    """The action's driftgate step as the runner runs it: its env's expressions evaluated with
    `inputs` (defaults filled in), `runner.temp` a temporary directory whose
    driftgate-action/bin/driftgate runs this checkout's driftgate (what the install step puts
    there), GitHub's files in it, and the workspace as the working directory."""
    temp = tmp_path / "runner-temp"
    command = temp / "driftgate-action" / "bin" / "driftgate"
    command.parent.mkdir(parents=True)
    command.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m cli "$@"\n')
    command.chmod(0o755)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    the_step = step("driftgate ")

    def run(github: dict[str, str] | None = None, **given: str) -> Ran:
        """`github`: the runner's GITHUB_* variables (and `token`, the `github.token` of
        expressions); none by default, as outside a pull request."""
        runner = dict(github or {})
        context = {
            "runner.temp": str(temp),
            "github.action_path": str(ROOT),
            "github.token": runner.pop("token", ""),
        }
        inputs = {
            name: EXPRESSION.sub(lambda m: context[m.group(1)], spec.get("default", ""))
            for name, spec in ACTION["inputs"].items()
        }
        inputs.update({name.replace("_", "-"): value for name, value in given.items()})
        context.update({f"inputs.{name}": value for name, value in inputs.items()})
        env = {
            name: EXPRESSION.sub(lambda m: context[m.group(1)], value)
            for name, value in the_step["env"].items()
        }
        summary, output = temp / "summary.md", temp / "output.txt"
        summary.write_text("")
        output.write_text("")
        machine = {
            k: v for k, v in os.environ.items() if not k.startswith(("DRIFTGATE_", "GITHUB_"))
        }
        script = temp / "step.sh"
        script.write_text(the_step["run"])
        done = subprocess.run(
            # How GitHub runs a step whose shell is bash.
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=workspace,
            env={
                **machine,
                **runner,
                **env,
                "PYTHONPATH": str(ROOT),
                "GITHUB_STEP_SUMMARY": str(summary),
                "GITHUB_OUTPUT": str(output),
                "DRIFTGATE_CONFIG": "",
            },
            capture_output=True,
            text=True,
            timeout=120,
        )
        outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
        return Ran(done.returncode, done.stdout + done.stderr, summary.read_text(), outputs)

    run.workspace = workspace  # type: ignore[attr-defined]
    yield run


def write_specs(workspace: Path) -> None:
    (workspace / "base.json").write_text(as_json(charges_spec()))
    (workspace / "revision.json").write_text(as_json(charges_spec(refunds=False)))
    (workspace / "same.json").write_text(as_json(charges_spec()))


def test_diff_fails_on_a_breaking_change_and_writes_the_summary(run_step: Any) -> None:
    write_specs(run_step.workspace)
    ran = run_step(command="diff", base="base.json", revision="revision.json")
    assert (ran.code, ran.outputs) == (1, {"exit-code": "1"}), ran.stdout
    assert ran.summary.startswith("### driftgate: 1 breaking")
    assert "`endpoint-removed`" in ran.summary
    assert "::error file=revision.json" in ran.stdout  # the annotations


def test_diff_passes_below_fail_on_and_on_no_change(run_step: Any, tmp_path: Path) -> None:
    write_specs(run_step.workspace)
    sarif = tmp_path / "driftgate.sarif"
    ran = run_step(
        command="diff", base="base.json", revision="revision.json", fail_on="never",
        sarif_file=str(sarif),
    )  # fmt: skip
    assert (ran.code, ran.outputs) == (0, {"exit-code": "0"}), ran.stdout
    assert "### driftgate: 1 breaking" in ran.summary
    assert json.loads(sarif.read_text())["runs"][0]["results"]
    same = run_step(command="diff", base="base.json", revision="same.json")
    assert (same.code, same.outputs) == (0, {"exit-code": "0"}), same.stdout
    assert same.summary.startswith("### driftgate")


def test_a_mistake_is_exit_2_with_an_error_annotation(run_step: Any) -> None:
    write_specs(run_step.workspace)
    missing = run_step(command="diff", base="base.json")
    assert (missing.code, missing.outputs) == (2, {"exit-code": "2"})
    assert "::error title=driftgate::diff needs the inputs base and revision" in missing.stdout
    unreadable = run_step(command="diff", base="base.json", revision="nowhere.json")
    assert (unreadable.code, unreadable.outputs) == (2, {"exit-code": "2"}), unreadable.stdout
    wrong = run_step(command="lint")
    assert wrong.code == 2 and "command must be diff or preflight" in wrong.stdout


def test_preflight_exits_as_the_server_answers(
    run_step: Any, app: Flask, client: testing.FlaskClient, database: Any, acme: OrgKey
) -> None:
    healthy = make_watch(client, acme, "stripe")
    set_state(database, healthy, "ok")
    drifted = make_watch(client, acme, "github")
    set_state(database, drifted, "drifted", incident="open")
    with serving(app) as server:
        common = {"command": "preflight", "server_url": server.url, "api_key": acme.key}
        allowed = run_step(**common, watches="stripe")
        blocked = run_step(**common, watches=f"stripe\n{drifted}")
    assert (allowed.code, allowed.outputs) == (0, {"exit-code": "0"}), allowed.stdout
    assert (blocked.code, blocked.outputs) == (1, {"exit-code": "1"}), blocked.stdout
    assert allowed.summary.startswith("### driftgate preflight\n\n```\n")
    assert "github" in blocked.summary
    assert f"::add-mask::{acme.key}" in allowed.stdout
    assert acme.key not in allowed.summary + blocked.summary


REPO = "acme/shop"


@pytest.fixture
def github(tmp_path: Path) -> Iterator[FakeGitHub]:
    with FakeGitHub.serving(REPO) as fake:
        yield fake


def pull_request(fake: FakeGitHub, tmp_path: Path, number: int, token: str) -> dict[str, str]:
    """The runner's variables in a job of a `pull_request` event (the event file as GitHub
    writes it: the pull request's number at the top and in `pull_request`)."""
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "number": number,
                                 "pull_request": {"number": number}}))  # fmt: skip
    return {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_API_URL": fake.url,
        "token": token,
    }


def test_diff_on_a_pull_request_keeps_one_comment_and_annotates(
    run_step: Any, github: FakeGitHub, tmp_path: Path
) -> None:
    write_specs(run_step.workspace)
    runner = pull_request(github, tmp_path, 7, github.workflow_token(REPO))
    junit = tmp_path / "driftgate.xml"
    first = run_step(
        command="diff", base="base.json", revision="revision.json", junit_file=str(junit),
        github=runner,
    )  # fmt: skip
    assert first.code == 1 and first.outputs["exit-code"] == "1", first.stdout
    assert "::error file=revision.json" in first.stdout  # the annotations
    comment_id = COMMENT_IDS
    url = f"https://github.example/{REPO}/pull/7#issuecomment-{comment_id}"
    assert first.outputs["comment-url"] == url
    ((number, body),) = github.repositories[REPO].comments
    assert number == 7
    assert body.startswith("<!-- driftgate-comment: diff -->\n### driftgate: 1 breaking")
    assert body.removeprefix("<!-- driftgate-comment: diff -->\n") == first.summary
    assert_valid_junit(junit.read_text(encoding="utf-8"))
    # The next push: the same comment is edited, no second one.
    second = run_step(command="diff", base="base.json", revision="same.json", github=runner)
    assert second.code == 0 and second.outputs["comment-url"] == url, second.stdout
    ((_, edited),) = github.repositories[REPO].comments
    assert edited != body and "endpoint-removed" not in edited
    issue = f"/repos/{REPO}/issues"
    assert github.paths() == [
        f"GET {issue}/7/comments", f"POST {issue}/7/comments",
        f"GET {issue}/7/comments", f"PATCH {issue}/comments/{comment_id}",
    ]  # fmt: skip


def test_no_comment_outside_a_pull_request_or_when_turned_off(
    run_step: Any, github: FakeGitHub, tmp_path: Path
) -> None:
    write_specs(run_step.workspace)
    runner = pull_request(github, tmp_path, 7, github.workflow_token(REPO))
    pushed = run_step(command="diff", base="base.json", revision="revision.json",
                      github={**runner, "GITHUB_EVENT_NAME": "push"})  # fmt: skip
    off = run_step(command="diff", base="base.json", revision="revision.json", comment="false",
                   github=runner)  # fmt: skip
    assert (pushed.code, off.code) == (1, 1)
    assert "comment-url" not in pushed.outputs and "comment-url" not in off.outputs
    assert github.calls == []


def test_a_refused_comment_is_a_warning_and_the_diff_decides(
    run_step: Any, github: FakeGitHub, tmp_path: Path
) -> None:
    """A fork's pull request: its token may not write to the repository."""
    write_specs(run_step.workspace)
    github.add_repository("acme/elsewhere")
    runner = pull_request(github, tmp_path, 3, github.workflow_token("acme/elsewhere"))
    ran = run_step(command="diff", base="base.json", revision="same.json", github=runner)
    assert ran.code == 0 and ran.outputs == {"exit-code": "0"}, ran.stdout
    assert "::warning title=driftgate::no pull request comment: driftgate: error: GitHub " in (
        ran.stdout
    )
    assert "pull-requests: write" in ran.stdout
    assert runner["token"] not in ran.stdout
    assert github.repositories[REPO].comments == []


def test_preflight_formats_dry_run_and_wait_while_unknown(
    run_step: Any, app: Flask, client: testing.FlaskClient, database: Any, acme: OrgKey,
    tmp_path: Path,
) -> None:  # fmt: skip
    healthy = make_watch(client, acme, "stripe")
    set_state(database, healthy, "ok")
    drifted = make_watch(client, acme, "github")
    set_state(database, drifted, "drifted", incident="open")
    fresh = make_watch(client, acme, "fresh")  # never checked
    report = tmp_path / "preflight.xml"
    with serving(app) as server:
        common = {"command": "preflight", "server_url": server.url, "api_key": acme.key}
        junit = run_step(**common, watches=f"stripe {drifted}", format="junit",
                         report_file=str(report))  # fmt: skip
        dry = run_step(**common, watches=f"stripe {drifted}", dry_run="true", format="json")
        waited = run_step(**common, watches="fresh", wait_while_unknown="1")
        former = run_step(**common, watches="fresh", wait="1")
    assert (junit.code, junit.outputs) == (1, {"exit-code": "1"}), junit.stdout
    assert_valid_junit(report.read_text(encoding="utf-8"))
    assert junit.summary.startswith("### driftgate preflight\n\n```xml\n<?xml")
    assert '<failure type="breaking_drift"' in report.read_text(encoding="utf-8")
    # The break-glass passes the step and says why, in the log and the summary.
    assert (dry.code, dry.outputs) == (0, {"exit-code": "0"}), dry.stdout
    assert "> driftgate: dry run: the run would be blocked; exit 0" in dry.summary
    answer = json.loads(dry.summary.split("```json\n", 1)[1].split("```", 1)[0])
    assert answer["dryRun"] is True and answer["allowed"] is False
    # Waited while the watch was never checked (one line says so), then blocked.
    for ran in (waited, former):
        assert (ran.code, ran.outputs) == (1, {"exit-code": "1"}), ran.stdout
        assert "not checked yet; asking again every 5s for up to 1s" in ran.stdout
    assert fresh in waited.summary
    assert acme.key not in junit.summary + dry.summary + waited.summary
