"""Conformance runner: driftgate's engines against the OpenAPI (oasdiff), MCP and peers' corpora.

Usage: python bench/conformance.py [--corpus DIR] [--verbose] [--smoke]

`--corpus` (or `DRIFTGATE_CONFORMANCE`) names the directory holding `openapi/` and `mcp/`; the
default is `../shared/conformance` beside the clone. docs/performance.md names where the
corpora come from (oasdiff's test data at a fixed commit, MCP servers' npm packages).

Prints the agreement per corpus and every disagreement. Documented intentional differences
(docs/decisions.md, "Diff engines") are counted separately, never as agreement. The peers'
corpus (`peers/`: other diff tools' test suites, each case with the peer's asserted verdict
and a reviewer's `judged` one) is scored as its own `run.py` scores a checkout, in process;
each departure is listed in `PEER_DIFFERENCES` (docs/peer-conformance.md).
It reads files; the engines it calls do not. `--smoke` runs a corpus of one case per part
that it builds from contracts the repository holds (`smoke_corpus`), unless given `--corpus`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import smoke  # noqa: E402
from controller.diffs.loader import load_document  # noqa: E402
from controller.diffs.mcp import diff_mcp  # noqa: E402
from controller.diffs.openapi import DiffOptions, diff_openapi, normalize_path  # noqa: E402
from controller.model.change import Change  # noqa: E402

DEFAULT_CORPUS = Path(
    os.environ.get("DRIFTGATE_CONFORMANCE") or ROOT.parent / "shared" / "conformance"
)
LEVEL_RANK = {"INFO": 1, "WARN": 2, "ERR": 3}
SEVERITY_RANK = {"info": 1, "warning": 2, "breaking": 3}

# oasdiff rule -> why driftgate's severity differs on purpose (docs/decisions.md).
INTENTIONAL = {
    "api-removed-with-deprecation": "deprecated operation removed is a warning (CONTRACT.md)",
    "api-path-removed-with-deprecation": "deprecated operation removed is a warning (CONTRACT.md)",
    "request-property-pattern-added": "a new pattern is a new constraint: warning (CONTRACT.md)",
    "request-parameter-pattern-added": "a new pattern is a new constraint: warning (CONTRACT.md)",
    "api-security-scope-added": "a newly required OAuth scope rejects existing tokens",
    # Issue 41: judged by what a client sees fail; no request is refused by a new default.
    "request-parameter-default-value-changed": "a changed default refuses no request: warning",
    "request-parameter-default-value-added": "a new default refuses no request: warning",
    "request-parameter-default-value-removed": "a dropped default refuses no request: warning",
    "request-property-removed": "removed from a closed schema is breaking (CONTRACT.md)",
    # Issue 32: the peers' suites and a reading by who sends and who reads.
    "api-security-removed": "a security alternative removed refuses the clients that use it",
    "request-body-discriminator-property-name-changed": "(de)serialisers dispatch on the tag",
    "request-property-discriminator-property-name-changed": "(de)serialisers dispatch on the tag",
    "response-body-discriminator-property-name-changed": "(de)serialisers dispatch on the tag",
    "response-property-discriminator-property-name-changed": "(de)serialisers dispatch on the tag",
    "response-required-property-became-write-only": "readers stop receiving the field",
    "response-optional-property-became-write-only": "readers stop receiving the field",
    "request-required-property-became-read-only": "writers may be refused for sending it",
    "request-optional-property-became-read-only": "writers may be refused for sending it",
    "request-required-property-became-not-read-only": "writers must send it now (required)",
}

# driftgate ids that differ from oasdiff's naming.
_RENAMES = {
    "request-property-added-required": "new-required-request-property",
    "request-property-added-required-with-default": "new-required-request-property-with-default",
    "request-property-added-optional": "new-optional-request-property",
    "request-property-removed-closed-schema": "request-property-removed",
    "response-property-removed-required": "response-required-property-removed",
    "response-property-removed": "response-optional-property-removed",
    "response-property-added-required": "response-required-property-added",
    "response-property-added-optional": "response-optional-property-added",
    "response-body-enum-value-removed": "response-mediatype-enum-value-removed",
    "request-parameter-added-required": "new-required-request-parameter",
    "request-parameter-added-optional": "new-optional-request-parameter",
    "request-parameter-removed-deprecated": "request-parameter-removed-with-deprecation",
    "request-parameter-sunset-invalid": "request-parameter-sunset-parse",
    "request-parameter-sunset-moved-earlier": "request-parameter-sunset-date-changed-too-small",
    "endpoint-sunset-deleted": "sunset-deleted",
    "endpoint-sunset-moved-earlier": "api-sunset-date-changed-too-small",
    "endpoint-stability-decreased": "api-stability-decreased",
    "endpoint-stability-increased": "api-stability-increased",
    "endpoint-stability-invalid": "api-invalid-stability-level",
    "security-requirement-added": "api-security-added",
    "security-requirement-removed": "api-security-removed",
    "security-scope-added": "api-security-scope-added",
    "security-scope-removed": "api-security-scope-removed",
    "security-scheme-added": "api-security-component-added",
    "security-scheme-removed": "api-security-component-removed",
    "security-scheme-type-changed": "api-security-component-type-changed",
    "security-scheme-oauth-url-changed": "api-security-component-oauth-url-changed",
    "security-scheme-oauth-token-url-changed": "api-security-component-oauth-token-url-changed",
    "security-scheme-oauth-scope-added": "api-security-component-oauth-scope-added",
    "security-scheme-oauth-scope-removed": "api-security-component-oauth-scope-removed",
    "response-header-removed-required": "required-response-header-removed",
    "response-header-removed-optional": "optional-response-header-removed",
    "endpoint-operation-id-changed": "api-operation-id-removed",
    "endpoint-sunset-missing": "api-deprecated-sunset-missing",
    "request-parameter-sunset-missing": "request-parameter-deprecated-sunset-missing",
    "security-alternative-added": "api-security-added",
    "security-alternative-removed": "api-security-removed",
    "response-property-became-write-only": "response-required-property-became-write-only",
    "response-property-became-write-only-optional": "response-optional-property-became-write-only",
    "response-property-became-not-write-only-optional": (
        "response-optional-property-became-not-write-only"
    ),
    "response-property-became-read-only": "response-required-property-became-read-only",
    "response-property-became-read-only-optional": "response-optional-property-became-read-only",
    "response-property-became-not-read-only": "response-required-property-became-not-read-only",
    "response-property-became-not-read-only-optional": (
        "response-optional-property-became-not-read-only"
    ),
    "request-property-became-read-only": "request-required-property-became-read-only",
    "request-property-became-read-only-optional": "request-optional-property-became-read-only",
    "request-property-became-not-read-only": "request-required-property-became-not-read-only",
    "request-property-became-not-read-only-optional": (
        "request-optional-property-became-not-read-only"
    ),
    "request-property-became-write-only": "request-required-property-became-write-only",
    "request-property-became-write-only-optional": "request-optional-property-became-write-only",
    "request-property-became-not-write-only": "request-required-property-became-not-write-only",
    "request-property-became-not-write-only-optional": (
        "request-optional-property-became-not-write-only"
    ),
}


def to_oasdiff(change: Change, revision_paths: set[str]) -> str:
    """Map one driftgate change onto the oasdiff rule id that reports the same thing."""
    rule = change.rule
    if rule in _RENAMES:
        return _RENAMES[rule]
    if rule in (
        "endpoint-removed",
        "endpoint-removed-deprecated",
        "endpoint-removed-before-sunset",
    ):
        op = (change.location.operation if change.location else "") or ""
        path = op.split(" ", 1)[1] if " " in op else ""
        whole_path = normalize_path(path) not in revision_paths
        stem = "api-path-removed" if whole_path else "api-removed"
        suffix = {
            "endpoint-removed": "without-deprecation",
            "endpoint-removed-deprecated": "with-deprecation",
            "endpoint-removed-before-sunset": "before-sunset",
        }[rule]
        return f"{stem}-{suffix}"
    if rule == "endpoint-sunset-invalid":
        return (
            "api-path-sunset-parse"
            if change.path.endswith("/x-sunset")
            else ("api-deprecated-sunset-parse")
        )
    if rule.endswith("-stability-invalid"):
        return "api-invalid-stability-level"
    if rule == "response-property-became-not-write-only":
        return "response-required-property-became-not-write-only"
    if rule.endswith("-type-specialized") and rule.startswith(("request-body", "request-property")):
        return rule.replace("-type-specialized", "-type-changed")
    if rule.startswith("request-parameter-type-specialized"):
        return "request-parameter-type-changed"
    return rule


@dataclass
class Outcome:
    case_id: str
    status: str  # agree | intentional | disagree
    problems: list[str] = field(default_factory=list)
    intentional: list[str] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)  # the rule ids the case expects


def run_openapi_case(case: dict[str, Any], corpus: Path) -> Outcome:
    base_file = corpus / "openapi" / case["base"]
    rev_file = corpus / "openapi" / case["revision"]
    out = Outcome(case["id"], "agree", rules=sorted({e["rule"] for e in case["expect"]}))
    try:
        base = load_document(base_file.read_bytes(), base_file.name, kind="openapi")
        rev = load_document(rev_file.read_bytes(), rev_file.name, kind="openapi")
        opts = case.get("options") or {}
        options = DiffOptions(
            today=dt.date.today(),
            sunset_days_stable=int(opts.get("deprecation_days_stable", 0)),
            sunset_days_beta=int(opts.get("deprecation_days_beta", 0)),
            stability_threshold=str(opts.get("stability_level", "draft")),
        )
        changes = diff_openapi(base, rev, options=options)
    except Exception as exc:  # noqa: BLE001 - a runner reports, it does not stop
        out.status = "disagree"
        out.problems.append(f"error: {type(exc).__name__}: {exc}")
        return out
    rev_paths = {normalize_path(str(p)) for p in (rev.get("paths") or {})}
    mapped = [(to_oasdiff(c, rev_paths), c) for c in changes]
    scope = case["scope"]
    if scope.get("checks") == "single":
        # The extractor lists the check's registered rules; a check may also emit rules
        # registered elsewhere (sunset parse errors), and expected rules are in view by
        # definition.
        allowed = set(scope["rules"]) | {e["rule"] for e in case["expect"]}
        mapped = [(r, c) for r, c in mapped if r in allowed]
    min_rank = LEVEL_RANK[case["min_level"]]
    visible = [(r, c) for r, c in mapped if c.severity.rank >= min_rank]

    expected_rules = set()
    for exp in case["expect"]:
        expected_rules.add(exp["rule"])
        hits = [
            c
            for r, c in mapped
            if r == exp["rule"] and _location_matches(c, exp.get("method"), exp.get("path"))
        ]
        if not hits:
            out.problems.append(f"missing {exp['rule']} ({exp['severity']})")
            continue
        if not any(c.severity.value == exp["severity"] for c in hits):
            msg = (
                f"severity {exp['rule']}: ours {hits[0].severity.value}, oasdiff {exp['severity']}"
            )
            (out.intentional if exp["rule"] in INTENTIONAL else out.problems).append(msg)
    if case["exhaustive"]:
        for rule, c in visible:
            if rule not in expected_rules:
                msg = f"extra {rule} ({c.severity.value}) at {c.path}"
                (out.intentional if rule in INTENTIONAL else out.problems).append(msg)
        count = case.get("expect_count")
        extras_ok = all(r in expected_rules or r in INTENTIONAL for r, _ in visible)
        in_expected = [1 for r, _ in visible if r in expected_rules]
        if (
            count is not None
            and len(in_expected) != count
            and extras_ok
            and count > 0
            and not out.intentional
        ):
            out.problems.append(f"count: ours {len(in_expected)}, oasdiff {count}")
    for rule in case.get("expect_absent") or []:
        for r, c in visible:
            if r == rule:
                msg = f"should be absent at {case['min_level']}+: {rule} ({c.severity.value})"
                (out.intentional if rule in INTENTIONAL else out.problems).append(msg)
    if case["expect"] and not changes:
        out.problems.append("NO CHANGE reported for a real change")
    if out.problems:
        out.status = "disagree"
    elif out.intentional:
        out.status = "intentional"
    return out


def _location_matches(change: Change, method: str | None, path: str | None) -> bool:
    if not method and not path:
        return True
    op = (change.location.operation if change.location else None) or ""
    want = f"{(method or '').upper()} {path or ''}".strip()
    return normalize_path(op.split(" ", 1)[-1]) == normalize_path(want.split(" ", 1)[-1]) and (
        not method or op.startswith(method.upper() + " ")
    )


# -- MCP ---------------------------------------------------------------------------------------

# driftgate MCP rule -> corpus rule (tool-input property rules become param rules).
_MCP_RULES = {
    "tool-input-property-removed": "param-removed",
    "tool-input-property-removed-closed-schema": "param-removed",
    "tool-input-property-added-required": "param-added-required",
    "tool-input-property-added-required-with-default": "param-added-required",
    "tool-input-property-added-optional": "param-added-optional",
    "tool-input-property-became-required": "param-became-required",
    "tool-input-property-became-required-with-default": "param-became-required",
    "tool-input-property-became-optional": "param-became-optional",
    "tool-input-property-description-changed": "param-description-changed",
    "tool-input-property-default-value-changed": "param-default-changed",
    "tool-input-property-default-value-added": "param-default-changed",
    "tool-input-property-default-value-removed": "param-default-changed",
    "tool-input-additional-properties-allowed": "additional-properties-allowed",
    "tool-input-additional-properties-forbidden": "additional-properties-forbidden",
    "tool-input-schema-invalid": "input-schema-invalid",
    "tool-annotation-risk-increased": "annotations-changed",
    "tool-annotations-changed": "annotations-changed",
    "tool-schema-dialect-changed": "schema-dialect-changed",
    "tool-output-schema-added": "output-schema-added",
    "tool-output-schema-removed": "output-schema-removed",
    "resource-template-removed": "resource-template-removed",
    "capability-removed-minor": "capability-removed",
    # The corpus keeps a rename as the removal it is for callers (its `rename_candidates`
    # are a hint); driftgate reports it once, as `tool-renamed` on the old name.
    "tool-renamed": "tool-removed",
}


def to_mcp_rule(change: Change) -> str:
    """Map one driftgate MCP change onto the corpus' rule vocabulary."""
    rule = change.rule
    if rule in _MCP_RULES:
        return _MCP_RULES[rule]
    if rule.startswith("tool-output"):
        return "output-schema-changed"
    if rule.startswith("tool-input") and ("type" in rule or "types" in rule):
        return "type-changed"
    if rule.startswith("tool-input") and "enum-value-removed" in rule:
        return "enum-values-removed"
    if rule.startswith("tool-input") and "enum-value-added" in rule:
        return "enum-values-added"
    return rule


def run_mcp_case(case: dict[str, Any], corpus: Path) -> tuple[Outcome, dict[str, int]]:
    folder = corpus / "mcp" / case["dir"]
    out = Outcome(case["id"], "agree", rules=sorted({f["rule"] for f in case["findings"]}))
    stats = {"info_expected": 0, "info_matched": 0, "renames_expected": 0, "renames_found": 0}
    try:
        before = load_document((folder / "before.json").read_bytes(), "before.json", kind="mcp")
        after = load_document((folder / "after.json").read_bytes(), "after.json", kind="mcp")
        changes = diff_mcp(before, after)
    except Exception as exc:  # noqa: BLE001 - a runner reports, it does not stop
        out.status = "disagree"
        out.problems.append(f"error: {type(exc).__name__}: {exc}")
        return out, stats
    ours = Counter()
    for c in changes:
        tool = (c.location.tool if c.location else None) or ""
        ours[(to_mcp_rule(c), tool, c.severity.value)] += 1
    worst = max((c.severity.rank for c in changes), default=0)
    names = {0: "none", 1: "info", 2: "warning", 3: "breaking"}
    if names[worst] != case["expected_max_severity"]:
        out.problems.append(
            f"max severity ours {names[worst]}, expected {case['expected_max_severity']}"
        )
    renames = {(c.before, c.after) for c in changes if c.rule == "tool-renamed"}
    hinted = case.get("expected", {}).get("rename_candidates", [])
    candidates = {(r["from"], r["to"]) for r in hinted}
    stats["renames_expected"] = len(candidates)
    stats["renames_found"] = len(renames & candidates)
    for old, new in sorted(renames - candidates, key=str):
        out.problems.append(f"rename {old} -> {new} not among the case's rename candidates")
    theirs = Counter()
    for f in case["findings"]:
        theirs[(f["rule"], f.get("tool") or "", f["severity"])] += 1
    for key in theirs:
        rule, tool, sev = key
        if sev == "info":
            stats["info_expected"] += 1
            stats["info_matched"] += 1 if key in ours else 0
            continue
        if key not in ours:
            out.problems.append(f"missing {rule} {sev} tool={tool!r}")
    for key in ours:
        rule, tool, sev = key
        if sev != "info" and key not in theirs:
            out.problems.append(f"extra {rule} {sev} tool={tool!r}")
    if case["findings"] and not changes:
        out.problems.append("NO CHANGE reported for a real change")
    if out.problems:
        out.status = "disagree"
    return out, stats


# -- the peers' corpus ------------------------------------------------------------------------

# Cases of `peers/` where driftgate departs on purpose from the peer's asserted verdict or
# from the reviewer's (`judged`): case -> why (docs/peer-conformance.md has the table).
_DOC_ONLY = "documentation only (examples, descriptions, summaries): not a contract change"
_UNREFERENCED = "the changed definition is reached by no operation: nothing a client sees"
_AZURE_SDK = "Azure's SDK-generation policy, not a wire change: reported, as info"
_NEW_CONSTRAINT = "CONTRACT.md: a new constraint where there was none is a request warning"
_NO_EFFECT = "no effect on the wire: reported as info, never breaking"
_BACKWARDS = "the peer's direction is backwards: judged by who sends and who reads"
PEER_DIFFERENCES: dict[str, str] = {
    "az-AddedPropertyInResponse": _AZURE_SDK,
    "az-OperationIdChanged": _AZURE_SDK,
    "az-OperationIdRemoved": _AZURE_SDK,
    "az-OptionalParameterAdded": _AZURE_SDK,
    "az-DefinitionRemoved": "a definition renamed with identical content and its $ref "
    "following: the same schema",
    "az-FormatChanged": _UNREFERENCED,
    "az-FormatRemoved": _UNREFERENCED,
    "az-PropertyRequiredChanged": _UNREFERENCED,
    "az-ResponseArrayFormatChanged": "collectionFormat means nothing inside a body schema: an "
    "unclassified warning, not breaking",
    "az-ResponseFormatAdded": "a media type added to produces where no operation returns a "
    "body: nothing observable",
    "az-ResponseHeaderRemoved": "an optional response header removed is a warning (readers "
    "of an optional header cope with its absence)",
    "oad-headers-responseDecreased": "an optional response header removed is a warning "
    "(readers of an optional header cope with its absence)",
    "az-ResponseSchemaChanged": "string -> integer in a text/plain response narrows what "
    "readers get (as text, digits are a string)",
    "az-ResponseTypeChanged-400id": "string -> integer in a text/plain response narrows what "
    "readers get (as text, digits are a string)",
    "oad-allofoneof-issue317": "the one-part allOf is no change; the default value added is "
    "reported (info)",
    "oad-content-oneEmptyMediaType": "a response media type without a schema gets one: "
    "readers get less than anything, not more",
    "oad-examples3-0-model_property": _DOC_ONLY,
    "oad-examples3-0-parameter_id": _DOC_ONLY,
    "oad-examples3-0-request_media-type": _DOC_ONLY,
    "oad-examples3-1-parameter_id": _DOC_ONLY,
    "oad-examples3-1-request_media-type": _DOC_ONLY,
    "oad-examples3-1-response_header": _DOC_ONLY,
    "oad-operationdiff-description": _DOC_ONLY,
    "oad-securityscheme-bearerFormatChanged": _DOC_ONLY + " (OpenAPI: bearerFormat is "
    "'primarily for documentation purposes')",
    "oad-operationdiff-summary": _DOC_ONLY,
    "oad-parameterdiff-description": _DOC_ONLY,
    "oad-header-responseExplodeChanged": _NO_EFFECT + " (explode on a primitive header)",
    "oad-parameter-explodeChanged": _NO_EFFECT + " (explode on a primitive parameter)",
    "oad-numericrange-requestExclusiveMaxSet": _NO_EFFECT + " (a boolean exclusiveMaximum "
    "without a maximum)",
    "oad-numericrange-requestExclusiveMinSet": _NO_EFFECT + " (a boolean exclusiveMinimum "
    "without a minimum)",
    "oad-schema-multipleOf-field2": _NO_EFFECT + " (multipleOf 0.01 -> 0.1 over integers)",
    "oad-schema-uniqueItems-field2": "uniqueItems set is a new constraint (warning); on an "
    "integer it does nothing, but driftgate does not judge keywords by type",
    "oad-numericrange-requestMaxAdded": _NEW_CONSTRAINT,
    "oad-numericrange-requestMinAdded": _NEW_CONSTRAINT,
    "oad-schema-pattern-patternAdded": _NEW_CONSTRAINT,
    "oad-minlength-responseMinLengthDecreasedButCompatible": _BACKWARDS,
    "oad-minlength-responseMinLengthIncreased": _BACKWARDS,
    "oad-schema-pattern-patternModified": "a changed pattern cannot be compared as languages: "
    "a request warning (here it widens)",
    "oad-schema-pattern-patternRemoved": _BACKWARDS,
    "oad-schema-requestFormatIncreased": _BACKWARDS + " (int32 -> int64 widens a request)",
    "oad-schema-responseFormatDecreased": _BACKWARDS + " (int64 -> int32 narrows a response)",
    "oad-writeonly-responseWriteOnlyRequiredDecreased": "a required writeOnly response "
    "property now returned: readers get more (a warning: it was never returned before)",
    "oad-parameters-decreased": "CONTRACT.md: an optional request parameter removed is a "
    "warning (it is ignored or refused)",
    "oad-schema-nullable-field1": "a request property that stops accepting null refuses "
    "senders that send null: breaking",
    "oad-securitydiff-pet2": "the operation now asks for another scheme while the old one "
    "still exists: clients holding the old credentials are refused",
    "optic-enums-in-response-bodies": "CONTRACT.md: an enum value added to a response is a warning",
    "optic-invalid-union-type-enum-transition-in-response": "a type list written as oneOf of "
    "its types: judged by values, each alternative is an old value except a new enum value "
    "(a warning, CONTRACT.md)",
    "optic-valid-response-union-type-transition": "an object response wrapped in oneOf with "
    "a number: readers may now get a number",
}


@dataclass
class PeerOutcome:
    case_id: str
    expected: str
    judged: str | None
    status: str  # breaking | changed | none | error
    sanity: bool
    silent: bool
    rules: list[str] = field(default_factory=list)

    @property
    def agrees(self) -> bool:
        return peer_agrees(self.expected, self.status)

    @property
    def judged_agrees(self) -> bool | None:
        if self.judged is None or self.judged == "debatable":
            return None
        return peer_agrees(self.judged, self.status)


# The corpus' scoring (its README): the statuses each verdict accepts.
_ACCEPTED = {
    "incompatible": frozenset({"breaking"}),
    "compatible": frozenset({"changed"}),
    "equal": frozenset({"none"}),
    "changed": frozenset({"breaking", "changed"}),
    "noerror": frozenset({"none", "changed"}),
    "noop": frozenset({"none", "changed"}),
    "error": frozenset({"error"}),
}


def peer_agrees(verdict: str, status: str) -> bool:
    """True when a verdict accepts driftgate's status (`breaking`, `changed`, `none`)."""
    return status in _ACCEPTED[verdict]


def run_peer_case(folder: Path) -> PeerOutcome:
    """Diff one case of the peers' corpus as `driftgate diff --flat` does."""
    meta = json.loads((folder / "expected.json").read_text(encoding="utf-8"))
    out = PeerOutcome(
        folder.name,
        meta["expected"],
        meta.get("judged"),
        "none",
        meta.get("scope") == "sanity",
        False,
    )
    try:
        base, rev = (_peer_document(folder, stem) for stem in ("old", "new"))
        changes = diff_openapi(base, rev, options=DiffOptions(today=dt.date.today()))
    except Exception:  # noqa: BLE001 - a refused input is the "error" status
        out.status = "error"
        return out
    match = meta.get("match")
    if match:
        changes = [
            c
            for c in changes
            if (
                not match.get("operation")
                or (c.location and c.location.operation) == match["operation"]
            )
            and (not match.get("any") or any(s in c.summary for s in match["any"]))
        ]
    if any(c.severity.value == "breaking" for c in changes):
        out.status = "breaking"
    elif changes:
        out.status = "changed"
    out.rules = sorted({f"{c.severity.value}:{c.rule}" for c in changes})
    material = (
        meta["judged"] not in ("equal", "noop")
        if "judged" in meta
        else meta["expected"] in ("incompatible", "compatible", "changed")
        and not (meta.get("doc_only") or meta.get("metadata_only"))
    )
    out.silent = out.status == "none" and meta["expected"] != "equal" and material
    return out


def _peer_document(folder: Path, stem: str) -> Any:
    for ext in (".yaml", ".yml", ".json"):
        path = folder / (stem + ext)
        if path.exists():
            return load_document(path.read_bytes(), path.name, kind="openapi")
    raise FileNotFoundError(folder / stem)


def run_peers(corpus: Path, verbose: bool = False) -> dict[str, Any]:
    """Score the peers' corpus: agreement with the peers and with `judged`, silent misses,
    and the departures documented in `PEER_DIFFERENCES`. Prints figures, never fails."""
    folders = sorted(p.parent for p in (corpus / "peers").glob("*/expected.json"))
    outcomes = [run_peer_case(f) for f in folders]
    main = [o for o in outcomes if not o.sanity]
    sanity = [o for o in outcomes if o.sanity]
    peer_ok = sum(o.agrees for o in main)
    scored = [o for o in main if o.judged_agrees is not None]
    judged_ok = sum(bool(o.judged_agrees) for o in scored)
    debatable = sum(o.judged == "debatable" for o in main)
    # Where the reviewer agrees with the peer: the peer accepts whatever `judged` accepts.
    both = [o for o in scored if _ACCEPTED[o.judged or ""] <= _ACCEPTED[o.expected]]
    both_ok = sum(o.agrees for o in both)
    departures = [o for o in main if not o.agrees or o.judged_agrees is False]
    undocumented = [o.case_id for o in departures if o.case_id not in PEER_DIFFERENCES]
    silent = [o.case_id for o in main if o.silent]

    def pct(x: int, y: int) -> str:
        return f"{100.0 * x / y:.1f}%" if y else "n/a"

    print(
        f"Peers' corpus: judged {judged_ok}/{len(scored)} = {pct(judged_ok, len(scored))} "
        f"({debatable} debatable left out); peers {peer_ok}/{len(main)} = "
        f"{pct(peer_ok, len(main))}; peers where judged agrees with them {both_ok}/{len(both)} "
        f"= {pct(both_ok, len(both))}; sanity {sum(o.agrees for o in sanity)}/{len(sanity)}"
    )
    print(
        f"  silent misses: {len(silent)}; departures {len(departures)}, "
        f"documented {len(departures) - len(undocumented)}"
    )
    for case_id in silent:
        print(f"  SILENT {case_id}")
    for o in departures:
        if verbose or o.case_id in undocumented:
            mark = "UNDOCUMENTED " if o.case_id in undocumented else ""
            print(
                f"  {mark}{o.case_id}: peer {o.expected}, judged {o.judged}, ours {o.status} "
                f"[{', '.join(o.rules)}]"
            )
    return {
        "judged": [judged_ok, len(scored)],
        "judged_percent": 100.0 * judged_ok / len(scored) if scored else 100.0,
        "peers": [peer_ok, len(main)],
        "peers_where_judged_agrees": [both_ok, len(both)],
        "sanity": [sum(o.agrees for o in sanity), len(sanity)],
        "silent": silent,
        "departures": [o.case_id for o in departures],
        "undocumented": undocumented,
    }


def run(corpus: Path, verbose: bool = False, peers: bool = True) -> dict[str, Any]:
    """Run the corpora (the peers' one unless `peers` is false); return the figures (also
    printed)."""
    report: dict[str, Any] = {}
    cases = json.loads((corpus / "openapi" / "cases.json").read_text())["cases"]
    outcomes = [run_openapi_case(c, corpus) for c in cases]
    report["openapi"] = _summarise("OpenAPI (oasdiff corpus)", outcomes, verbose)
    mcp_cases = json.loads((corpus / "mcp" / "cases.json").read_text())["cases"]
    results = [run_mcp_case(c, corpus) for c in mcp_cases]
    report["mcp"] = _summarise("MCP corpus", [o for o, _ in results], verbose)
    info_exp = sum(s["info_expected"] for _, s in results)
    info_hit = sum(s["info_matched"] for _, s in results)
    print(f"  MCP info-level findings matched (not scored): {info_hit}/{info_exp}")
    report["mcp"]["info_matched"] = [info_hit, info_exp]
    found = sum(s["renames_found"] for _, s in results)
    expected = sum(s["renames_expected"] for _, s in results)
    print(f"  MCP renames found (one tool-renamed each): {found}/{expected} rename candidates")
    report["mcp"]["renames"] = [found, expected]
    if not peers:
        pass
    elif (corpus / "peers").exists():
        report["peers"] = run_peers(corpus, verbose)
    else:
        print(f"Peers' corpus: not present at {corpus / 'peers'}")
    return report


def _summarise(title: str, outcomes: list[Outcome], verbose: bool) -> dict[str, Any]:
    total = len(outcomes)
    agree = sum(o.status == "agree" for o in outcomes)
    intentional = sum(o.status == "intentional" for o in outcomes)
    disagree = [o for o in outcomes if o.status == "disagree"]
    scored = total - intentional
    pct = 100.0 * agree / scored if scored else 100.0
    print(
        f"{title}: {agree}/{scored} = {pct:.1f}% agreement "
        f"({intentional} documented intentional differences, {total} cases)"
    )
    for o in disagree:
        print(f"  DISAGREE {o.case_id}: " + "; ".join(o.problems))
    if verbose:
        for o in outcomes:
            if o.status == "intentional":
                print(f"  intentional {o.case_id}: " + "; ".join(o.intentional))
    by_rule = per_rule(outcomes)
    short = {rule: f for rule, f in by_rule.items() if f["agree"] < f["scored"]}
    print(f"  rule ids expected: {len(by_rule)}; below 100%: {len(short)}")
    for rule, figures in sorted(short.items()):
        print(f"    {rule}: {figures['agree']}/{figures['scored']} cases agree")
    if verbose:
        for rule, figures in sorted(by_rule.items()):
            print(f"    {rule}: {figures['agree']}/{figures['scored']} ({figures['cases']} cases)")
    return {
        "total": total,
        "agree": agree,
        "intentional": intentional,
        "scored": scored,
        "percent": pct,
        "disagreements": [o.case_id for o in disagree],
        "no_change_misses": [
            o.case_id for o in disagree if any("NO CHANGE" in p for p in o.problems)
        ],
        "by_rule": by_rule,
    }


def per_rule(outcomes: list[Outcome]) -> dict[str, dict[str, int]]:
    """Agreement per expected rule id: the cases that expect it, scored (not intentional),
    and agreeing."""
    figures: dict[str, dict[str, int]] = {}
    for outcome in outcomes:
        for rule in outcome.rules:
            row = figures.setdefault(rule, {"cases": 0, "scored": 0, "agree": 0})
            row["cases"] += 1
            if outcome.status != "intentional":
                row["scored"] += 1
                row["agree"] += outcome.status == "agree"
    return figures


def smoke_corpus(root: Path) -> Path:
    """A corpus of one case per part under `root`, from contracts the repository holds: the CLI
    tests' shop API (v1 -> v2 removes `DELETE /orders/{id}`) for OpenAPI and the peers, and a
    shipped replay fixture's MCP server with one tool taken away."""
    from controller.replay.catalog import CATALOG_DIR

    shop = ROOT / "tests" / "cli" / "fixtures"
    for folder in ("openapi", "mcp/tool-removed", "peers/shop-endpoint-removed"):
        (root / folder).mkdir(parents=True)
    for version in ("v1", "v2"):
        shutil.copyfile(shop / f"shop-{version}.json", root / "openapi" / f"shop-{version}.json")
    shutil.copyfile(shop / "shop-v1.json", root / "peers/shop-endpoint-removed/old.json")
    shutil.copyfile(shop / "shop-v2.json", root / "peers/shop-endpoint-removed/new.json")
    removed = {
        "rule": "api-removed-without-deprecation",
        "level": "ERR",
        "severity": "breaking",
        "method": "DELETE",
        "path": "/orders/{id}",
    }
    case = {
        "id": "shop-endpoint-removed",
        "base": "shop-v1.json",
        "revision": "shop-v2.json",
        "expect": [removed],
        "exhaustive": False,
        "min_level": "INFO",
        "scope": {},
    }
    _write_json(root / "openapi" / "cases.json", {"cases": [case]})
    fixture = json.loads(min(CATALOG_DIR.glob("*.json")).read_text(encoding="utf-8"))
    before = json.loads(fixture["files"]["before.schema.json"])
    after = json.loads(json.dumps(before))
    tool = after["tools"].pop()["name"]
    _write_json(root / "mcp/tool-removed/before.json", before)
    _write_json(root / "mcp/tool-removed/after.json", after)
    finding = {"rule": "tool-removed", "tool": tool, "severity": "breaking"}
    mcp_case = {
        "id": "tool-removed",
        "dir": "tool-removed",
        "findings": [finding],
        "expected_max_severity": "breaking",
    }
    _write_json(root / "mcp" / "cases.json", {"cases": [mcp_case]})
    verdict = {"expected": "incompatible", "judged": "incompatible"}
    _write_json(root / "peers/shop-endpoint-removed/expected.json", verdict)
    return root


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=1), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--verbose", action="store_true")
    args = smoke.parse(parser, {"corpus": None})
    if args.corpus is None:
        args.corpus = smoke_corpus(smoke.scratch())
        print("corpus: one case per part, built from contracts the repository holds")
    run(args.corpus, args.verbose)


if __name__ == "__main__":
    main()
