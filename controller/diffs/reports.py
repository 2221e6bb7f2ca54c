"""Rendering a diff report: text, JSON, Markdown, GitHub annotations, SARIF 2.1.0, JUnit XML.

Pure functions from a `DiffReport` to text. The JSON form is the documented, stable one:
`{changes: [change objects], counts: {breaking, warning, info}}` plus context fields.

Each format fits where it is read. A grouped change leads with its cause (the schema and what
changed in it, and how many operations it reaches), not with the first operation it was met
through. Every format states the same totals, grouped or `--flat`. Markdown (a pull request
comment) stays under a size; GitHub annotations are a summary and the changes that matter
most (GitHub shows about ten per step), each at its file and line; SARIF results carry
relative URIs and lines. Documents that look like different APIs are warned about in all.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from controller import __version__
from controller.diffs.explain import hint_for, summarize_counts, with_hints
from controller.diffs.grouping import LEVELS, describe_cause, places_of, reach
from controller.diffs.positions import LineIndex, Position
from controller.diffs.rules import CATALOG
from controller.model.change import Change, Severity
from controller.model.report import DiffReport, Source, Threshold

FORMATS = ("text", "json", "markdown", "github", "sarif", "junit")
PRETTY_LIMIT = 2000
TOP_CAUSES = 5
MARKDOWN_MAX_CHARS = 60_000
"""GitHub refuses comments over 65,536 characters; the default leaves room for the rest."""
ANNOTATIONS = 9
"""Change annotations besides the summary: GitHub shows ten of a kind per step."""
_CLOSING_ROOM = 300
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
_URL_SAFE = ":/?#[]@!$&'()*+,;=%~"
"""What a URL keeps unescaped in SARIF: its delimiters and its existing escapes."""
_SARIF_LEVEL = {Severity.BREAKING: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
_GITHUB_LEVEL = {Severity.BREAKING: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
_LEVEL_WORDS = {
    "causes": "one change to one place of the contract, however many operations reach it",
    "operations": "the operations each cause reaches",
    "places": "each request or response of an operation the cause was met in (what --flat "
    "lists, one change each)",
}


@dataclass(frozen=True)
class RenderOptions:
    """How much a format shows: the Markdown size cap and the GitHub annotations."""

    markdown_max_chars: int = MARKDOWN_MAX_CHARS
    annotations: int = ANNOTATIONS


def render(
    report: DiffReport,
    fmt: str,
    fail_on: Threshold = "breaking",
    options: RenderOptions | None = None,
) -> str:
    """Render `report` in one of FORMATS."""
    renderer: dict[str, Callable[[DiffReport, Threshold, RenderOptions], str]] = {
        "text": render_text,
        "json": render_json,
        "markdown": render_markdown,
        "github": render_github,
        "sarif": render_sarif,
        "junit": render_junit,
    }
    return renderer[fmt](report, fail_on, options or RenderOptions())


def ordered(changes: list[Change]) -> list[Change]:
    """Most severe first, then the causes that affect most operations, then by place; ignored
    changes last."""
    return sorted(
        changes,
        key=lambda c: (c.ignored, -c.severity.rank, -reach(c), where(c), c.path, c.rule),
    )


def where(change: Change) -> str:
    if change.location is not None:
        return change.location.operation or change.location.tool or ""
    return ""


@dataclass(frozen=True)
class Headline:
    """A change as a reader meets it first: its subject (a schema field, else the
    operation or path), what changed, and how far it reaches."""

    subject: str
    what: str
    reach: int
    is_cause: bool

    @property
    def reaches(self) -> str:
        return f"{self.reach:,} operation{'s' if self.reach != 1 else ''}"


def headline(change: Change) -> Headline:
    """A grouped change that lives in a shared schema by its cause, else (a change of its own
    place, any change of a --flat report) by its place and summary."""
    cause = describe_cause(change) if change.affected is not None else None
    if cause is not None:
        return Headline(cause.subject, cause.what, cause.operations, True)
    return Headline(where(change) or change.path, change.summary, reach(change), False)


def examples(change: Change, shown: int = 2) -> str:
    """The operations a cause reaches, the first few named: `GET /a, POST /b and 3 more`."""
    places = change.affected or [where(change) or change.path]
    named = ", ".join(places[:shown])
    rest = len(places) - shown
    return f"{named} and {rest:,} more" if rest > 0 else named


def _noun(report: DiffReport) -> str:
    return "cause" if report.grouped else "change"


def _summary(report: DiffReport) -> str:
    return summarize_counts(report.counts, report.ignored, _noun(report))


def _totals_differ(report: DiffReport) -> bool:
    totals = report.totals
    return totals is not None and not (totals["causes"] == totals["operations"] == totals["places"])


def totals_lines(report: DiffReport) -> list[str]:
    """The totals table (the same grouped or --flat), when its levels differ."""
    totals = report.totals
    if totals is None or not _totals_differ(report):
        return []
    lines = [
        "Totals (the same with or without --flat):",
        f"  {'':<10}{'causes':>10}{'operations':>12}{'places':>10}",
    ]
    for severity in Severity:
        row = [totals[level][severity.value] for level in LEVELS]
        lines.append(f"  {severity.value:<10}{row[0]:>10,}{row[1]:>12,}{row[2]:>10,}")
    lines += [f"  {level}: {_LEVEL_WORDS[level]}." for level in LEVELS]
    return lines


def top_causes(report: DiffReport) -> list[Change]:
    """The causes that reach most operations, worst first (grouped reports only)."""
    if not report.grouped:
        return []
    top = [c for c in report.changes if reach(c) > 1 and not c.ignored]
    top.sort(key=lambda c: (-c.severity.rank, -reach(c), where(c), c.path, c.rule))
    return top[:TOP_CAUSES]


def render_text(report: DiffReport, fail_on: Threshold, options: RenderOptions) -> str:
    lines = [f"driftgate diff ({report.contract_type}): {report.base} -> {report.revision}"]
    lines += [f"WARNING: {warning['message']}" for warning in report.warnings]
    if report.changes:
        lines.append(_summary(report))
        lines += totals_lines(report)
        top = top_causes(report)
        if top:
            lines.append("Top causes:")
            for change in top:
                head = headline(change)
                lines.append(
                    f"  {change.severity.value.upper():<8} {head.subject}: {head.what} "
                    f"({head.reaches}) [{change.rule}]"
                )
        lines.append("")
    for change in ordered(report.changes):
        label = ("WAIVED" if change.waived else "IGNORED") if change.ignored else None
        label = label or change.severity.value.upper()
        head = headline(change)
        if head.is_cause:
            lines.append(
                f"  {label:<8} {head.subject}: {head.what} ({head.reaches}) [{change.rule}]"
            )
            lines.append(f"           at {change.origin}, from {examples(change)}")
        else:
            lines.append(f"  {label:<8} {head.subject}: {head.what} [{change.rule}]")
        if change.ignored:
            lines.append(f"           {ignored_note(change)}")
        else:
            lines.append(f"           hint: {hint_for(change)}")
    lines.append(_summary(report))
    verdict = "FAIL" if report.reaches(fail_on) else "PASS"
    lines.append(f"{verdict} (--fail-on {fail_on})")
    return "\n".join(lines) + "\n"


def ignored_note(change: Change) -> str:
    """Why a finding does not count: `waived by OWNER until DAY: REASON` or `ignored: REASON`."""
    if change.waived and change.waiver is not None:
        waiver = change.waiver
        return f"waived by {waiver.owner} until {waiver.expires}: {waiver.reason}"
    return f"ignored: {change.ignoreReason or ''}"


def _why(change: Change) -> str:
    """The reason alone for an ignored finding, the whole waiver for a waived one."""
    return ignored_note(change) if change.waived else change.ignoreReason or ""


def render_json(report: DiffReport, fail_on: Threshold, options: RenderOptions) -> str:
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
        "warnings": report.warnings,
    }
    if report.occurrences is not None:
        payload["occurrences"] = report.occurrences
    if report.totals is not None:
        payload["totals"] = report.totals
    if report.overlap is not None:
        payload["overlap"] = report.overlap
    if report.profile is not None:
        payload["profile"] = report.profile
    return _dump(payload, len(report.changes))


def render_markdown(report: DiffReport, fail_on: Threshold, options: RenderOptions) -> str:
    """A pull request comment: the summary, the totals, the top causes, then a table of
    changes, as many as fit under `options.markdown_max_chars`."""
    verdict = "fails" if report.reaches(fail_on) else "passes"
    head = [
        f"### driftgate: {_summary(report)}",
        "",
        f"`{report.base}` → `{report.revision}` ({report.contract_type}); the gate "
        f"(`--fail-on {fail_on}`) {verdict}.",
        "",
    ]
    for warning in report.warnings:
        head += ["> [!WARNING]", f"> {_md(warning['message'])}", ""]
    if report.totals is not None and _totals_differ(report):
        head += [
            "| totals | causes | operations | places |",
            "|---|---:|---:|---:|",
            *(
                f"| {s.value} | "
                + " | ".join(f"{report.totals[level][s.value]:,}" for level in LEVELS)
                + " |"
                for s in Severity
            ),
            "",
            "; ".join(f"*{level}*: {_LEVEL_WORDS[level]}" for level in LEVELS)
            + ". The totals are the same with or without `--flat`.",
            "",
        ]
    top = top_causes(report)
    if top:
        head += ["**Top causes**", ""]
        for change in top:
            line = headline(change)
            head.append(
                f"- **{change.severity.value}** `{_tick(line.subject)}`: {_md(line.what)} "
                f"({line.reaches}, `{change.rule}`)"
            )
        head.append("")
    changes = ordered(report.changes)
    if not changes:
        return "\n".join(head) + "\n"
    head += [
        "| severity | change | reaches | rule | hint |",
        "|---|---|---|---|---|",
    ]
    rows = []
    for change in changes:
        line = headline(change)
        severity = change.severity.value
        if change.ignored:
            severity = "waived" if change.waived else "ignored"
            hint = ignored_note(change)
        else:
            hint = hint_for(change)
        rows.append(
            f"| {severity} | `{_tick(line.subject)}`: {_md(line.what)} | {line.reaches} "
            f"| `{change.rule}` | {_md(hint)} |"
        )
    return _fit(head, rows, options.markdown_max_chars)


def _fit(head: list[str], rows: list[str], limit: int) -> str:
    """The Markdown report: the head and as many rows as fit under `limit` characters."""

    def left_out(rest: int, total: int) -> str:
        return (
            f"*…and {rest:,} more of {total:,} rows left out to keep this comment under "
            f"{limit:,} characters (`--markdown-max-chars`); the JSON or SARIF output has them "
            "all.*"
        )

    return "\n".join(fit_rows(head, rows, limit, left_out)) + "\n"


def fit_rows(
    head: list[str], rows: list[str], limit: int, left_out: Callable[[int, int], str]
) -> list[str]:
    """`head` and as many of `rows` (table rows, most important first) as fit with it under
    `limit` characters; when some do not, a closing line `left_out(rest, total)` says how
    many. For Markdown that GitHub shows (comments, pull request bodies: 65,536 at most)."""
    size = len("\n".join(head))
    kept = 0
    for row in rows:
        # Room for this row and for the closing line, should one follow.
        if size + 1 + len(row) + _CLOSING_ROOM > limit:
            break
        size += 1 + len(row)
        kept += 1
    lines = [*head, *rows[:kept]]
    if kept < len(rows):
        lines += ["", left_out(len(rows) - kept, len(rows))]
    return lines


def render_github(report: DiffReport, fail_on: Threshold, options: RenderOptions) -> str:
    """GitHub Actions workflow commands: a summary annotation, a warning about the inputs
    when there is one, and the `options.annotations` changes that matter most, each at the
    revision's file (relative to the working directory) and line."""
    lines = []
    shown = [c for c in ordered(report.changes) if not c.ignored]
    locate = Locator(report)
    for warning in report.warnings:
        lines.append(
            f"::warning title={_prop('driftgate: ' + warning['code'])}::{_data(warning['message'])}"
        )
    if shown:
        worst = _GITHUB_LEVEL[shown[0].severity] if report.reaches(fail_on) else "notice"
        listed = min(len(shown), options.annotations)
        message = _summary(report)
        if report.totals is not None and _totals_differ(report):
            operations, places = report.totals["operations"], report.totals["places"]
            message += (
                f" Counted per operation they are {sum(operations.values()):,}, per place "
                f"{sum(places.values()):,} (what --flat lists)."
            )
        message += (
            f" Annotated: the {listed:,} that matter most of {len(shown):,}; the JSON or SARIF "
            f"output has them all. Gate (--fail-on {fail_on}): "
            f"{'fails' if report.reaches(fail_on) else 'passes'}."
        )
        lines.append(f"::{worst} title={_prop('driftgate: ' + _summary(report))}::{_data(message)}")
    for change in shown[: options.annotations]:
        head = headline(change)
        place = locate(change)
        title = f"{change.severity.value}: {head.subject} ({change.rule})"
        message = head.what
        if head.is_cause:
            message += f" ({head.reaches}: {examples(change, 3)})"
        if place.old is not None:
            message += f". Was at {place.old}"
        message += f".\nHint: {hint_for(change)}"
        lines.append(
            f"::{_GITHUB_LEVEL[change.severity]} {place.properties()}title={_prop(title)}"
            f"::{_data(message)}"
        )
    lines.append(f"driftgate: {_summary(report)}")
    return "\n".join(lines) + "\n"


def render_sarif(report: DiffReport, fail_on: Threshold, options: RenderOptions) -> str:
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
    locate = Locator(report)
    results = []
    for change in ordered(report.changes):
        head = headline(change)
        place = locate(change)
        text = f"{head.subject}: {head.what}"
        if head.is_cause or head.reach > 1:
            text += f" ({head.reaches}: {examples(change, 3)})"
        result: dict[str, Any] = {
            "ruleId": change.rule,
            "ruleIndex": index[change.rule],
            "level": _SARIF_LEVEL[change.severity],
            "message": {"text": text},
            "locations": [
                {
                    "physicalLocation": place.sarif(),
                    "logicalLocations": [
                        {"fullyQualifiedName": where(change) or change.path, "kind": "member"}
                    ],
                }
            ],
            "partialFingerprints": {"driftgate/v1": _fingerprint(change)},
            "properties": {
                "severity": change.severity.value,
                "path": change.path,
                "agentAction": change.agentAction,
            },
        }
        if change.origin is not None:
            result["properties"]["origin"] = change.origin
        if change.affected is not None:
            result["properties"]["affectedCount"] = len(change.affected)
            result["properties"]["placeCount"] = places_of(change)
        if place.old_sarif is not None:
            result["relatedLocations"] = [
                {"id": 1, "physicalLocation": place.old_sarif, "message": {"text": "before"}}
            ]
        if change.ignored:
            result["suppressions"] = [{"kind": "external", "justification": _why(change)}]
        results.append(result)
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "driftgate",
                "version": __version__,
                "rules": rules,
            }
        },
        "artifacts": [{"location": _artifact(report.revision, report.revision_source)}],
        "results": results,
        "properties": {
            "base": report.base,
            "revision": report.revision,
            "counts": report.counts,
            "totals": report.totals,
            "warnings": report.warnings,
        },
    }
    if report.warnings:
        run["invocations"] = [
            {
                "executionSuccessful": True,
                "toolExecutionNotifications": [
                    {
                        "level": "warning",
                        "descriptor": {"id": warning["code"]},
                        "message": {"text": warning["message"]},
                    }
                    for warning in report.warnings
                ],
            }
        ]
    log = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return _dump(log, len(report.changes))


def render_junit(report: DiffReport, fail_on: Threshold, options: RenderOptions) -> str:
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
            ET.SubElement(case, "skipped", message=_why(change) or "ignored")
        elif floor is not None and change.severity.rank >= floor:
            failures += 1
            head = headline(change)
            failure = ET.SubElement(
                case, "failure", message=f"{head.subject}: {head.what}", type=change.severity.value
            )
            failure.text = (
                f"{change.summary}\nrule: {change.rule}\nagentAction: {change.agentAction}"
            )
    if not changes:
        ET.SubElement(suite, "testcase", classname=report.contract_type, name="no contract changes")
    if report.warnings:
        err = ET.SubElement(suite, "system-err")
        err.text = "\n".join(f"WARNING: {w['message']}" for w in report.warnings)
    suite.set("failures", str(failures))
    suite.set("skipped", str(skipped))
    suite.set("errors", "0")
    root = ET.Element(
        "testsuites", name="driftgate", tests=suite.get("tests", "0"), failures=str(failures)
    )
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


# -- where a change is in the files ------------------------------------------------------------


@dataclass(frozen=True)
class Place:
    """A change's place in the files: the revision's file and line (the changed node, or the
    nearest parent it still has), and for a node gone from the revision, the base's."""

    uri: str | None  # relative path, or a URL; None when unknown
    is_url: bool
    line: int | None
    old_file: str | None = None
    old_line: int | None = None

    @property
    def old(self) -> str | None:
        """`base.yaml:12`: where a removed node was."""
        if self.old_file is None or self.old_line is None:
            return None
        return f"{self.old_file}:{self.old_line}"

    def properties(self) -> str:
        """The `file=...,line=...,` of a workflow command (nothing for a URL)."""
        if self.uri is None or self.is_url:
            return ""
        line = f"line={self.line}," if self.line is not None else ""
        return f"file={_prop(self.uri)},{line}"

    def sarif(self) -> dict[str, Any]:
        location: dict[str, Any] = {"artifactLocation": _sarif_uri(self.uri or "", self.is_url)}
        if self.line is not None:
            location["region"] = {"startLine": self.line}
        return location

    @property
    def old_sarif(self) -> dict[str, Any] | None:
        if self.old_file is None or self.old_line is None:
            return None
        return {
            "artifactLocation": _sarif_uri(self.old_file, False),
            "region": {"startLine": self.old_line},
        }


class Locator:
    """Places of changes, with line indexes of the two texts built on first use (only the
    formats that annotate ask, and only for the changes they show)."""

    def __init__(self, report: DiffReport) -> None:
        self.report = report
        self._indexes: dict[str, LineIndex | None] = {}

    def __call__(self, change: Change) -> Place:
        report = self.report
        revision = report.revision_source
        is_url = report.revision.startswith(("http://", "https://"))
        uri = report.revision if is_url else (revision.file if revision else report.revision)
        pointer = _pointer_of(change)
        found = self._locate("revision", revision, pointer)
        if found is None or found.exact:
            return Place(uri, is_url, found.line if found else None)
        old = self._locate("base", report.base_source, pointer)
        base_file = report.base_source.file if report.base_source else None
        if old is not None and old.exact and base_file is not None:
            return Place(uri, is_url, found.line, base_file, old.line)
        return Place(uri, is_url, found.line)

    def _locate(self, side: str, source: Source | None, pointer: str) -> Position | None:
        if source is None or source.text is None:
            return None
        if side not in self._indexes:
            self._indexes[side] = LineIndex(source.text)
        index = self._indexes[side]
        return index.locate(pointer) if index is not None else None


def _pointer_of(change: Change) -> str:
    """The node a change is about: the schema place of a cause (in the revision itself),
    else the change's own path."""
    if change.origin is not None and change.origin.startswith("#"):
        return change.origin
    return change.path


def _fingerprint(change: Change) -> str:
    """What identifies a result from one run to the next: a grouped cause by its schema place
    (the operation it is first met through changes as operations come and go), any other
    change by its operation and path."""
    if change.affected is not None and change.origin is not None:
        return f"{change.rule}:{change.origin}"
    return f"{change.rule}:{where(change)}:{change.path}"


def _sarif_uri(uri: str, is_url: bool) -> dict[str, Any]:
    """An artifactLocation: a URL as it is, a file by its path relative to the working
    directory (`%SRCROOT%`, the checkout in CI). SARIF's `uri` is a URI reference, so a path
    is percent-encoded (a space, `%` or a non-ASCII letter in a file name)."""
    if is_url or "://" in uri:
        return {"uri": quote(uri, safe=_URL_SAFE)}
    return {"uri": quote(uri.removeprefix("./"), safe="/"), "uriBaseId": SRCROOT}


def _artifact(location: str, source: Source | None) -> dict[str, Any]:
    if location.startswith(("http://", "https://")):
        return {"uri": location}
    return _sarif_uri(source.file if source and source.file else location, False)


def _dump(document: Any, size: int) -> str:
    # Indented output goes through json's pure-Python encoder; large reports stay compact
    # so that 10^5 changes serialise in about a second instead of ten.
    indent = 2 if size <= PRETTY_LIMIT else None
    return json.dumps(document, indent=indent, default=str) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _tick(text: str) -> str:
    """Text for inside backticks in a table cell."""
    return _md(text).replace("`", "'")


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")
