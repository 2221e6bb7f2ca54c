"""`driftgate diff`'s output where it is read (issue 32, section 3): causes first, one set of
totals grouped or --flat, Markdown under GitHub's comment limit, GitHub annotations and SARIF
at relative paths and lines, and a warning for documents of different APIs.

On the committed shop fixtures (tests/cli/fixtures: a shared `Order` schema that three
operations answer in their 200 and error responses) always; on the big real pairs of
`../shared/bench/openapi/` when they are there.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sarif_pydantic import Sarif

from cli.main import main
from controller.diffs.rules import CATALOG, Direction, hint_misfits, side_of
from tests.formats import assert_valid_junit, assert_valid_sarif

FIXTURES = Path(__file__).parent / "fixtures"
BENCH = Path(__file__).resolve().parents[3] / "shared" / "bench" / "openapi"
needs_bench = pytest.mark.skipif(
    not BENCH.is_dir(), reason=f"{BENCH} (the big real OpenAPI pairs) is absent"
)
FORMATS = ("text", "json", "markdown", "github", "sarif", "junit")


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["diff", *args], catch_exceptions=False)


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The fixtures copied into the working directory, named as a workflow would."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "api").mkdir()
    names = {}
    for name in ("shop-v1.yaml", "shop-v2.yaml", "shop-v1.json", "shop-v2.json"):
        (tmp_path / "api" / name).write_text((FIXTURES / name).read_text(encoding="utf-8"))
        names[name] = f"api/{name}"
    return names


def line_of(path: str, number: int) -> str:
    return Path(path).read_text(encoding="utf-8").splitlines()[number - 1]


@pytest.mark.parametrize("ext", ["yaml", "json"])
def test_grouped_changes_lead_with_their_cause(shop: dict[str, str], ext: str) -> None:
    base, revision = shop[f"shop-v1.{ext}"], shop[f"shop-v2.{ext}"]
    text = run(base, revision).output
    rows = [line.strip() for line in text.splitlines()]
    cause = rows.index(
        "BREAKING Order.note: minLength 1 removed (3 operations) "
        "[response-property-min-length-unset]",
        rows.index(""),  # the row, after the top causes
    )
    assert rows[cause + 1] == (
        "at #/components/schemas/Order/properties/note, from GET /orders, GET /orders/{id} "
        "and 1 more"
    )
    assert rows[cause + 2] == (
        "hint: A reader of `GET /orders` 200 that relies on `[].note` staying within minLength "
        "`1` may now get any value: the limit is gone. "
        f"{CATALOG['response-property-min-length-unset'].hint}"
    )
    assert (
        "WARNING  Order: property 'legacy_code' removed (3 operations) [response-property-removed]"
        in rows
    )
    # A change of one operation's own stays told by its place.
    assert (
        "BREAKING DELETE /orders/{id}: operation DELETE /orders/{id} removed [endpoint-removed]"
        in rows
    )
    # No row leads with an operation and the deep path through it; --flat still lists places.
    assert not any("property 'order.note'" in row for row in rows)
    flat = [line.strip() for line in run(base, revision, "--flat").output.splitlines()]
    assert (
        "BREAKING GET /orders: response default (application/json) property 'order.note': "
        "minLength 1 removed [response-property-min-length-unset]" in flat
    )
    markdown = run(base, revision, "--format", "markdown").output
    assert "| breaking | `Order.note`: minLength 1 removed | 3 operations |" in markdown
    assert "- **breaking** `Order.note`: minLength 1 removed (3 operations," in markdown
    body = json.loads(run(base, revision, "--format", "json").output)
    note = next(c for c in body["changes"] if c["rule"] == "response-property-min-length-unset")
    assert note["cause"] == "Order.note: minLength 1 removed" and note["affectedCount"] == 3


def test_totals_are_the_same_grouped_and_flat(shop: dict[str, str]) -> None:
    base, revision = shop["shop-v1.yaml"], shop["shop-v2.yaml"]
    grouped = json.loads(run(base, revision, "--format", "json").output)
    flat = json.loads(run(base, revision, "--format", "json", "--flat").output)
    assert grouped["totals"] == flat["totals"]
    totals = grouped["totals"]
    assert grouped["counts"] == totals["causes"]  # a grouped report lists causes
    assert grouped["occurrences"] == totals["operations"]
    assert flat["counts"] == totals["places"]  # --flat lists places
    # Order.note: 3 operations, each in its 200 and its error answer: 6 places.
    assert totals["causes"]["breaking"] == 2  # Order.note, DELETE /orders/{id}
    assert totals["operations"]["breaking"] == 4 and totals["places"]["breaking"] == 7
    note = next(c for c in grouped["changes"] if c["rule"] == "response-property-min-length-unset")
    assert note["placeCount"] == 6

    # The text says the same in both, and what each level counts.
    def table(*extra: str) -> list[str]:
        lines = run(base, revision, *extra).output.splitlines()
        first = lines.index("Totals (the same with or without --flat):")
        return lines[first : first + 8]

    grouped_table, flat_table = table(), table("--flat")
    assert grouped_table == flat_table
    assert grouped_table[2].split() == ["breaking", "2", "4", "7"]
    assert [line.split(":")[0].strip() for line in grouped_table[5:]] == [
        "causes",
        "operations",
        "places",
    ]


def test_markdown_is_capped_by_size_keeping_the_summary_and_top_causes(
    shop: dict[str, str],
) -> None:
    base, revision = shop["shop-v1.yaml"], shop["shop-v2.yaml"]
    full = run(base, revision, "--format", "markdown").output
    assert "left out" not in full and full.count("\n| ") >= 4
    limit = len(full) - 1  # one character too many for everything
    capped = run(base, revision, "--format", "markdown", "--markdown-max-chars", str(limit)).output
    assert len(capped) <= limit
    assert capped.startswith("### driftgate: 2 breaking, 1 warning, 1 info causes.")
    assert "**Top causes**" in capped and "| totals | causes | operations | places |" in capped
    shown = len(re.findall(r"^\| (breaking|warning|info) \| `", capped, re.MULTILINE))
    assert shown < 4
    assert f"…and {4 - shown} more of 4 rows left out" in capped
    refused = CliRunner().invoke(
        main, ["diff", base, revision, "--format", "markdown", "--markdown-max-chars", "10"]
    )
    assert refused.exit_code == 2 and "--markdown-max-chars" in refused.output


@pytest.mark.parametrize("ext", ["yaml", "json"])
def test_github_annotations_are_a_summary_and_the_top_ones_at_file_and_line(
    shop: dict[str, str], ext: str
) -> None:
    base, revision = shop[f"shop-v1.{ext}"], shop[f"shop-v2.{ext}"]
    absolute = str(Path(revision).resolve())
    lines = run(base, absolute, "--format", "github", "--annotations", "3").output.splitlines()
    annotations = [line for line in lines if line.startswith("::")]
    assert len(annotations) == 1 + 3
    summary = annotations[0]
    assert summary.startswith("::error title=driftgate%3A 2 breaking")
    assert "Annotated: the 3 that matter most of 4" in summary and "file=" not in summary
    places = [
        re.match(r"::(\w+) file=([^,]+),line=(\d+),title=([^:]+)::(.*)", a) for a in annotations[1:]
    ]
    assert all(places)
    for match in places:
        assert match is not None and match[2] == revision  # relative, as given to a workflow
    note, removed, legacy = (m for m in places if m is not None)
    # The changed node's own line in the new document.
    assert "note" in line_of(revision, int(note[3])) and "Order.note" in note[4]
    # A removed operation: the nearest parent in the new document, and where it was.
    assert "/orders/{id}" in line_of(revision, int(removed[3]))
    was = re.search(r"Was at ([^:]+):(\d+)", removed[5])
    assert was is not None and was[1] == base and "delete" in line_of(base, int(was[2]))
    assert "legacy_code" in line_of(base, int(re.search(r"Was at [^:]+:(\d+)", legacy[5])[1]))  # type: ignore[index]
    assert lines[-1].startswith("driftgate: 2 breaking")
    # The default: a summary and nine more at most (here all four).
    default = run(base, revision, "--format", "github").output
    assert default.count("\n::") + default.startswith("::") == 5


@pytest.mark.parametrize("ext", ["yaml", "json"])
def test_sarif_results_have_relative_uris_and_lines(shop: dict[str, str], ext: str) -> None:
    base, revision = shop[f"shop-v1.{ext}"], shop[f"shop-v2.{ext}"]
    log = json.loads(run(base, str(Path(revision).resolve()), "--format", "sarif").output)
    Sarif.model_validate(log)
    assert_valid_sarif(log)
    run_ = log["runs"][0]
    assert run_["artifacts"] == [{"location": {"uri": revision, "uriBaseId": "%SRCROOT%"}}]
    for result in run_["results"]:
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"] == {"uri": revision, "uriBaseId": "%SRCROOT%"}
        assert location["region"]["startLine"] >= 1
    note = next(r for r in run_["results"] if r["ruleId"] == "response-property-min-length-unset")
    assert note["message"]["text"].startswith("Order.note: minLength 1 removed (3 operations")
    assert "note" in line_of(
        revision, note["locations"][0]["physicalLocation"]["region"]["startLine"]
    )
    assert note["partialFingerprints"]["driftgate/v1"].endswith(
        "#/components/schemas/Order/properties/note"
    )
    removed = next(r for r in run_["results"] if r["ruleId"] == "endpoint-removed")
    (before,) = removed["relatedLocations"]
    assert before["physicalLocation"]["artifactLocation"]["uri"] == base
    assert "delete" in line_of(base, before["physicalLocation"]["region"]["startLine"])


def test_sarif_and_junit_validate_for_any_file_name_and_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OASIS's schema wants URI references: a file name with a space, `%` or a non-ASCII
    letter is percent-encoded. MCP snapshots are located to the line too; an ignored change
    is a suppressed result (SARIF) and a skipped case (JUnit)."""
    monkeypatch.chdir(tmp_path)
    tools = {"search": "Search", "fetch": "Fetch"}

    def snapshot(name: str, names: list[str]) -> str:
        doc = {
            "server_info": {"name": "demo", "version": "1"},
            "protocol_version": "2025-06-18",
            "capabilities": {"tools": {}},
            "tools": [
                {"name": t, "description": tools[t], "inputSchema": {"type": "object"}}
                for t in names
            ],
        }
        (tmp_path / name).write_text(json.dumps(doc, indent=2), encoding="utf-8")
        return name

    rules = tmp_path / "rules.yaml"
    rules.write_text("ignore:\n  - rule: tool-removed\n    reason: retired with the server\n")
    base = snapshot("tools v1.json", ["search", "fetch"])
    revision = snapshot("outils é 100%.json", ["search"])
    for extra in ([], ["--rules", str(rules)]):
        log = json.loads(run(base, revision, "--format", "sarif", *extra).output)
        assert_valid_sarif(log)
        (result,) = log["runs"][0]["results"]
        assert result["ruleId"] == "tool-removed" and result["level"] == "error"
        place = result["locations"][0]["physicalLocation"]
        assert place["artifactLocation"] == {
            "uri": "outils%20%C3%A9%20100%25.json",
            "uriBaseId": "%SRCROOT%",
        }
        assert place["region"]["startLine"] >= 1
        (before,) = result["relatedLocations"]
        assert before["physicalLocation"]["artifactLocation"]["uri"] == "tools%20v1.json"
        start = before["physicalLocation"]["region"]["startLine"]  # the removed tool's object
        assert line_of(base, start).strip() == "{"
        assert line_of(base, start + 1).strip() == '"name": "fetch",'
        assert ("suppressions" in result) == bool(extra)
        junit = run(base, revision, "--format", "junit", *extra).output
        assert_valid_junit(junit)
        (case,) = ET.fromstring(junit).iter("testcase")
        assert case.find("skipped" if extra else "failure") is not None


def test_unrelated_documents_are_warned_about_in_every_format(
    shop: dict[str, str], tmp_path: Path
) -> None:
    pets = {
        "openapi": "3.0.3",
        "info": {"title": "Pets", "version": "1"},
        "paths": {
            f"/pets{i}": {"get": {"responses": {"200": {"description": "ok"}}}} for i in range(4)
        },
    }
    (tmp_path / "pets.json").write_text(json.dumps(pets))
    outputs = {
        fmt: run(shop["shop-v1.yaml"], "pets.json", "--format", fmt).output for fmt in FORMATS
    }
    for fmt, output in outputs.items():
        assert "share 0 of their operations" in output, fmt
        assert "'Shop' and 'Pets'" in output, fmt
    body = json.loads(outputs["json"])
    assert body["overlap"] == {
        "kind": "operations",
        "base": 5,
        "revision": 4,
        "shared": 0,
        "unrelated": True,
    }
    assert [w["code"] for w in body["warnings"]] == ["unrelated-documents"]
    assert outputs["text"].splitlines()[1].startswith("WARNING: The two documents")
    assert outputs["github"].startswith("::warning title=driftgate%3A unrelated-documents::")
    assert "> [!WARNING]" in outputs["markdown"]
    assert_valid_sarif(json.loads(outputs["sarif"]))
    assert_valid_junit(outputs["junit"])
    sarif = json.loads(outputs["sarif"])["runs"][0]
    (notice,) = sarif["invocations"][0]["toolExecutionNotifications"]
    assert notice["descriptor"]["id"] == "unrelated-documents"
    assert ET.fromstring(outputs["junit"]).find("testsuite/system-err") is not None
    # Related documents: no warning.
    related = json.loads(run(shop["shop-v1.yaml"], shop["shop-v2.yaml"], "--format", "json").output)
    assert related["warnings"] == [] and related["overlap"]["shared"] == 4
    assert related["overlap"]["unrelated"] is False


# -- the big real pairs ----------------------------------------------------------------------


def bench(name: str) -> str:
    return str(BENCH / name)


@needs_bench
def test_stripe_leads_with_the_cause_and_fits_a_comment() -> None:
    base, revision = bench("stripe-2021-10-19.json"), bench("stripe-2022-04-12.json")
    text = run(base, revision).output
    # A shared schema's change is one cause with its reach (an upper size bound dropped on a
    # response is a warning since issue 41).
    assert (
        "  WARNING  refund.reason: maxLength 5000 removed (385 operations) "
        "[response-property-max-length-unset]" in text.splitlines()
    )
    markdown = run(base, revision, "--format", "markdown").output
    assert len(markdown) <= 60_000  # was 71,866: over GitHub's 65,536
    assert "**Top causes**" in markdown and "rows left out" in markdown
    assert "| warning | `refund.reason`: maxLength 5000 removed | 385 operations |" in markdown


@needs_bench
def test_stripe_totals_agree_grouped_and_flat() -> None:
    base, revision = bench("stripe-2021-10-19.json"), bench("stripe-2022-04-12.json")
    grouped = json.loads(run(base, revision, "--format", "json").output)
    flat = json.loads(run(base, revision, "--format", "json", "--flat").output)
    assert grouped["totals"] == flat["totals"]
    assert flat["counts"] == grouped["totals"]["places"]
    assert grouped["counts"] == grouped["totals"]["causes"]


@needs_bench
def test_github_annotations_on_the_stripe_yaml_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(BENCH.parent)
    output = run(
        "openapi/stripe-2023-03-11.yaml", "openapi/stripe-2023-09-12.yaml", "--format", "github"
    ).output
    annotations = [line for line in output.splitlines() if line.startswith("::")]
    assert len(annotations) == 10  # was 493
    for annotation in annotations[1:]:
        match = re.match(r"::\w+ file=openapi/stripe-2023-09-12.yaml,line=(\d+),", annotation)
        assert match is not None, annotation


@needs_bench
def test_github_against_stripe_is_warned_about() -> None:
    body = json.loads(
        run(
            bench("github-2022-07-18.json"), bench("stripe-2022-04-12.json"), "--format", "json"
        ).output
    )
    assert body["overlap"]["unrelated"] is True and body["overlap"]["shared"] == 0
    assert body["warnings"][0]["code"] == "unrelated-documents"


@needs_bench
@pytest.mark.parametrize(
    ("base", "revision"),
    [
        ("github-2021-09-27.json", "github-2022-07-18.json"),
        ("stripe-2021-10-19.json", "stripe-2022-04-12.json"),
        ("stripe-2023-03-11.yaml", "stripe-2023-09-12.yaml"),
    ],
)
def test_hints_on_the_real_pairs_fit_their_side(base: str, revision: str) -> None:
    body = json.loads(run(bench(base), bench(revision), "--format", "json").output)
    assert body["changes"]
    for change in body["changes"]:
        rule = CATALOG[change["rule"]]
        side = side_of(rule.id, rule.direction)
        assert not hint_misfits(change["hint"], side), change["rule"]
        if side is Direction.RESPONSE:
            assert "send" not in change["hint"].lower().split()


def test_the_cli_defaults_are_the_renderers() -> None:
    from cli.commands.diff import diff
    from controller.diffs.reports import ANNOTATIONS, MARKDOWN_MAX_CHARS

    defaults = {p.name: p.default for p in diff.params}
    assert defaults["markdown_max_chars"] == MARKDOWN_MAX_CHARS < 65_536
    assert defaults["annotations"] == ANNOTATIONS
