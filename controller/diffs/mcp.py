"""MCP diff: what a server advertises (tools, prompts, resources, templates, server info).

A snapshot is normalised first: the corpus capture format (`mcp-surface-capture/v1`, snake
case keys) and raw JSON-RPC results (`tools`, `resourceTemplates`, `serverInfo`,
`protocolVersion`) are both accepted, lists become maps by name or URI, and missing annotation
hints take the MCP defaults (readOnlyHint false, destructiveHint true, idempotentHint false,
openWorldHint true). Tool input schemas are compared as requests, output schemas as
responses; every change carries `location.tool` where a tool is concerned.

A snapshot is a complete surface: a list the server did not finish fails the check
(`controller.sources.mcp`), so there is no "list failed" change. The `errors` field of
snapshots stored before that rule is ignored.

A snapshot a check judged carries its verdicts (`x-driftgate-verdicts`); the surface is read
without them, and a tool-lock violation that appeared is a finding of its own
(`controller.diffs.toollock`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from controller.diffs.core import changes_from_findings, compare_keys, escape_pointer, make_change
from controller.diffs.jsonschema import Finding, SchemaDiffer
from controller.diffs.poisoning import poisoning_changes
from controller.diffs.refs import Document
from controller.diffs.renames import changed_parts, pair_renames, schema_shape
from controller.diffs.rules import Direction
from controller.diffs.toollock import lock_changes
from controller.model.change import Change, Location

HINT_DEFAULTS = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}
CORE_CAPABILITIES = frozenset({"tools", "prompts", "resources"})
_SERVER_INFO_META = ("title", "description", "icons", "websiteUrl")


@dataclass
class McpSnapshot:
    """The comparable surface of one MCP server."""

    server_info: dict[str, Any] = field(default_factory=dict)
    protocol_version: str | None = None
    capabilities: dict[str, Any] | None = None
    instructions: str | None = None
    tools: dict[str, dict[str, Any]] | None = None
    prompts: dict[str, dict[str, Any]] | None = None
    resources: dict[str, dict[str, Any]] | None = None
    resource_templates: dict[str, dict[str, Any]] | None = None
    # Whether the document said anything about the server (a bare tool list does not).
    has_server: bool = True


CAPTURE_FORMAT = "mcp-surface-capture/v1"
_SERVER_KEYS = ("server_info", "serverInfo", "protocol_version", "protocolVersion", "capabilities")
# What a `tools/list` result may hold besides its tools (MCP's ListToolsResult).
_LIST_RESULT_KEYS = frozenset({"tools", "nextCursor", "_meta"})


def looks_like_mcp_snapshot(document: Any) -> bool:
    """Whether a parsed document is an MCP surface by its shape: a snapshot (driftgate's or
    the corpus capture format), a `tools/list` result (`{"tools": [...]}`, every tool with a
    `name` and an `inputSchema` object) or that result in its JSON-RPC answer."""
    doc = unwrap_json_rpc(document)
    if not isinstance(doc, dict) or "tools" not in doc:
        return False
    if doc.get("format") == CAPTURE_FORMAT or any(key in doc for key in _SERVER_KEYS):
        return True
    tools = doc["tools"]
    if not isinstance(tools, list) or not all(_is_tool(t) for t in tools):
        return False
    # An empty list is a tool list only when nothing else is in the document.
    return bool(tools) or set(doc) <= _LIST_RESULT_KEYS


def unwrap_json_rpc(document: Any) -> Any:
    """The `result` of a JSON-RPC answer (`{"jsonrpc": "2.0", "id": 1, "result": {...}}`), else
    the document itself."""
    if (
        isinstance(document, dict)
        and "jsonrpc" in document
        and isinstance(document.get("result"), dict)
    ):
        return document["result"]
    return document


def normalize_mcp_snapshot(doc: Any) -> McpSnapshot:
    """Build an `McpSnapshot` from a capture file, from raw list results or from a JSON-RPC
    answer holding one. A document without a server part (a bare tool list) has no protocol
    version or capabilities: those are compared only when both sides have them."""
    doc = unwrap_json_rpc(doc)
    if not isinstance(doc, dict):
        return McpSnapshot()

    def pick(*keys: str) -> Any:
        for key in keys:
            if key in doc:
                return doc[key]
        return None

    info = pick("server_info", "serverInfo")
    has_server = any(key in doc for key in (*_SERVER_KEYS, "instructions"))
    caps = pick("capabilities")
    return McpSnapshot(
        server_info=info if isinstance(info, dict) else {},
        protocol_version=pick("protocol_version", "protocolVersion"),
        capabilities=caps if isinstance(caps, dict) else None,
        instructions=pick("instructions"),
        tools=_by_key(pick("tools"), "name"),
        prompts=_by_key(pick("prompts"), "name"),
        resources=_by_key(pick("resources"), "uri"),
        resource_templates=_by_key(pick("resource_templates", "resourceTemplates"), "uriTemplate"),
        has_server=has_server,
    )


def diff_mcp(base: Any, revision: Any) -> list[Change]:
    """Return the classified changes between two MCP snapshots (dicts or `McpSnapshot`s)."""
    b = base if isinstance(base, McpSnapshot) else normalize_mcp_snapshot(base)
    r = revision if isinstance(revision, McpSnapshot) else normalize_mcp_snapshot(revision)
    out: list[Change] = []
    _server(b, r, out)
    _capabilities(b, r, out)
    _tools(b, r, out)
    _prompts(b, r, out)
    _resources(b, r, out)
    # The verdicts a check attached (`controller.diffs.toollock`): only a lock violation that
    # appeared is a finding; the verdicts are no part of the surface otherwise.
    out += lock_changes(base, revision)
    return out


def _is_tool(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and isinstance(item.get("name"), str)
        and isinstance(item.get("inputSchema"), dict)
    )


def _by_key(items: Any, key: str) -> dict[str, dict[str, Any]] | None:
    if items is None:
        return None
    if isinstance(items, dict) and isinstance(items.get(key + "s"), list):
        items = items[key + "s"]
    if not isinstance(items, list):
        return None
    return {str(i.get(key)): i for i in items if isinstance(i, dict)}


def _server(b: McpSnapshot, r: McpSnapshot, out: list[Change]) -> None:
    if not (b.has_server and r.has_server):
        return  # a bare tool list says nothing of the server: nothing to compare it with
    bname, rname = b.server_info.get("name"), r.server_info.get("name")
    if bname != rname:
        out.append(
            make_change("server-name-changed", "/server_info/name", before=bname, after=rname)
        )
    bver, rver = b.server_info.get("version"), r.server_info.get("version")
    if bver != rver:
        out.append(
            make_change("server-version-changed", "/server_info/version", before=bver, after=rver)
        )
    if any(b.server_info.get(k) != r.server_info.get(k) for k in _SERVER_INFO_META):
        out.append(make_change("server-info-metadata-changed", "/server_info"))
    # A snapshot stored without its protocol version is no evidence of a change.
    if None not in (b.protocol_version, r.protocol_version) and (
        b.protocol_version != r.protocol_version
    ):
        out.append(
            make_change(
                _protocol_rule(b.protocol_version, r.protocol_version),
                "/protocol_version",
                before=b.protocol_version,
                after=r.protocol_version,
            )
        )
    if (b.instructions or "") != (r.instructions or ""):
        out.append(make_change("instructions-changed", "/instructions"))
        if isinstance(r.instructions, str):
            out += poisoning_changes(
                "server-instructions-poisoning-suspected",
                "",
                {"instructions": b.instructions} if b.instructions else None,
                {"instructions": r.instructions},
                name=str(r.server_info.get("name") or ""),
                own_tools=set(r.tools or ()),
            )


def _capabilities(b: McpSnapshot, r: McpSnapshot, out: list[Change]) -> None:
    if b.capabilities is None or r.capabilities is None:
        return
    for presence, name in compare_keys(b.capabilities, r.capabilities):
        ptr = f"/capabilities/{escape_pointer(name)}"
        if presence == "removed":
            rule = "capability-removed" if name in CORE_CAPABILITIES else "capability-removed-minor"
            out.append(make_change(rule, ptr, name=name))
        elif presence == "added":
            out.append(make_change("capability-added", ptr, name=name))
        elif b.capabilities[name] != r.capabilities[name]:
            _capability_flags(name, b.capabilities[name], r.capabilities[name], ptr, out)


def _protocol_rule(before: Any, after: Any) -> str:
    """An older protocol version than before is a downgrade (MCP versions are dates, so they
    order as strings): what the newer revisions added may be gone."""
    older = isinstance(before, str) and isinstance(after, str) and after < before
    return "protocol-version-downgraded" if older else "protocol-version-changed"


def _capability_flags(name: str, before: Any, after: Any, ptr: str, out: list[Change]) -> None:
    """A sub-flag turned off (`tools.listChanged`, `resources.subscribe`) is a warning each;
    any other change of the capability's object is one informational change."""
    bflags, aflags = _flags(before), _flags(after)
    removed = [flag for flag, value in bflags.items() if value and not aflags.get(flag)]
    for flag in removed:
        out.append(
            make_change(
                "capability-flag-removed",
                f"{ptr}/{'/'.join(escape_pointer(step) for step in flag.split('.'))}",
                name=f"{name}.{flag}",
                before=bflags[flag],
                after=aflags.get(flag),
            )
        )
    rest_b = {k: v for k, v in bflags.items() if k not in removed}
    rest_a = {k: v for k, v in aflags.items() if k not in removed}
    if rest_b != rest_a or not removed:
        out.append(
            make_change("capability-flags-changed", ptr, name=name, before=before, after=after)
        )


def _flags(value: Any, prefix: str = "") -> dict[str, Any]:
    """A capability's object as dotted flag paths (`listChanged`, `requests.tools.call`); an
    empty object stands for "present" (`{}` is how MCP spells a flag without options)."""
    if not isinstance(value, dict):
        return {prefix: value} if prefix else {}
    if not value:
        return {prefix: True} if prefix else {}
    out: dict[str, Any] = {}
    for key, item in value.items():
        out.update(_flags(item, f"{prefix}.{key}" if prefix else str(key)))
    return out


def _tools(b: McpSnapshot, r: McpSnapshot, out: list[Change]) -> None:
    btools = b.tools or {}
    rtools = r.tools if r.tools is not None else ({} if _capability_gone(b, r, "tools") else None)
    if rtools is None:
        return  # tools not listed this time (not advertised or failed): not drift by itself
    keys = list(compare_keys(btools, rtools, kept_last=True))
    renamed = dict(
        pair_renames(
            {n: btools[n] for p, n in keys if p == "removed"},
            {n: rtools[n] for p, n in keys if p == "added"},
            _tool_contract,
        )
    )
    old_names = {new: old for old, new in renamed.items()}
    for presence, name in keys:
        if name in renamed and presence == "removed":
            out.append(_renamed(name, btools[name], renamed[name], rtools[renamed[name]]))
        elif presence == "added" and name in old_names:
            pass  # reported with its old name; its texts are scanned below like any tool's
        elif presence != "kept":
            loc = Location(tool=name)
            out.append(make_change(f"tool-{presence}", _tool_ptr(name), location=loc, name=name))
        elif btools[name] != rtools[name]:
            _tool(name, btools[name], rtools[name], out)
        # A renamed tool's texts are judged against its old self: a text it had is not news.
        before = btools.get(name, btools.get(old_names.get(name, "")))
        if presence != "removed" and before != rtools[name]:
            out += poisoning_changes(
                "tool-poisoning-suspected",
                _tool_ptr(name),
                before,
                rtools[name],
                name=name,
                location=Location(tool=name),
                own_tools=set(rtools),
            )


# The parts of a renamed tool the rename finding names when they changed too.
_TOOL_PARTS = {
    "description": "description",
    "inputSchema": "input schema",
    "outputSchema": "output schema",
    "annotations": "annotations",
}


def _tool_contract(tool: Mapping[str, Any]) -> Any:
    """What two tools must share to be paired by content: the input schema's shape."""
    return schema_shape(tool.get("inputSchema"))


def _renamed(old: str, before: dict[str, Any], new: str, after: dict[str, Any]) -> Change:
    """One finding for a tool renamed: breaking for callers by the old name (`location.tool`),
    with the new name and what else changed (`controller.diffs.renames`)."""
    return make_change(
        "tool-renamed",
        _tool_ptr(old),
        location=Location(tool=old),
        name=old,
        before=old,
        after=new,
        detail=changed_parts(before, after, _TOOL_PARTS),
    )


def _capability_gone(b: McpSnapshot, r: McpSnapshot, cap: str) -> bool:
    return bool(b.capabilities and cap in b.capabilities) and bool(
        r.capabilities is not None and cap not in r.capabilities
    )


def _tool(name: str, bt: dict[str, Any], rt: dict[str, Any], out: list[Change]) -> None:
    loc = Location(tool=name)
    ptr = _tool_ptr(name)
    if (bt.get("description") or "") != (rt.get("description") or ""):
        out.append(
            make_change(
                "tool-description-changed",
                ptr + "/description",
                location=loc,
                name=name,
                before=bt.get("description"),
                after=rt.get("description"),
            )
        )
    if bt.get("title") != rt.get("title"):
        out.append(make_change("tool-title-changed", ptr + "/title", location=loc, name=name))
    _annotations(name, bt.get("annotations"), rt.get("annotations"), loc, ptr, out)
    if bt.get("execution") != rt.get("execution"):
        out.append(
            make_change("tool-execution-changed", ptr + "/execution", location=loc, name=name)
        )
    if bt.get("_meta") != rt.get("_meta") or bt.get("icons") != rt.get("icons"):
        out.append(make_change("tool-metadata-changed", ptr, location=loc, name=name))
    diff_io_schemas(bt, rt, location=loc, pointer=ptr, label=f"tool {name}", out=out)


@dataclass(frozen=True)
class SchemaRules:
    """The rule ids of the schema changes of a callable unit that are not schema families: an
    MCP tool's (the default) or an A2A skill's (`controller.diffs.a2a`)."""

    dialect_changed: str = "tool-schema-dialect-changed"
    input_invalid: str = "tool-input-schema-invalid"
    output_added: str = "tool-output-schema-added"
    output_removed: str = "tool-output-schema-removed"


TOOL_SCHEMA_RULES = SchemaRules()


def diff_io_schemas(
    before: dict[str, Any],
    after: dict[str, Any],
    *,
    location: Location,
    pointer: str,
    label: str,
    out: list[Change],
    rules: SchemaRules = TOOL_SCHEMA_RULES,
) -> None:
    """Diff the `inputSchema` (a request: data the caller sends) and `outputSchema` (a
    response) of one callable unit, an MCP tool or an A2A skill, into `out`. Schema findings
    take the `tool-input-...` / `tool-output-...` rule ids either way; `label` (`tool search`,
    `skill refund`) names the unit in their summaries."""
    name = location.tool
    loc, ptr = location, pointer
    bin_, rin = before.get("inputSchema"), after.get("inputSchema")
    if isinstance(bin_, dict) and isinstance(rin, dict):
        if bin_.get("$schema") != rin.get("$schema"):
            out.append(
                make_change(
                    rules.dialect_changed,
                    ptr + "/inputSchema/$schema",
                    location=loc,
                    name=name,
                    before=bin_.get("$schema"),
                    after=rin.get("$schema"),
                )
            )
        invalid = bin_.get("type") == "object" and rin.get("type") != "object"
        if invalid:
            out.append(
                make_change(rules.input_invalid, ptr + "/inputSchema", location=loc, name=name)
            )
        differ = SchemaDiffer(
            Document(bin_),
            Document(rin),
            Direction.REQUEST,
            report_descriptions=True,
            closed_schema_breaking=False,
        )
        findings = differ.diff(bin_, rin)
        if invalid:
            findings = [f for f in findings if f.path]
        out += _schema_changes(findings, "input", loc, ptr, label)
    bout, rout = before.get("outputSchema"), after.get("outputSchema")
    if bout is None and rout is not None:
        out.append(make_change(rules.output_added, ptr + "/outputSchema", location=loc, name=name))
    elif bout is not None and rout is None:
        out.append(
            make_change(rules.output_removed, ptr + "/outputSchema", location=loc, name=name)
        )
    elif isinstance(bout, dict) and isinstance(rout, dict) and bout != rout:
        differ = SchemaDiffer(Document(bout), Document(rout), Direction.RESPONSE)
        out += _schema_changes(differ.diff(bout, rout), "output", loc, ptr, label)


def _schema_changes(
    findings: list[Finding], side: Literal["input", "output"], loc: Location, ptr: str, label: str
) -> list[Change]:
    """The changes of a unit's `inputSchema` (a request) or `outputSchema` (a response)."""
    return changes_from_findings(
        findings,
        direction=Direction.REQUEST if side == "input" else Direction.RESPONSE,
        root_prefix=f"tool-{side}",
        nested_prefix=f"tool-{side}-property",
        pointer=f"{ptr}/{side}Schema",
        location=loc,
        label=f"{label} {side}",
    )


def _annotations(
    name: str, before: Any, after: Any, loc: Location, ptr: str, out: list[Change]
) -> None:
    b = before if isinstance(before, dict) else {}
    a = after if isinstance(after, dict) else {}
    if b == a:
        return

    def hint(d: dict[str, Any], key: str) -> bool:
        value = d.get(key, HINT_DEFAULTS[key])
        return bool(value) if isinstance(value, bool) else HINT_DEFAULTS[key]

    riskier: list[str] = []
    if hint(b, "readOnlyHint") and not hint(a, "readOnlyHint"):
        riskier.append("readOnlyHint turned false")
    if (
        not hint(b, "destructiveHint")
        and hint(a, "destructiveHint")
        and not hint(a, "readOnlyHint")
    ):
        riskier.append("destructiveHint turned true")
    if not hint(b, "openWorldHint") and hint(a, "openWorldHint"):
        riskier.append("openWorldHint turned true")
    rule = "tool-annotation-risk-increased" if riskier else "tool-annotations-changed"
    out.append(
        make_change(
            rule,
            ptr + "/annotations",
            location=loc,
            name=name,
            before=before,
            after=after,
            detail=", ".join(riskier),
        )
    )


def _prompts(b: McpSnapshot, r: McpSnapshot, out: list[Change]) -> None:
    bp = b.prompts or {}
    rp = r.prompts if r.prompts is not None else ({} if _capability_gone(b, r, "prompts") else None)
    if rp is None:
        return
    own_tools = set(r.tools or ())
    for presence, name in compare_keys(bp, rp):
        ptr = f"/prompts/{escape_pointer(name)}"
        if presence != "removed" and bp.get(name) != rp[name]:
            out += poisoning_changes(
                "prompt-poisoning-suspected",
                ptr,
                bp.get(name),
                rp[name],
                name=name,
                own_tools=own_tools,
            )
        if presence != "kept":
            out.append(make_change(f"prompt-{presence}", ptr, name=name))
            continue
        if (bp[name].get("description") or "") != (rp[name].get("description") or ""):
            out.append(make_change("prompt-description-changed", ptr + "/description", name=name))
        _arguments(
            name, ptr, _by_name(bp[name].get("arguments")), _by_name(rp[name].get("arguments")), out
        )


def _arguments(
    name: str, ptr: str, bargs: dict[str, Any], rargs: dict[str, Any], out: list[Change]
) -> None:
    for presence, arg in compare_keys(bargs, rargs):
        if presence == "removed":
            rule = "prompt-argument-removed"
        elif presence == "added":
            rule = (
                "prompt-argument-added-required"
                if rargs[arg].get("required")
                else "prompt-argument-added-optional"
            )
        elif not bargs[arg].get("required") and rargs[arg].get("required"):
            rule = "prompt-argument-became-required"
        elif bargs[arg].get("required") and not rargs[arg].get("required"):
            rule = "prompt-argument-became-optional"
        else:
            continue
        out.append(make_change(rule, ptr, name=name, detail=arg))


def _by_name(arguments: Any) -> dict[str, Any]:
    return {str(a.get("name")): a for a in arguments or [] if isinstance(a, dict)}


# A resource kind's snapshot field (also its pointer's first step), its rules' stem and the
# rule of a changed entry.
_RESOURCE_KINDS = (
    ("resource_templates", "resource-template", "resource-template-changed"),
    ("resources", "resource", "resource-metadata-changed"),
)


def _resources(b: McpSnapshot, r: McpSnapshot, out: list[Change]) -> None:
    gone = _capability_gone(b, r, "resources")
    for field_name, stem, changed in _RESOURCE_KINDS:
        before: dict[str, Any] = getattr(b, field_name) or {}
        after: dict[str, Any] | None = getattr(r, field_name)
        if after is None:
            if not gone:
                continue
            after = {}
        for presence, uri in compare_keys(before, after):
            ptr = f"/{field_name}/{escape_pointer(uri)}"
            if presence != "kept":
                out.append(make_change(f"{stem}-{presence}", ptr, name=uri))
            elif before[uri] != after[uri]:
                out.append(make_change(changed, ptr, name=uri))
            if presence != "removed" and before.get(uri) != after[uri]:
                out += poisoning_changes(
                    "resource-poisoning-suspected",
                    ptr,
                    before.get(uri),
                    after[uri],
                    name=uri,
                    own_tools=set(r.tools or ()),
                )


def _tool_ptr(name: str) -> str:
    return f"/tools/{escape_pointer(name)}"
