"""What a client sees fail, per breaking rule: one sentence from the client's side.

A hint says what to do; this says what breaks (the request now refused, the response value a
reader cannot take), filled from the change (its operation or tool, the property path, the old
and new value) so a person tells a real break from noise in one read (issue 41, point 5).
Every rule of severity breaking has a text here; tests/diffs/test_what_fails.py walks the
catalog so a new rule cannot forget it. Values are cut short: a schema can hold huge examples.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Mapping
from typing import Any

from controller.diffs.rules import CATALOG, Direction, Rule
from controller.model.change import Change, Severity

# Request-side texts open with {call} (`A request to POST /v1/charges`), response-side ones
# with {reader} (`A reader of GET /v1/refunds/{id} 200`); {field} is the property, parameter
# or header; {before}/{after} the old and new value (`{before:fallback words}` when absent).
_REFUSED_BOUND = (
    "{call} whose {field} is outside the new {label} {after:} (was {before:}) is now refused."
)
_WIDER_BOUND = (
    "{reader} that relies on {field} staying within {label} {before:} may now get a value "
    "beyond it ({after:no limit} now)."
)
_LOST_BOUND = (
    "{reader} that relies on {field} staying within {label} {before:} may now get any value: "
    "the limit is gone."
)


def _bounds(stem: str, label: str) -> dict[str, tuple[str, str]]:
    upper = stem.startswith(("max", "exclusive-max"))
    tighter, looser = ("decreased", "increased") if upper else ("increased", "decreased")
    return {
        f"{stem}-{tighter}": (_REFUSED_BOUND.replace("{label}", label), ""),
        f"{stem}-{looser}": ("", _WIDER_BOUND.replace("{label}", label)),
        f"{stem}-unset": ("", _LOST_BOUND.replace("{label}", label)),
    }


def _restriction(aspect: str, label: str, added_refuses: bool = True) -> dict[str, tuple[str, str]]:
    """A keyword that restricts values when present; `prefixItems` the other way round."""
    refused = f"{{call}} whose {{field}} does not satisfy the {label} now in force is now refused."
    wider = (
        f"{{reader}} that relies on {{field}} satisfying the old {label} may now get values "
        "that do not."
    )
    if added_refuses:
        return {f"{aspect}-added": (refused, ""), f"{aspect}-removed": ("", wider)}
    return {f"{aspect}-added": ("", wider), f"{aspect}-removed": (refused, "")}


_REQUIRED = "{call} that leaves out {field} is now refused: it is required."
_REQUIRED_DEFAULT = "{call} that leaves out {field} is now refused: it is required, default or not."
_SHAPE = "{reader} that expects {field} in the old shape may now get a value of another shape."
_READ_ONLY = "{call} that sends {field} may now be refused: only the server sets it."
_STABILITY = (
    "{call} that relies on {field} may fail without notice: its stability went from "
    "{before:a stable level} to {after:a lower one}."
)
_STABILITY_READ = (
    "{reader} that relies on {field} may fail without notice: its stability went from "
    "{before:a stable level} to {after:a lower one}."
)
_BAD_STABILITY = "{call} cannot trust {field}: its stability level {after:} is not valid."
_BAD_STABILITY_READ = "{reader} cannot trust {field}: its stability level {after:} is not valid."
_DEFAULT = (
    "{call} that leaves out {field} now gets other behaviour: the default went from "
    "{before!v:none} to {after!v:none}."
)

# Schema family aspect -> (what fails in a request, what fails in a response); "" on a side
# where the family is not breaking.
FAMILY_FAILS: dict[str, tuple[str, str]] = {
    "added-required": (_REQUIRED, ""),
    "added-required-with-default": (_REQUIRED_DEFAULT, ""),
    "removed-required": ("", "{reader} that expects {field} finds it missing: it no longer comes."),
    "removed-closed-schema": (
        "{call} that sends {field} is now refused: the schema forbids unknown properties.",
        "",
    ),
    "became-required": (_REQUIRED, ""),
    "undeclared-became-required": (_REQUIRED, ""),
    "not-value-added": ("{call} that sends {field} as {after:that value} is now refused.", ""),
    "not-value-removed": (
        "",
        "{reader} of {field} may now get {before:a value} the old contract excluded.",
    ),
    "range-disjoint": (
        "{call} whose {field} lies in the old range is now refused: the ranges do not meet "
        "({after:}).",
        "{reader} that relies on {field} staying in the old range gets only values outside "
        "it now ({after:}).",
    ),
    "known-value-refused": (
        "{call} that sends {field} as {before:the value the schema offered} is now refused "
        "({after:}).",
        "",
    ),
    "became-required-with-default": (_REQUIRED_DEFAULT, ""),
    "became-optional": ("", "{reader} that expects {field} on every response may find it missing."),
    "type-changed": (
        "{call} that sends {field} as {before:the old type} is now refused: it must be "
        "{after:another type}.",
        "{reader} that expects {field} as {before:the old type} now gets {after:another type}.",
    ),
    "type-generalized": (
        "",
        "{reader} that expects {field} as {before:the old type} may now get {after:a wider type}.",
    ),
    "type-specialized": (
        "{call} that sends {field} as {before:the old type} is now refused unless it is "
        "{after:the narrower type}.",
        "",
    ),
    "list-of-types-widened": (
        "",
        "{reader} that expects {field} as {before:the old types} may now get {after:other types}.",
    ),
    "list-of-types-narrowed": (
        "{call} that sends {field} as {before:one of the old types} is now refused unless it "
        "is {after:one of the remaining types}.",
        "",
    ),
    "became-nullable": ("", "{reader} that expects {field} to hold a value may now get null."),
    "became-not-nullable": ("{call} that sends {field} as null is now refused.", ""),
    # A `false` schema allows no value at all; `no-longer-false` lets values through where
    # none came before (issue 41, point 3).
    "became-false": ("{call} that sends {field} at all is now refused: it allows no value.", ""),
    "no-longer-false": ("", "{reader} that expects no {field} may now get one."),
    "format-changed": (
        "{call} that sends {field} in format {before:the old one} is now refused: it must be "
        "{after:another format}.",
        "{reader} that parses {field} as {before:the old format} now gets {after:another format}.",
    ),
    "format-widened": (
        "",
        "{reader} that holds {field} in {before:the old format} may now get values only "
        "{after:the wider format} holds.",
    ),
    "format-narrowed": (
        "{call} that sends {field} beyond {after:the narrower format} (was {before:}) is now "
        "refused.",
        "",
    ),
    "enum-value-removed": (
        "{call} that sends {field} = {before!v:the removed value} is now refused: the enum no "
        "longer has it.",
        "",
    ),
    "x-extensible-enum-value-removed": (
        "{call} that sends {field} = {before!v:the removed value} is now refused: the "
        "extensible enum no longer has it.",
        "",
    ),
    "became-enum": (
        "{call} that sends {field} outside {after!v:the new list} is now refused.",
        "",
    ),
    "const-added": (
        "{call} that sends {field} other than {after!v:the constant} is now refused.",
        "",
    ),
    "const-removed": (
        "",
        "{reader} that expects {field} = {before!v:the constant} may now get other values.",
    ),
    "const-changed": (
        "{call} that sends {field} = {before!v:the old constant} is now refused: only "
        "{after!v:the new one} is accepted.",
        "{reader} that checks {field} = {before!v:the old constant} now gets "
        "{after!v:another value}.",
    ),
    "multiple-of-changed": (
        "{call} that sends {field} as a multiple of {before:the old step} is refused unless it "
        "is a multiple of {after:the new step}.",
        "{reader} that expects {field} in steps of {before:the old step} now gets steps of "
        "{after:the new one}.",
    ),
    "multiple-of-generalized": (
        "",
        "{reader} that expects {field} in steps of {before:the old step} may now get values "
        "between them (steps of {after:}).",
    ),
    "multiple-of-specialized": (
        "{call} that sends {field} as a multiple of {before:the old step} is refused unless it "
        "is a multiple of {after:the new step}.",
        "",
    ),
    "default-value-added": (_DEFAULT, ""),
    "default-value-changed": (_DEFAULT, ""),
    "default-value-removed": (_DEFAULT, ""),
    "one-of-added": ("", "{reader} of {field} may now get the new alternative {after:}."),
    "one-of-removed": (
        "{call} that sends {field} as alternative {before:the removed one} is now refused.",
        "",
    ),
    "any-of-removed": (
        "{call} that sends {field} as alternative {before:the removed one} is now refused.",
        "",
    ),
    "all-of-added": (
        "{call} whose {field} does not satisfy the added subschema {after:} is now refused.",
        "",
    ),
    "wrapped-in-one-of-original-preserved": (
        "",
        "{reader} that expects {field} in the old shape may now get one of the other alternatives.",
    ),
    "wrapped-in-any-of": (
        "",
        "{reader} that expects {field} in the old shape may now get one of the other alternatives.",
    ),
    "restructured": ("", _SHAPE),
    "wrapped-in-one-of": (
        "{call} that sends {field} in the old shape may be refused: it is now one of several "
        "alternatives.",
        "{reader} that expects {field} in the old shape may now get another alternative.",
    ),
    "dependent-required-changed": (
        "{call} that sends {field} without its newly co-required properties is now refused.",
        "{reader} that expects the old co-required properties with {field} may find them missing.",
    ),
    "content-media-type-changed": (
        "{call} that embeds {field} as {before:the old media type} is now refused: it must be "
        "{after:another}.",
        "{reader} that decodes {field} as {before:the old media type} now gets {after:another}.",
    ),
    "content-encoding-changed": (
        "{call} that encodes {field} as {before:the old encoding} is now refused: it must be "
        "{after:another}.",
        "{reader} that decodes {field} as {before:the old encoding} now gets {after:another}.",
    ),
    "stability-decreased": (_STABILITY, _STABILITY_READ),
    "stability-invalid": (_BAD_STABILITY, _BAD_STABILITY_READ),
    "schema-stability-decreased": (_STABILITY, _STABILITY_READ),
    "schema-stability-invalid": (_BAD_STABILITY, _BAD_STABILITY_READ),
    "became-write-only": ("", "{reader} that expects {field} finds it missing: it is write-only."),
    "became-write-only-optional": (
        "",
        "{reader} that uses {field} no longer gets it: it is write-only.",
    ),
    "became-read-only": (_READ_ONLY, ""),
    "became-read-only-optional": (_READ_ONLY, ""),
    "became-not-read-only": (_REQUIRED, ""),
    "discriminator-property-name-changed": (
        "{call} that tags {field} with property {before:the old name} is now refused: the tag "
        "is {after:another property} now.",
        "{reader} that picks the type of {field} by {before:the old tag property} now finds "
        "the tag under {after:another property}.",
    ),
    "subtype-removed": (
        "{call} that sends {field} as subtype {before:the removed one} is now refused.",
        "",
    ),
    **_bounds("max", "maximum"),
    **_bounds("min", "minimum"),
    **_bounds("exclusive-max", "exclusive maximum"),
    **_bounds("exclusive-min", "exclusive minimum"),
    **_bounds("max-length", "maxLength"),
    **_bounds("min-length", "minLength"),
    **_bounds("max-items", "maxItems"),
    **_bounds("min-items", "minItems"),
    **_bounds("max-properties", "maxProperties"),
    **_bounds("min-properties", "minProperties"),
    **_bounds("max-contains", "maxContains"),
    **_bounds("min-contains", "minContains"),
    **_restriction("contains", "contains"),
    **_restriction("prefix-items", "prefixItems", added_refuses=False),
    **_restriction("unevaluated-items", "unevaluatedItems"),
    **_restriction("unevaluated-properties", "unevaluatedProperties"),
    **_restriction("dependent-required", "dependentRequired"),
    **_restriction("dependent-schema", "dependentSchemas"),
    **_restriction("pattern-property", "patternProperties"),
    **_restriction("property-names", "propertyNames"),
    **_restriction("content-schema", "contentSchema"),
    **_restriction("if", "if"),
    **_restriction("then", "then"),
    **_restriction("else", "else"),
    **_restriction("not", "not"),
}

_SUNSET = "{call} may stop working at any time: "
# Contract rule id -> what fails (contract rules have no side of their own).
RULE_FAILS: dict[str, str] = {
    "endpoint-removed": "{call} now fails: the operation no longer exists (404 or 405).",
    "endpoint-removed-before-sunset": (
        "{call} now fails: the operation was removed before its announced sunset {before:date}."
    ),
    "endpoint-sunset-missing": _SUNSET + "it is deprecated with no removal date.",
    "endpoint-sunset-deleted": _SUNSET + "its deprecation lost the removal date.",
    "endpoint-sunset-invalid": _SUNSET + "its removal date {after:} is no date.",
    "endpoint-sunset-moved-earlier": (
        "{call} stops working sooner: removal moved from {before:} to {after:}."
    ),
    "endpoint-stability-decreased": (
        "{call} may fail without notice: stability went from {before:} to {after:}."
    ),
    "endpoint-stability-invalid": (
        "{call} cannot trust the operation: stability {after:} is not valid."
    ),
    "request-parameter-sunset-missing": (
        "{call} that sends {field} may break at any time: it is deprecated with no removal date."
    ),
    "request-parameter-sunset-deleted": (
        "{call} that sends {field} may break at any time: its removal date is gone."
    ),
    "request-parameter-sunset-invalid": (
        "{call} that sends {field} may break at any time: its removal date {after:} is no date."
    ),
    "request-parameter-sunset-moved-earlier": (
        "{call} that sends {field} breaks sooner: removal moved from {before:} to {after:}."
    ),
    "request-parameter-removed-before-sunset": (
        "{call} that sends {field} may now be refused: it was removed before its sunset "
        "{before:date}."
    ),
    "request-parameter-added-required": "{call} without {field} is now refused: it is required.",
    "request-parameter-became-required": "{call} without {field} is now refused: it is required.",
    "request-parameter-style-changed": (
        "{call} that serialises {field} as {before:before} is now misread: it must be "
        "{after:serialised the new way}."
    ),
    "request-parameter-empty-value-refused": ("{call} that sends {field} empty is now refused."),
    "request-body-added-required": "{call} without a body is now refused.",
    "request-body-became-required": "{call} without a body is now refused.",
    "request-body-media-type-removed": "{call} with its body in `{name}` is now refused (415).",
    "response-media-type-removed": (
        "{call} that asks for {name} no longer gets it (406, or another media type)."
    ),
    "response-success-status-removed": (
        "{call} that expects status {name} on success no longer gets it, and may get a success "
        "status it never saw documented."
    ),
    "response-header-removed-required": (
        "{call} that reads header {name} from the response finds it missing."
    ),
    "response-header-became-optional": (
        "{call} that reads header {name} from every response may find it missing."
    ),
    "response-header-style-changed": (
        "{call} that parses header {name} as {before:before} now gets it {after:another way}."
    ),
    "security-requirement-added": (
        "{call} without credentials ({after:the new scheme}) is now refused (401)."
    ),
    "security-scope-added": (
        "{call} with a token lacking scope {after:the new scope} is now refused (403)."
    ),
    "security-alternative-removed": (
        "{call} that authenticates with {before:the removed scheme} is now refused (401)."
    ),
    "security-scheme-openid-connect-url-changed": (
        "A client that discovers {name} at {before:the old URL} gets no valid tokens: it "
        "moved to {after:a new URL}."
    ),
    "security-scheme-oauth-flow-removed": (
        "A client that gets tokens through the {name} flow can no longer get any."
    ),
    "security-scheme-type-changed": (
        "A client that authenticates with {name} as {before:before} is now refused: it is "
        "{after:another type}."
    ),
    "security-scheme-oauth-url-changed": (
        "A client that sends users to {before:the old authorization URL} gets no tokens: "
        "it is {after:a new URL} now."
    ),
    "security-scheme-oauth-token-url-changed": (
        "A client that fetches tokens at {before:the old URL} gets none: it is {after:a new "
        "URL} now."
    ),
    "global-security-requirement-added": (
        "A request without credentials ({after:the new scheme}) is now refused on every "
        "operation (401)."
    ),
    "tool-removed": "{call} now fails: the server no longer lists the tool.",
    "tool-input-schema-invalid": (
        "A strict client refuses the whole tool list: {op} has no object input schema."
    ),
    "prompt-removed": "A request for prompt `{name}` now fails: the server no longer lists it.",
    "prompt-argument-added-required": (
        "A request for prompt `{name}` without argument {after:the new one} is now refused."
    ),
    "prompt-argument-became-required": (
        "A request for prompt `{name}` without argument {after:the required one} is now refused."
    ),
    "resource-template-removed": (
        "A read of resources through template `{name}` now fails: the template is gone."
    ),
    "capability-removed": (
        "A call that uses the `{name}` capability now fails: it is not advertised."
    ),
    "skill-removed": "{call} now fails: the agent no longer has the skill.",
    "skill-input-mode-removed": (
        "{call} with {before:parts of the removed media type} is now refused."
    ),
    "skill-output-mode-removed": (
        "{call} that expects results as {before:the removed media type} no longer gets them."
    ),
    "skill-security-requirement-added": (
        "{call} without credentials ({after:the new requirement}) is now refused."
    ),
    "skill-input-schema-invalid": (
        "A caller that builds input from the schema of {op} breaks: it is no object schema."
    ),
    "agent-default-input-mode-removed": (
        "A task with {before:parts of the removed media type} is now refused by skills "
        "without modes of their own."
    ),
    "agent-default-output-mode-removed": (
        "A task that expects results as {before:the removed media type} no longer gets them "
        "from skills without modes of their own."
    ),
    "agent-security-requirement-added": (
        "A task sent without credentials ({after:the new requirement}) is now refused."
    ),
}


def template_of(rule: Rule) -> str:
    """The what-fails template of a rule ("" when it has none)."""
    if rule.direction is not None:
        pair = FAMILY_FAILS.get(rule.family, ("", ""))
        return pair[0] if rule.direction is Direction.REQUEST else pair[1]
    return RULE_FAILS.get(rule.id, "")


_MAX_VALUE = 40
_SECRETISH = re.compile(r"([?&#][^=&#]*=)[^&#]*")


def short(value: Any, quoted: bool = False) -> str:
    """`value` as inline code, cut to a short length; query values (tokens, keys) elided."""
    if isinstance(value, str) and not quoted:
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    text = _SECRETISH.sub(r"\1…", " ".join(text.split())).replace("`", "'")
    if len(text) > _MAX_VALUE:
        text = text[: _MAX_VALUE - 1] + "…"
    return f"`{text}`"


class _Filler(string.Formatter):
    """`{before:words}`: the value as code, or `words` when the change has none; `!v` keeps
    a string's quotes (an enum value, a constant)."""

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        return (value, conversion == "v")

    def format_field(self, value: Any, format_spec: str) -> str:
        raw, quoted = value if isinstance(value, tuple) else (value, False)
        if isinstance(raw, _Text):
            return str(raw)
        if raw is None:
            return format_spec or "?"
        return short(raw, quoted)


class _Text(str):
    """Context words used as they are (not a value to quote)."""


_FILLER = _Filler()


def _unescape(segment: str) -> str:
    return segment.replace("~1", "/").replace("~0", "~")


_SCHEMA_KEYS = {"schema", "inputSchema", "outputSchema"}
_SKIP_INDEXED = {"allOf", "oneOf", "anyOf"}


def context(change: Mapping[str, Any]) -> dict[str, Any]:
    """The words a template is filled with, from a change object (served or stored)."""
    segments = [_unescape(s) for s in str(change.get("path", "")).split("/")[1:]]
    location = change.get("location") or {}
    operation = location.get("operation") if isinstance(location, Mapping) else None
    tool = location.get("tool") if isinstance(location, Mapping) else None
    if not operation and len(segments) >= 3 and segments[0] == "paths":
        operation = f"{segments[2].upper()} {segments[1]}"
    status = param = header = None
    props: list[str] = []
    in_schema = False
    i = 0
    while i < len(segments):
        seg = segments[i]
        nxt = segments[i + 1] if i + 1 < len(segments) else None
        if in_schema:
            if seg in ("properties", "patternProperties") and nxt is not None:
                props.append("." + nxt if props else nxt)
                i += 1
            elif seg in ("items", "additionalItems"):
                props.append("[]")
            elif seg == "prefixItems" and nxt is not None:
                props.append(f"[{nxt}]")
                i += 1
            elif seg == "additionalProperties":
                props.append(".*" if props else "*")
            elif seg in _SKIP_INDEXED:
                i += 1
        elif seg in _SCHEMA_KEYS:
            in_schema = True
        elif seg == "responses" and nxt is not None:
            status = nxt
            i += 1
        elif seg == "parameters" and nxt is not None:
            param = nxt
            i += 1
        elif seg == "headers" and nxt is not None:
            header = nxt
            i += 1
        i += 1
    prop = "".join(props)
    if param:
        field = f"`{prop}` in parameter `{param}`" if prop else f"parameter `{param}`"
    elif header:
        field = f"`{prop}` in header `{header}`" if prop else f"header `{header}`"
    elif prop:
        field = f"`{prop}`"
    else:
        field = "the input" if tool else "the body"
    if tool:
        kind = "skill" if segments[:1] == ["skills"] else "tool"
        op = f"{kind} `{tool}`"
        call = f"A task for {op}" if kind == "skill" else f"A call to {op}"
        reader = f"A reader of {op}'s output"
    elif operation:
        op = f"`{operation}`"
        call = f"A request to {op}"
        reader = f"A reader of {op}" + (f" {status}" if status else "")
    else:
        op, call, reader = "the operation", "A request", "A reader"
    name = segments[-1] if segments else ""
    if tool and name in ("", tool) or not name:
        name = str(tool or "")
    return {
        "call": _Text(call),
        "reader": _Text(reader),
        "op": _Text(op),
        "field": _Text(field),
        "name": _Text(name.replace("`", "'")[:_MAX_VALUE]),
        "before": change.get("before"),
        "after": change.get("after"),
    }


def what_fails(change: Change | Mapping[str, Any]) -> str | None:
    """What a client sees fail for a breaking change, in one sentence; None for other
    severities and for rules this catalog does not know."""
    data = change.to_json() if isinstance(change, Change) else change
    if str(data.get("severity", "")) != Severity.BREAKING.value:
        return None
    rule = CATALOG.get(str(data.get("rule", "")))
    template = template_of(rule) if rule is not None else ""
    if not template:
        return None
    return _FILLER.vformat(template, (), context(data))
