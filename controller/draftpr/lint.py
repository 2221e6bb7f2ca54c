"""Tool-manifest lint: what an MCP server's tool list does that makes tools hard for an agent
to use safely. Pure: a tool list (and the one before it) in, findings out.

Each rule has a stable id, a severity (`warning` or `info`), a summary and a hint, like the
diff rules; `docs/tool-lint.md` is generated from `LINT_RULES`. A draft pull request of an
MCP watch carries the findings on the after tool list as a comment when the org has the
`toolmanifest_org` product.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

MAX_DESCRIPTION = 1024  # characters; longer descriptions crowd the model's context
DESTRUCTIVE_WORDS = re.compile(
    r"\b(delete|remove|destroy|drop|purge|wipe|erase|truncate|terminate|revoke|overwrite)\w*\b",
    re.IGNORECASE,
)
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


@dataclass(frozen=True)
class LintRule:
    id: str
    severity: str
    summary: str
    hint: str


@dataclass(frozen=True)
class LintFinding:
    rule: str
    severity: str
    tool: str
    message: str


LINT_RULES: dict[str, LintRule] = {
    rule.id: rule
    for rule in (
        LintRule(
            "tool-description-missing",
            "warning",
            "the tool has no description, or an empty one",
            "Say what the tool does and when to use it: the model picks tools by description.",
        ),
        LintRule(
            "tool-description-too-long",
            "info",
            f"the description is longer than {MAX_DESCRIPTION} characters",
            "Keep descriptions short; move details into parameter descriptions.",
        ),
        LintRule(
            "tool-description-changed",
            "warning",
            "the description changed while the name stayed",
            "Review the new text before trusting the tool: a changed description changes what "
            "the model does with it (rug-pull risk).",
        ),
        LintRule(
            "tool-input-schema-untyped",
            "warning",
            "the input schema has no `type` (or is not an object)",
            'Declare `"type": "object"` with properties, so callers know what to send.',
        ),
        LintRule(
            "tool-input-additional-properties-unset",
            "info",
            "the input schema does not say whether other properties are allowed",
            "Set `additionalProperties` (usually false) so a misspelt argument is refused, "
            "not ignored.",
        ),
        LintRule(
            "tool-destructive-hint-missing",
            "warning",
            "the tool looks destructive but does not declare `destructiveHint`",
            "Declare `annotations.destructiveHint: true` so clients can ask before calling it.",
        ),
        LintRule(
            "tool-destructive-marked-safe",
            "warning",
            "the tool looks destructive but declares itself read-only or not destructive",
            "Check the annotations: `readOnlyHint: true` or `destructiveHint: false` lets "
            "clients call it without asking.",
        ),
        LintRule(
            "tool-name-duplicate",
            "warning",
            "two tools share this name",
            "Tool names must be unique; a client calls one of them at random.",
        ),
        LintRule(
            "tool-name-invalid",
            "info",
            "the name is empty or has characters outside letters, digits, `_`, `-` and `.`",
            "Some clients refuse such names; rename the tool.",
        ),
    )
}


def _finding(rule_id: str, tool: str, message: str) -> LintFinding:
    return LintFinding(rule_id, LINT_RULES[rule_id].severity, tool, message)


def tools_of(snapshot: Any) -> list[dict[str, Any]]:
    """The raw tool list of an MCP snapshot (capture or JSON-RPC result), in order."""
    if not isinstance(snapshot, dict):
        return []
    tools = snapshot.get("tools")
    if isinstance(tools, dict):  # a map by name
        return [{"name": name, **t} for name, t in tools.items() if isinstance(t, dict)]
    return [t for t in tools or [] if isinstance(t, dict)]


def lint_tools(
    after: list[dict[str, Any]], before: list[dict[str, Any]] | None = None
) -> list[LintFinding]:
    """The findings on `after`; with `before`, descriptions that changed under the same name."""
    found: list[LintFinding] = []
    names = Counter(str(t.get("name", "")) for t in after)
    for name, count in sorted(names.items()):
        if count > 1:
            found.append(_finding("tool-name-duplicate", name, f"{count} tools are named {name!r}"))
    previous = {str(t.get("name", "")): t for t in before or []}
    for tool in after:
        name = str(tool.get("name", ""))
        found += _lint_one(name, tool)
        old = previous.get(name)
        if old is not None and (old.get("description") or "") != (tool.get("description") or ""):
            found.append(_finding("tool-description-changed", name, "the description changed"))
    return found


def _lint_one(name: str, tool: dict[str, Any]) -> list[LintFinding]:
    found: list[LintFinding] = []
    if not _NAME.match(name):
        found.append(_finding("tool-name-invalid", name, f"the name {name!r} is not portable"))
    description = tool.get("description")
    text = description.strip() if isinstance(description, str) else ""
    if not text:
        found.append(_finding("tool-description-missing", name, "no description"))
    elif len(text) > MAX_DESCRIPTION:
        found.append(_finding("tool-description-too-long", name, f"{len(text)} characters"))
    schema = tool.get("inputSchema", tool.get("input_schema"))
    if not isinstance(schema, dict) or schema.get("type") != "object":
        found.append(
            _finding("tool-input-schema-untyped", name, "the input schema is not an object")
        )
    elif "additionalProperties" not in schema:
        found.append(
            _finding(
                "tool-input-additional-properties-unset", name, "additionalProperties is not set"
            )
        )
    annotations = tool.get("annotations") if isinstance(tool.get("annotations"), dict) else {}
    assert isinstance(annotations, dict)
    title = tool.get("title") if isinstance(tool.get("title"), str) else ""
    if DESTRUCTIVE_WORDS.search(f"{name.replace('_', ' ')} {title} {text}"):
        if annotations.get("readOnlyHint") is True or annotations.get("destructiveHint") is False:
            found.append(
                _finding("tool-destructive-marked-safe", name, "its annotations say it is safe")
            )
        elif "destructiveHint" not in annotations:
            found.append(
                _finding("tool-destructive-hint-missing", name, "no destructiveHint declared")
            )
    return found


def render_comment(findings: list[LintFinding], tool_count: int) -> str:
    """The pull request comment: a table of the findings, or a line saying there are none."""
    lines = [f"### driftgate tool-manifest lint ({tool_count} tools)", ""]
    if not findings:
        lines.append("No findings.")
        return "\n".join(lines) + "\n"
    lines += ["| severity | rule | tool | finding | what to do |", "|---|---|---|---|---|"]
    for f in sorted(findings, key=lambda f: (f.severity != "warning", f.tool, f.rule)):
        hint = LINT_RULES[f.rule].hint.replace("|", "\\|")
        tool = f.tool.replace("|", "\\|") or "(unnamed)"
        lines.append(f"| {f.severity} | `{f.rule}` | `{tool}` | {f.message} | {hint} |")
    return "\n".join(lines) + "\n"


def render_rules_markdown() -> str:
    """`docs/tool-lint.md`: every lint rule with its severity, summary and hint."""
    lines = [
        "# Tool-manifest lint rules",
        "",
        "<!-- Generated by `python -m tests.gen_lint_doc` from controller/draftpr/lint.py; "
        "do not edit by hand. -->",
        "",
        "With the `toolmanifest_org` product on, a draft pull request of an MCP watch gets a "
        "comment with these findings on the tool list after the drift (see draft-prs.md). "
        "Rule ids are stable.",
        "",
        "| rule | severity | finds | what to do |",
        "|---|---|---|---|",
    ]
    for rule in LINT_RULES.values():
        lines.append(f"| `{rule.id}` | {rule.severity} | {rule.summary} | {rule.hint} |")
    return "\n".join(lines) + "\n"
