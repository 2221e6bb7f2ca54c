"""`driftgate diff` and `driftgate compare`: exit codes, every output format, rules files."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result
from sarif_pydantic import Sarif

from cli.main import main
from controller.diffs.explain import hint_for
from controller.diffs.rules import CATALOG
from tests.formats import assert_valid_junit, assert_valid_sarif
from tests.servers import spec_server
from tests.specs import charges_spec


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    base = charges_spec()
    same = charges_spec()
    warning_only = charges_spec(status_enum=("paid", "failed", "refunded"))
    breaking = charges_spec(required=("id",), refunds=False)
    out = {}
    for name, doc in [
        ("base", base),
        ("same", same),
        ("warning", warning_only),
        ("breaking", breaking),
    ]:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(doc))
        out[name] = str(path)
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base))
    out["base_yaml"] = str(tmp_path / "base.yaml")
    return out


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_exit_codes_follow_the_threshold(files: dict[str, str]) -> None:
    assert run("diff", files["base"], files["same"]).exit_code == 0
    assert run("diff", files["base_yaml"], files["same"]).exit_code == 0
    assert run("diff", files["base"], files["warning"]).exit_code == 0
    assert run("diff", files["base"], files["warning"], "--fail-on", "warning").exit_code == 1
    assert run("diff", files["base"], files["breaking"]).exit_code == 1
    assert run("diff", files["base"], files["breaking"], "--fail-on", "never").exit_code == 0


def test_text_output(files: dict[str, str]) -> None:
    result = run("diff", files["base"], files["breaking"])
    assert "BREAKING" in result.output and "GET /v1/refunds" in result.output
    assert result.output.rstrip().endswith("FAIL (--fail-on breaking)")
    lines = result.output.splitlines()
    removed = next(i for i, line in enumerate(lines) if "[endpoint-removed]" in line)
    # What a client sees fail, then what to do (issue 41, point 5).
    assert lines[removed + 1].strip() == (
        "hint: A request to `GET /v1/refunds` now fails: the operation no longer exists "
        f"(404 or 405). {CATALOG['endpoint-removed'].hint}"
    )


def test_json_output_is_the_documented_shape(files: dict[str, str]) -> None:
    result = run("diff", files["base"], files["breaking"], "--format", "json")
    body = json.loads(result.output)
    assert set(body) >= {"changes", "counts", "failed", "failOn", "type"}
    assert body["type"] == "openapi" and body["failed"] is True
    rules = {c["rule"] for c in body["changes"]}
    assert "endpoint-removed" in rules
    assert "response-property-became-optional" in rules
    for change in body["changes"]:
        assert {"path", "severity", "summary", "rule", "changeType", "agentAction"} <= set(change)
        assert change["hint"] == hint_for(change)
        assert change["location"]["operation"].split(" ")[0] in {
            "GET",
            "POST",
            "PUT",
            "DELETE",
            "PATCH",
        }
    assert body["counts"]["breaking"] == sum(c["severity"] == "breaking" for c in body["changes"])


def test_markdown_and_github_outputs(files: dict[str, str]) -> None:
    markdown = run("diff", files["base"], files["breaking"], "--format", "markdown").output
    assert markdown.startswith("### driftgate:") and "| severity | change | reaches |" in markdown
    assert "fails: the operation no longer exists (404 or 405). " in markdown
    assert f" {CATALOG['endpoint-removed'].hint} |" in markdown
    github = run("diff", files["base"], files["breaking"], "--format", "github").output.splitlines()
    errors = [line for line in github if line.startswith("::error ")]
    assert errors and all("title=" in line and "::" in line[2:] for line in errors)
    assert github[-1].startswith("driftgate: ")


def test_sarif_output_validates(files: dict[str, str]) -> None:
    result = run("diff", files["base"], files["breaking"], "--format", "sarif")
    log = json.loads(result.output)
    Sarif.model_validate(log)  # the SARIF 2.1.0 object model
    assert_valid_sarif(log)  # and OASIS's published schema
    assert log["version"] == "2.1.0"
    run_ = log["runs"][0]
    rule_ids = [rule["id"] for rule in run_["tool"]["driver"]["rules"]]
    assert len(rule_ids) == len(set(rule_ids))
    for item in run_["results"]:
        assert item["level"] in {"error", "warning", "note"}
        assert rule_ids[item["ruleIndex"]] == item["ruleId"]
        assert item["message"]["text"]
        assert item["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]


def test_junit_output_parses(files: dict[str, str], tmp_path: Path) -> None:
    target = tmp_path / "report.xml"
    result = run("diff", files["base"], files["breaking"], "--format", "junit", "-o", str(target))
    assert result.exit_code == 1 and result.output == ""
    assert_valid_junit(target.read_text(encoding="utf-8"))
    root = ET.parse(target).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    failures = [c for c in cases if c.find("failure") is not None]
    assert (
        int(suite.get("tests", "0")) == len(cases)
        and int(suite.get("failures", "0")) == len(failures) > 0
    )
    clean_text = run("diff", files["base"], files["same"], "--format", "junit").output
    assert_valid_junit(clean_text)
    clean = ET.fromstring(clean_text)
    assert clean.find("testsuite/testcase").get("name") == "no contract changes"  # type: ignore[union-attr]


def test_rules_file_overrides_and_ignores(files: dict[str, str], tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "version: 1\n"
        "overrides:\n  - rule: response-property-became-optional\n    severity: info\n"
        "ignore:\n  - rule: endpoint-removed\n    operation: 'GET /v1/refunds'\n"
        "    reason: retired on our side\n"
    )
    result = run(
        "diff", files["base"], files["breaking"], "--rules", str(rules), "--format", "json"
    )
    body = json.loads(result.output)
    ignored = [c for c in body["changes"] if c.get("ignored")]
    assert [c["rule"] for c in ignored] == ["endpoint-removed"]
    assert ignored[0]["ignoreReason"] == "retired on our side"
    assert body["ignored"] == 1 and body["counts"]["breaking"] == 0
    assert result.exit_code == 0


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("overrides: [{rule: no-such-rule, severity: info}]\n", "unknown rule id"),
        ("ignore: [{rule: endpoint-removed}]\n", "reason"),
        ("ignore: [\n", "invalid YAML"),
        ("- a\n", "a rules file is a mapping"),
    ],
)
def test_bad_rules_files_exit_2(
    files: dict[str, str], tmp_path: Path, content: str, needle: str
) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(content)
    result = CliRunner().invoke(main, ["diff", files["base"], files["same"], "--rules", str(rules)])
    assert result.exit_code == 2
    assert needle in result.stderr


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{not json", "invalid JSON"),
        ('{"openapi": "4.0.0", "paths": {}}', "unsupported OpenAPI version"),
        ('{"openapi": "3.0.0", "paths": {"/a": {"$ref": "#/nowhere"}}}', "points to nothing"),
        ("", "empty"),
    ],
)
def test_unreadable_inputs_exit_2_never_pass(
    files: dict[str, str], tmp_path: Path, content: str, needle: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    for args in (("diff", files["base"], str(bad)), ("diff", str(bad), files["base"])):
        result = CliRunner().invoke(main, list(args))
        assert result.exit_code == 2, result.output
        assert needle in result.stderr and "Traceback" not in result.output
    missing = CliRunner().invoke(main, ["diff", files["base"], str(tmp_path / "absent.json")])
    assert missing.exit_code == 2 and "cannot read" in missing.stderr


def test_mismatched_kinds_need_type(files: dict[str, str], tmp_path: Path) -> None:
    payload = tmp_path / "payload.json"
    payload.write_text('{"a": 1}')
    result = CliRunner().invoke(main, ["diff", files["base"], str(payload)])
    assert result.exit_code == 2 and "--type" in result.stderr


def test_diff_over_http(files: dict[str, str]) -> None:
    with spec_server() as server:
        base = server.set("/v1/openapi.json", Path(files["base"]).read_text())
        revision = server.set("/v2/openapi.json", Path(files["breaking"]).read_text())
        assert run("diff", base, revision).exit_code == 1
        log = json.loads(run("diff", base, revision, "--format", "sarif").output)
        assert_valid_sarif(log)
        for result in log["runs"][0]["results"]:
            place = result["locations"][0]["physicalLocation"]
            assert place["artifactLocation"] == {"uri": revision}
            assert place["region"]["startLine"] >= 1
        result = CliRunner().invoke(main, ["diff", base, server.url("/missing.json")])
        assert result.exit_code == 2 and "HTTP 404" in result.stderr
    assert server.requests[0][2]["User-Agent"].startswith("driftgate-cli/")


def test_relative_file_refs_are_followed(tmp_path: Path) -> None:
    def write(folder: str, enum: list[str]) -> str:
        root = tmp_path / folder
        root.mkdir()
        (root / "schemas.yaml").write_text(
            yaml.safe_dump({"Status": {"type": "string", "enum": enum}})
        )
        doc = {
            "openapi": "3.1.0",
            "info": {"title": "t", "version": "1"},
            "paths": {
                "/s": {
                    "get": {
                        "responses": {
                            "200": {
                                "description": "ok",
                                "content": {
                                    "application/json": {"schema": {"$ref": "schemas.yaml#/Status"}}
                                },
                            }
                        }
                    }
                }
            },
        }
        (root / "openapi.yaml").write_text(yaml.safe_dump(doc))
        return str(root / "openapi.yaml")

    base, revision = write("a", ["on", "off"]), write("b", ["on"])
    body = json.loads(run("diff", base, revision, "--format", "json").output)
    assert [c["rule"] for c in body["changes"]] == ["response-body-enum-value-removed"]


def test_mcp_snapshots(tmp_path: Path) -> None:
    def snapshot(tools: list[str]) -> str:
        doc = {
            "server_info": {"name": "demo", "version": "1"},
            "protocol_version": "2025-06-18",
            "capabilities": {"tools": {}},
            "tools": [
                {"name": t, "description": t, "inputSchema": {"type": "object"}} for t in tools
            ],
        }
        path = tmp_path / f"{'-'.join(tools)}.json"
        path.write_text(json.dumps(doc))
        return str(path)

    result = run("diff", snapshot(["search", "fetch"]), snapshot(["search"]), "--format", "json")
    body = json.loads(result.output)
    assert body["type"] == "mcp" and result.exit_code == 1
    removed = [c for c in body["changes"] if c["severity"] == "breaking"]
    assert removed[0]["location"] == {"tool": "fetch"}


def test_compare_profiles(tmp_path: Path) -> None:
    base, revision = tmp_path / "a.json", tmp_path / "b.json"
    base.write_text(json.dumps([{"id": 1, "note": "x"}, {"id": 2}]))
    revision.write_text(json.dumps([{"id": 1}, {"id": 2}]))
    # `note` is optional in the base (absent from one item): strict fails, lenient warns.
    strict = run("compare", str(base), str(revision), "--format", "json")
    lenient = run("compare", str(base), str(revision), "--profile", "hosted", "--format", "json")
    assert strict.exit_code == 1 and json.loads(strict.output)["profile"] == "cli"
    assert lenient.exit_code == 0
    assert json.loads(lenient.output)["counts"]["warning"] == 1


def test_removal_before_the_sunset_date_is_breaking_from_the_cli(tmp_path: Path) -> None:
    """The CLI passes today's date (UTC) to the engine; --today overrides it."""
    spec = charges_spec()
    refunds = spec["paths"]["/v1/refunds"]["get"]
    refunds["deprecated"] = True
    refunds["x-sunset"] = "2999-01-01"
    base, revision = tmp_path / "base.json", tmp_path / "rev.json"
    base.write_text(json.dumps(spec))
    del spec["paths"]["/v1/refunds"]
    revision.write_text(json.dumps(spec))

    def rules(*extra: str) -> set[str]:
        result = run("diff", str(base), str(revision), "--format", "json", *extra)
        return {c["rule"] for c in json.loads(result.output)["changes"]}

    assert "endpoint-removed-before-sunset" in rules()
    assert "endpoint-removed-deprecated" in rules("--today", "3000-06-01")
    bad = run("diff", str(base), str(revision), "--today", "tomorrow")
    assert bad.exit_code == 2


def test_grouped_by_default_and_flat_on_request(tmp_path: Path) -> None:
    """A property removed from a schema that every charge operation returns is one cause
    with the operations it affects; --flat lists it once per operation."""
    spec = charges_spec()
    answer = {"application/json": {"schema": {"$ref": "#/components/schemas/Charge"}}}
    spec["paths"]["/v1/charges"] = {
        "post": {"responses": {"200": {"description": "ok", "content": answer}}}
    }
    base, revision = tmp_path / "base.json", tmp_path / "rev.json"
    base.write_text(json.dumps(spec))
    charge = spec["components"]["schemas"]["Charge"]
    del charge["properties"]["amount"]
    charge["required"] = ["id"]
    revision.write_text(json.dumps(spec))

    grouped = json.loads(run("diff", str(base), str(revision), "--format", "json").output)
    flat = json.loads(run("diff", str(base), str(revision), "--format", "json", "--flat").output)
    assert grouped["grouped"] is True and flat["grouped"] is False
    assert grouped["counts"]["breaking"] == 1 and grouped["occurrences"]["breaking"] == 2
    (cause,) = grouped["changes"]
    assert cause["affected"] == ["GET /v1/charges/{id}", "POST /v1/charges"]
    assert cause["affectedCount"] == 2 and cause["origin"].endswith("/Charge/properties/amount")
    assert flat["counts"]["breaking"] == 2 and "occurrences" not in flat
    assert all("affected" not in c for c in flat["changes"])

    text = run("diff", str(base), str(revision)).output.splitlines()
    assert text[1].startswith("1 breaking, 0 warning, 0 info cause.")
    assert "Top causes:" in text
    lead = "BREAKING Charge: required property 'amount' removed (2 operations)"
    assert any(line.strip().startswith(lead) for line in text)
    markdown = run("diff", str(base), str(revision), "--format", "markdown").output
    assert "**Top causes**" in markdown
    assert "| `Charge`: required property 'amount' removed | 2 operations |" in markdown
