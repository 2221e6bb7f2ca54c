"""Rendering a diff report: text, JSON, Markdown, GitHub annotations, SARIF 2.1.0, JUnit XML.

Pure functions from a `DiffReport` to text. The JSON form is the documented, stable one:
`{changes: [change objects], counts: {breaking, warning, info}}` plus context fields.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

from controller import __version__
from controller.diffs.explain import hint_of, summarize_counts, with_hints
from controller.diffs.rules import CATALOG
from controller.model.change import Change, Severity
from controller.model.report import DiffReport, Threshold

FORMATS = ("text", "json", "markdown", "github", "sarif", "junit")
MARKDOWN_ROWS = 250
PRETTY_LIMIT = 2000
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {Severity.BREAKING: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
_GITHUB_LEVEL = {Severity.BREAKING: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def render(report: DiffReport, fmt: str, fail_on: Threshold = "breaking") -> str:
    """Render `report` in one of FORMATS."""
    renderer: dict[str, Callable[[DiffReport, Threshold], str]] = {
        "text": render_text,
        "json": render_json,
        "markdown": render_markdown,
        "github": render_github,
        "sarif": render_sarif,
        "junit": render_junit,
    }
    return renderer[fmt](report, fail_on)


def ordered(changes: list[Change]) -> list[Change]:
    """Most severe first, then the causes that affect most operations, then by place; ignored
    changes last."""
    return sorted(
        changes,
        key=lambda c: (c.ignored, -c.severity.rank, -reach(c), where(c), c.path, c.rule),
    )


def reach(change: Change) -> int:
    """How many operations (or tools) the change affects: its group's size, else one."""
    return len(change.affected) if change.affected else 1


def affects(change: Change) -> str:
    """` (+N more)` for a cause that reaches several operations."""
    return f" (+{reach(change) - 1} more)" if reach(change) > 1 else ""


TOP_CAUSES = 5


def lead(report: DiffReport) -> list[str]:
    """The summary every human format starts with: counts, and for a grouped report how many
    per-operation changes the causes stand for and the causes that reach most operations."""
    lines = [summarize_counts(report.counts, report.ignored)]
    if report.occurrences is not None and report.occurrences != report.counts:
        total = sum(report.occurrences.values())
        lines.append(
            f"Grouped by cause: {sum(report.counts.values())} causes stand for {total} "
            "per-operation changes (--flat lists each)."
        )
        top = [c for c in ordered(report.changes) if reach(c) > 1 and not c.ignored]
        top.sort(key=lambda c: (-c.severity.rank, -reach(c)))
        if top:
            lines.append("Top causes:")
            for change in top[:TOP_CAUSES]:
                lines.append(
                    f"  {change.severity.value.upper():<8} {change.origin}: {reach(change)} "
                    f"operations [{change.rule}]"
                )
    return lines


def where(change: Change) -> str:
    if change.location is not None:
        return change.location.operation or change.location.tool or ""
    return ""


def render_text(report: DiffReport, fail_on: Threshold) -> str:
    lines = [f"driftgate diff ({report.contract_type}): {report.base} -> {report.revision}"]
    if report.changes:
        lines += [*lead(report), ""]
    for change in ordered(report.changes):
        label = "IGNORED" if change.ignored else change.severity.value.upper()
        place = (where(change) or change.path) + affects(change)
        lines.append(f"  {label:<8} {place}: {change.summary} [{change.rule}]")
        if reach(change) > 1:
            lines.append(f"           cause: {change.origin}")
        if change.ignored:
            lines.append(f"           ignored: {change.ignoreReason}")
        else:
            lines.append(f"           hint: {hint_of(change.rule, change.severity)}")
    lines.append(summarize_counts(report.counts, report.ignored))
    verdict = "FAIL" if report.reaches(fail_on) else "PASS"
    lines.append(f"{verdict} (--fail-on {fail_on})")
    return "\n".join(lines) + "\n"


def render_json(report: DiffReport, fail_on: Threshold) -> str:
    payload: dict[str, Any] = {
        "base": report.base,
        "revision": report.revision,
        "type": report.contract_type,
        "changes": with_hints(c.to_json() for c in ordered(report.changes)),
        "counts": report.counts,
        "grouped": report.grouped,
        "ignored": report.ignored,
        "failOn": fail_on,
        "failed": report.reaches(fail_on),
    }
    if report.occurrences is not None:
        payload["occurrences"] = report.occurrences
    if report.profile is not None:
        payload["profile"] = report.profile
    return _dump(payload, len(report.changes))


def render_markdown(report: DiffReport, fail_on: Threshold) -> str:
    verdict = "fails" if report.reaches(fail_on) else "passes"
    summary, *rest = lead(report)
    lines = [
        f"### driftgate: {summary}",
        "",
        f"`{report.base}` → `{report.revision}` ({report.contract_type}); the gate "
        f"(`--fail-on {fail_on}`) {verdict}.",
        "",
    ]
    if rest:
        lines += [
            _md(line) if not line.startswith("  ") else f"- {_md(line.strip())}" for line in rest
        ]
        lines.append("")
    changes = ordered(report.changes)
    if changes:
        lines += [
            "| severity | where | change | rule | action | hint |",
            "|---|---|---|---|---|---|",
        ]
        for change in changes[:MARKDOWN_ROWS]:
            severity = "ignored" if change.ignored else change.severity.value
            lines.append(
                f"| {severity} | {_md((where(change) or change.path) + affects(change))} "
                f"| {_md(change.summary)} "
                f"| `{change.rule}` | `{change.agentAction}` "
                f"| {_md(hint_of(change.rule, change.severity))} |"
            )
        if len(changes) > MARKDOWN_ROWS:
            lines.append("")
            lines.append(
                f"…and {len(changes) - MARKDOWN_ROWS} more (see the JSON or SARIF output)."
            )
    return "\n".join(lines) + "\n"


def render_github(report: DiffReport, fail_on: Threshold) -> str:
    """GitHub Actions workflow commands: one annotation per change that is not ignored."""
    lines = []
    file_part = (
        ""
        if report.revision.startswith(("http://", "https://"))
        else f"file={_prop(report.revision)},"
    )
    for change in ordered(report.changes):
        if change.ignored:
            continue
        title = f"{change.severity.value} contract change ({change.rule})"
        message = f"{where(change) + ': ' if where(change) else ''}{change.summary} [{change.path}]"
        lines.append(
            f"::{_GITHUB_LEVEL[change.severity]} {file_part}title={_prop(title)}::{_data(message)}"
        )
    lines.append(f"driftgate: {summarize_counts(report.counts, report.ignored)}")
    return "\n".join(lines) + "\n"


def render_sarif(report: DiffReport, fail_on: Threshold) -> str:
    rule_ids = sorted({c.rule for c in report.changes})
    index = {rule_id: i for i, rule_id in enumerate(rule_ids)}
    rules = []
    for rule_id in rule_ids:
        rule = CATALOG.get(rule_id)
        severity = rule.severity if rule else Severity.WARNING
        rules.append(
            {
                "id": rule_id,
                "name": rule_id,
                "shortDescription": {
                    "text": rule.summary.split("{")[0].strip() or rule_id if rule else rule_id
                },
                "help": {"text": rule.hint if rule else "Review the change."},
                "defaultConfiguration": {"level": _SARIF_LEVEL[severity]},
                "properties": {"agentAction": rule.agent_action if rule else "accept_baseline"},
            }
        )
    results = []
    for change in ordered(report.changes):
        result: dict[str, Any] = {
            "ruleId": change.rule,
            "ruleIndex": index[change.rule],
            "level": _SARIF_LEVEL[change.severity],
            "message": {"text": change.summary},
            "locations": [
                {
                    "physicalLocation": {"artifactLocation": {"uri": _artifact(report.revision)}},
                    "logicalLocations": [
                        {"fullyQualifiedName": where(change) or change.path, "kind": "member"}
                    ],
                }
            ],
            "partialFingerprints": {"driftgate/v1": f"{change.rule}:{where(change)}:{change.path}"},
            "properties": {
                "severity": change.severity.value,
                "path": change.path,
                "agentAction": change.agentAction,
            },
        }
        if change.ignored:
            result["suppressions"] = [
                {"kind": "external", "justification": change.ignoreReason or ""}
            ]
        results.append(result)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "driftgate",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "artifacts": [{"location": {"uri": _artifact(report.revision)}}],
                "results": results,
                "properties": {
                    "base": report.base,
                    "revision": report.revision,
                    "counts": report.counts,
                },
            }
        ],
    }
    return _dump(log, len(report.changes))


def render_junit(report: DiffReport, fail_on: Threshold) -> str:
    """One test case per change; those at or above the threshold fail, ignored ones are skipped."""
    changes = ordered(report.changes)
    floor = None if fail_on == "never" else Severity(fail_on).rank
    suite = ET.Element("testsuite", name="driftgate", tests=str(max(1, len(changes))))
    failures = skipped = 0
    for change in changes:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=where(change) or report.contract_type,
            name=f"{change.rule} {change.path}",
        )
        if change.ignored:
            skipped += 1
            ET.SubElement(case, "skipped", message=change.ignoreReason or "ignored")
        elif floor is not None and change.severity.rank >= floor:
            failures += 1
            failure = ET.SubElement(
                case, "failure", message=change.summary, type=change.severity.value
            )
            failure.text = (
                f"{change.summary}\nrule: {change.rule}\nagentAction: {change.agentAction}"
            )
    if not changes:
        ET.SubElement(suite, "testcase", classname=report.contract_type, name="no contract changes")
    suite.set("failures", str(failures))
    suite.set("skipped", str(skipped))
    suite.set("errors", "0")
    root = ET.Element(
        "testsuites", name="driftgate", tests=suite.get("tests", "0"), failures=str(failures)
    )
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _dump(document: Any, size: int) -> str:
    # Indented output goes through json's pure-Python encoder; large reports stay compact
    # so that 10^5 changes serialise in about a second instead of ten.
    indent = 2 if size <= PRETTY_LIMIT else None
    return json.dumps(document, indent=indent, default=str) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _artifact(location: str) -> str:
    return location if "://" in location else location.removeprefix("./")
