"""The rule catalog: every kind of change driftgate reports, with its fixed classification.

Schema-level changes come in *families* (one aspect such as `max-length-decreased`) that carry
one severity per direction (request = data we send, response = data we read, CONTRACT.md) and
expand into concrete, stable rule ids by subject: `request-property-max-length-decreased`,
`response-body-max-length-decreased`, `tool-input-property-...` and so on. Contract-level
rules (operations, parameters, tools, prompts ...) are listed one by one. Rule ids are never
renamed; `docs/rules.md` is generated from this module by `render_rules_markdown`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from controller.model.change import Severity


class Direction(StrEnum):
    """Whether a schema describes data we send (request) or data we read (response)."""

    REQUEST = "request"
    RESPONSE = "response"


B, W, I = Severity.BREAKING, Severity.WARNING, Severity.INFO  # noqa: E741 - table shorthand

# Agent action tokens (CONTRACT.md); rules pick one of these.
UPDATE_CLIENT = "update_client_schema"
UPDATE_TOOL = "update_tool_schema"
REMOVE_TOOL = "remove_tool_usage"
NEW_ENUM = "handle_new_enum_value"
SEND_REQUIRED = "send_new_required_field"
REVIEW_DESCRIPTION = "review_tool_description"
ACK = "ack_incident"
ACCEPT = "accept_baseline"
CHECK_CONFIG = "check_watch_config"
AGENT_ACTIONS = (
    UPDATE_CLIENT,
    UPDATE_TOOL,
    REMOVE_TOOL,
    NEW_ENUM,
    SEND_REQUIRED,
    REVIEW_DESCRIPTION,
    ACK,
    ACCEPT,
    CHECK_CONFIG,
)
_RANK = {action: rank for rank, action in enumerate(AGENT_ACTIONS)}


def order_actions(actions: Iterable[str]) -> list[str]:
    """Agent actions without repeats, the most useful first: in `AGENT_ACTIONS` order (change
    the client before acknowledging, acknowledge before accepting a baseline), other tokens
    after them by name. Clients act on the first (`agentActions[0]`)."""
    return sorted(set(actions), key=lambda action: (_RANK.get(action, len(_RANK)), action))


@dataclass(frozen=True)
class Rule:
    """One concrete rule: a stable id, its severity, and how to explain a finding."""

    id: str
    severity: Severity
    summary: str
    agent_action: str
    hint: str
    family: str = ""
    direction: Direction | None = None


@dataclass(frozen=True)
class SchemaFamily:
    """A schema aspect classified per direction; expands into one rule per subject."""

    aspect: str
    request: Severity
    response: Severity
    summary: str
    hint: str
    action: str = UPDATE_CLIENT
    request_action: str | None = None
    # Subject-specific severities, keyed by subject prefix (e.g. "request-parameter").
    overrides: dict[str, Severity] = field(default_factory=dict)
    # Membership aspects only exist below the root of a schema (they concern a property).
    nested_only: bool = False
    # The root-level spelling of a nested-only aspect (`ROOT_ASPECTS`): only at the root.
    root_only: bool = False
    # A hint of a side's own, where `hint` does not fit it (see `HINT_WORDS`).
    request_hint: str | None = None
    response_hint: str | None = None

    def hint_for(self, direction: Direction) -> str:
        """The hint of a rule of this family on one side: the side's own, else `hint`."""
        own = self.request_hint if direction is Direction.REQUEST else self.response_hint
        return own or self.hint

    def severity_for(self, direction: Direction, prefix: str) -> Severity:
        """Return the severity of this aspect for a subject prefix in a direction."""
        if prefix in self.overrides:
            return self.overrides[prefix]
        return self.request if direction is Direction.REQUEST else self.response

    def action_for(self, direction: Direction) -> str:
        """Return the agent action token for a finding in a direction."""
        if direction is Direction.REQUEST and self.request_action:
            return self.request_action
        return self.action


# What fits a hint of each side: a request-side hint speaks of what the client sends and never
# of what it reads; a response-side hint speaks of what the client reads and never asks it to
# send anything. Checked on every rule id (tests/diffs/test_hints.py): a hint of one side uses
# none of the other side's words. Rules without a side (operations, security, MCP tools) may
# speak of both.
HINT_WORDS: dict[Direction, frozenset[str]] = {
    Direction.REQUEST: frozenset({"send", "sends", "sending", "sent", "sender", "senders", "pass"}),
    Direction.RESPONSE: frozenset(
        {
            "read",
            "reads",
            "reading",
            "reader",
            "readers",
            "receive",
            "receives",
            "received",
            "parse",
            "parsing",
            "returned",
            "handle",
        }
    ),
}


def side_of(rule_id: str, direction: Direction | None = None) -> Direction | None:
    """The side a rule concerns: its family's direction, else its id's first word
    (`request-...`, `response-...`), else None (the contract as a whole)."""
    if direction is not None:
        return direction
    if rule_id.startswith("request-"):
        return Direction.REQUEST
    if rule_id.startswith("response-"):
        return Direction.RESPONSE
    return None


def hint_misfits(hint: str, side: Direction | None) -> set[str]:
    """The words of `hint` that belong to the other side (empty when the hint fits)."""
    if side is None:
        return set()
    other = Direction.RESPONSE if side is Direction.REQUEST else Direction.REQUEST
    return set(re.findall(r"[a-z]+", hint.lower())) & HINT_WORDS[other]


# Subject prefixes per direction: (root prefix, nested prefix). The root is the schema of a
# request body, parameter, response body, header or tool input/output; nested is anything below.
SUBJECTS: dict[Direction, tuple[tuple[str, str], ...]] = {
    Direction.REQUEST: (
        ("request-body", "request-property"),
        ("request-parameter", "request-parameter-property"),
        ("tool-input", "tool-input-property"),
    ),
    Direction.RESPONSE: (
        ("response-body", "response-property"),
        ("response-header", "response-header-property"),
        ("tool-output", "tool-output-property"),
    ),
}


def _f(
    aspect: str,
    request: Severity,
    response: Severity,
    summary: str,
    hint: str,
    response_hint: str | None = None,
    **kw: object,
) -> SchemaFamily:
    """A family; `hint` serves every side without a hint of its own (`response_hint`, or
    `request_hint` among `kw`)."""
    return SchemaFamily(
        aspect,
        request,
        response,
        summary,
        hint,
        response_hint=response_hint,
        **kw,  # type: ignore[arg-type]
    )


# Bound hints per side: what the sender must do, what the reader may now get.
_TIGHTER = (
    "Send values inside the new bound.",
    "Responses stay inside the old bound; nothing to do.",
)
_LOOSER = (
    "Backward compatible; the old values are still accepted.",
    "Readers may now receive values outside the old bound; code that sizes buffers or "
    "checks ranges by it should allow the new range.",
)
_NEW_BOUND = (
    "A bound now exists where there was none; check the values you send.",
    "Responses are bounded now; nothing to do.",
)
_DROPPED_BOUND = (
    "Backward compatible; the bound no longer applies.",
    "The bound is gone; code that sizes buffers or checks ranges by it should allow any value now.",
)


def _bound_families(name: str, label: str) -> list[SchemaFamily]:
    """Families for a numeric upper/lower bound (`max`, `max-length` ...). An upper size
    bound (length, items, properties) raised or dropped on a response is a warning: typed
    readers do not check sizes, so no value fails to parse; code that sizes buffers by the
    bound is told (docs/decisions.md, "Response bounds"). A value's range relaxed, or a
    lower size bound, stays breaking."""
    upper = name.startswith("max") or name.startswith("exclusive-max")
    tighter, looser = ("decreased", "increased") if upper else ("increased", "decreased")
    loose = W if name in _SIZE_BOUNDS else B
    return [
        _f(f"{name}-{tighter}", B, I, f"{label} tightened from {{before}} to {{after}}", *_TIGHTER),
        _f(f"{name}-{looser}", I, loose, f"{label} relaxed from {{before}} to {{after}}", *_LOOSER),
        _f(f"{name}-set", W, I, f"{label} set to {{after}}", *_NEW_BOUND),
        _f(f"{name}-unset", I, loose, f"{label} {{before}} removed", *_DROPPED_BOUND),
    ]


# Upper bounds on a value's size (its length, item or property count): raised or dropped on
# a response they are warnings (docs/decisions.md, "Response bounds"). A lower size bound
# dropped stays breaking: a reader may take the first item of a list that can now be empty.
_SIZE_BOUNDS = frozenset({"max-length", "max-items", "max-properties"})


def _pair(aspect: str, label: str, added_request: Severity = B) -> list[SchemaFamily]:
    """Families for a keyword that restricts values when added (contains, if, ...); the hint
    of each side follows its severity (a change that is information needs no action)."""
    removed_request = I if added_request is B else B
    return [
        _f(
            f"{aspect}-added",
            added_request,
            I if added_request is B else B,
            f"{label} added",
            *_restriction_hints(added_request, I if added_request is B else B),
        ),
        _f(
            f"{aspect}-removed",
            removed_request,
            B if added_request is B else I,
            f"{label} removed",
            *_restriction_hints(removed_request, B if added_request is B else I),
        ),
    ]


def _restriction_hints(request: Severity, response: Severity) -> tuple[str, str]:
    return (
        "Backward compatible for what you send."
        if request is I
        else "A restriction on this data changed; make what you send satisfy it.",
        "Responses satisfy the new restriction; nothing to do."
        if response is I
        else "Readers may receive data they did not expect; check your model.",
    )


SCHEMA_FAMILIES: tuple[SchemaFamily, ...] = (
    # Membership: a property appears, disappears or changes required-ness.
    _f(
        "added-required",
        B,
        I,
        "required property {name} added",
        "Send the new required field on every call.",
        action=ACCEPT,
        request_action=SEND_REQUIRED,
        nested_only=True,
        response_hint="Responses always carry the new field now; use it when useful.",
    ),
    _f(
        "added-required-with-default",
        B,
        I,
        "required property {name} added (it has a default, but must still be sent)",
        "A default does not help: a required field must be sent.",
        action=ACCEPT,
        request_action=SEND_REQUIRED,
        nested_only=True,
        response_hint="Responses always carry the new field now; use it when useful.",
    ),
    _f(
        "added-optional",
        I,
        I,
        "optional property {name} added",
        "Backward compatible; use the new field when useful.",
        action=ACCEPT,
        nested_only=True,
    ),
    _f(
        "removed",
        W,
        W,
        "property {name} removed",
        "Stop sending the field; it is ignored or rejected now.",
        nested_only=True,
        response_hint="Stop reading the field; responses no longer carry it.",
    ),
    _f(
        "removed-required",
        W,
        B,
        "required property {name} removed",
        "Readers that relied on the field break; update the client model.",
        nested_only=True,
        request_hint="Stop sending the field; it is ignored or rejected now.",
    ),
    _f(
        "removed-closed-schema",
        B,
        W,
        "property {name} removed from a schema that forbids extra properties",
        "Calls that still send the field are rejected; stop sending it.",
        nested_only=True,
        response_hint="Stop reading the field; responses no longer carry it.",
    ),
    _f(
        "became-required",
        B,
        I,
        "property {name} became required",
        "Always send the field now.",
        action=ACCEPT,
        request_action=SEND_REQUIRED,
        nested_only=True,
        response_hint="Responses always carry the field now; nothing to do.",
    ),
    _f(
        "became-required-with-default",
        B,
        I,
        "property {name} became required (it has a default, but must still be sent)",
        "Always send the field now; a default does not make it optional.",
        action=ACCEPT,
        request_action=SEND_REQUIRED,
        nested_only=True,
        response_hint="Responses always carry the field now; nothing to do.",
    ),
    _f(
        "became-optional",
        I,
        B,
        "property {name} became optional",
        "Readers must handle the field being absent.",
        nested_only=True,
        request_hint="Backward compatible; you may leave the field out now.",
    ),
    # Types.
    _f(
        "type-changed",
        B,
        B,
        "type changed from {before} to {after}",
        "The value has an incompatible type now; update the client model.",
    ),
    _f(
        "type-generalized",
        I,
        B,
        "type widened from {before} to {after}",
        "Readers get values they may not parse (for example decimals where integers were).",
        request_hint="Backward compatible; the old values are still accepted.",
    ),
    _f(
        "type-specialized",
        B,
        I,
        "type narrowed from {before} to {after}",
        "Senders must restrict their values to the narrower type.",
        response_hint="Responses carry a subset of the old values; nothing to do.",
    ),
    _f(
        "list-of-types-widened",
        I,
        B,
        "list of types widened from {before} to {after}",
        "Readers may get values of a type they do not handle.",
        request_hint="Backward compatible; the old types are still accepted.",
    ),
    _f(
        "list-of-types-narrowed",
        B,
        I,
        "list of types narrowed from {before} to {after}",
        "Senders may no longer send some of the old types.",
        response_hint="Responses carry fewer types than before; nothing to do.",
    ),
    _f(
        "became-nullable",
        I,
        B,
        "became nullable",
        "Readers must handle null values.",
        request_hint="Backward compatible; null is accepted now.",
    ),
    _f(
        "became-not-nullable",
        B,
        I,
        "is no longer nullable",
        "Senders may no longer send null.",
        response_hint="Responses no longer carry null; nothing to do.",
    ),
    _f(
        "format-added",
        W,
        I,
        "format {after} added",
        "Values must now follow the format; check what you send.",
        response_hint="Responses follow the format now; nothing to do.",
    ),
    _f(
        "format-removed",
        I,
        W,
        "format {before} removed",
        "Readers may receive values that do not follow the old format.",
        request_hint="Backward compatible; the format is no longer checked.",
    ),
    _f(
        "format-changed",
        B,
        B,
        "format changed from {before} to {after}",
        "The value representation changed; update serialisation.",
        response_hint="The value representation changed; update parsing.",
    ),
    _f(
        "format-widened",
        I,
        B,
        "format widened from {before} to {after}",
        "Readers may get values their old type cannot hold; widen the field's type.",
        request_hint="Backward compatible: every value sent before still fits.",
    ),
    _f(
        "format-narrowed",
        B,
        I,
        "format narrowed from {before} to {after}",
        "Send only values the narrower format holds.",
        response_hint="Backward compatible: every value received still fits the old format.",
    ),
    _f(
        "keyword-no-effect",
        I,
        I,
        "changed from {before} to {after}, which allows the same values",
        "Nothing to do: the values allowed are the same.",
        action=ACCEPT,
    ),
    # Enums and constants.
    _f(
        "enum-value-added",
        I,
        W,
        "enum value {after} added",
        "Handle the new value (or a fallback) where you read this field.",
        action=NEW_ENUM,
        request_action=ACCEPT,
        request_hint="Backward compatible; the new value is accepted.",
    ),
    _f(
        "enum-value-corrected",
        I,
        I,
        "enum value {before} corrected to {after} (documentation markup removed)",
        "Backward compatible; the value a server took is listed as it is sent now.",
        response_hint="The value readers get is listed as it comes now; nothing to do.",
    ),
    _f(
        "enum-value-removed",
        B,
        I,
        "enum value {before} removed",
        "Stop sending the removed value.",
        response_hint="Responses no longer carry the removed value; nothing to do.",
    ),
    _f(
        "xml-changed",
        W,
        W,
        "XML representation changed from {before} to {after}",
        "XML bodies name, wrap or namespace this value another way now; JSON is unaffected.",
        action=UPDATE_CLIENT,
    ),
    _f(
        "x-extensible-enum-value-added",
        I,
        I,
        "extensible enum value {after} added",
        "Known values grew; readers of an extensible enum already accept unknown values.",
        action=ACCEPT,
        request_hint="Backward compatible; the new value is accepted.",
    ),
    _f(
        "x-extensible-enum-value-removed",
        B,
        I,
        "extensible enum value {before} removed",
        "Stop sending the removed value.",
        response_hint="Readers of an extensible enum already accept unknown values; nothing to do.",
    ),
    _f(
        "became-enum",
        B,
        I,
        "became an enum of {after}",
        "Only the listed values are accepted now.",
        response_hint="Responses carry only the listed values now; nothing to do.",
    ),
    _f(
        "enum-removed",
        I,
        W,
        "is no longer restricted to an enum",
        "Readers may receive values outside the old enum.",
        action=NEW_ENUM,
        request_action=ACCEPT,
        request_hint="Backward compatible; any value is accepted now.",
    ),
    _f(
        "const-added",
        B,
        I,
        "constant {after} imposed",
        "Only the constant value is accepted now.",
        response_hint="Responses carry only the constant now; nothing to do.",
    ),
    _f(
        "const-removed",
        I,
        B,
        "constant {before} removed",
        "Readers may receive other values than the old constant.",
        request_hint="Backward compatible; other values are accepted now.",
    ),
    _f(
        "const-changed",
        B,
        B,
        "constant changed from {before} to {after}",
        "The fixed value changed; update the client.",
    ),
    # Numeric and size bounds.
    *_bound_families("max", "maximum"),
    *_bound_families("min", "minimum"),
    *_bound_families("exclusive-max", "exclusive maximum"),
    *_bound_families("exclusive-min", "exclusive minimum"),
    *_bound_families("max-length", "maxLength"),
    *_bound_families("min-length", "minLength"),
    *_bound_families("max-items", "maxItems"),
    *_bound_families("min-items", "minItems"),
    *_bound_families("max-properties", "maxProperties"),
    *_bound_families("min-properties", "minProperties"),
    *_bound_families("max-contains", "maxContains"),
    *_bound_families("min-contains", "minContains"),
    _f(
        "range-disjoint",
        B,
        B,
        "no value the old bounds allowed fits the new ones ({after})",
        "Every value you sent before is refused now; send values in the new range.",
        response_hint="Every value comes from a range the old contract excluded; check "
        "what your code does with them.",
    ),
    _f(
        "known-value-refused",
        B,
        I,
        "the value {before}, named by the schema itself, is refused now ({after})",
        "A value the contract offered (an enum value, default or example) is refused now; "
        "stop sending it.",
        response_hint="Responses no longer carry that value; nothing to do.",
    ),
    _f(
        "multiple-of-changed",
        B,
        B,
        "multipleOf changed from {before} to {after}",
        "Allowed steps changed; check values on both sides.",
    ),
    _f(
        "type-compatible",
        I,
        I,
        "type changed from {before} to {after}, where values are text on the wire",
        "XML, form and header values are text; nothing on the wire enforces the type. Check "
        "the values you parse.",
        request_hint="XML, form and header values are text; nothing on the wire enforces the "
        "type. Check the values you send.",
    ),
    _f(
        "multiple-of-generalized",
        I,
        B,
        "multipleOf relaxed from {before} to {after}",
        "Every old multiple is still valid; readers may now receive values between them.",
        request_hint="Backward compatible; every old multiple is still accepted.",
    ),
    _f(
        "multiple-of-specialized",
        B,
        I,
        "multipleOf tightened from {before} to {after}",
        "Send multiples of the new step.",
        response_hint="Responses carry multiples of the new step; nothing to do.",
    ),
    _f("multiple-of-set", W, I, "multipleOf {after} set", *_NEW_BOUND),
    _f("multiple-of-unset", I, W, "multipleOf {before} removed", *_DROPPED_BOUND),
    _f(
        "unique-items-set",
        W,
        I,
        "items must be unique now",
        "Do not send duplicate items.",
        response_hint="Responses carry no duplicate items now; nothing to do.",
    ),
    _f(
        "unique-items-unset",
        I,
        W,
        "items are no longer guaranteed unique",
        "Readers may receive duplicates.",
        request_hint="Backward compatible; duplicates are accepted now.",
    ),
    # Patterns.
    _f(
        "pattern-added",
        W,
        I,
        "pattern {after} added",
        "Values must now match the pattern; check what you send.",
        response_hint="Responses match the pattern now; nothing to do.",
    ),
    _f(
        "pattern-changed",
        W,
        I,
        "pattern changed from {before} to {after}",
        "Check that the values you send match the new pattern.",
        response_hint="Responses match the new pattern; check code that relies on the old one.",
    ),
    _f(
        "pattern-generalized",
        I,
        I,
        "pattern relaxed from {before} to {after}",
        "The new pattern accepts any string.",
    ),
    _f(
        "pattern-removed",
        I,
        I,
        "pattern {before} removed",
        "Values are no longer checked against the pattern.",
    ),
    # Defaults.
    _f(
        "default-value-added",
        I,
        I,
        "default {after} added",
        "Behaviour when the field is omitted may change.",
        overrides={"request-parameter": W},
    ),
    _f(
        "default-value-changed",
        I,
        I,
        "default changed from {before} to {after}",
        "Behaviour when the field is omitted changed; send it explicitly if you rely on it.",
        overrides={"request-parameter": W},
        response_hint="The value the server assumes when the field is omitted changed; check "
        "code that relies on the old default.",
    ),
    _f(
        "default-value-removed",
        I,
        I,
        "default {before} removed",
        "Behaviour when the field is omitted may change.",
        overrides={"request-parameter": W},
    ),
    # Object shape.
    _f(
        "additional-properties-forbidden",
        W,
        I,
        "additional properties are forbidden now",
        "Calls with extra keys are rejected now; send only documented fields.",
        response_hint="Responses carry only documented keys now; nothing to do.",
    ),
    _f(
        "additional-properties-unconstrained",
        I,
        W,
        "the schema for undocumented keys was dropped: any value is allowed there now",
        "Backward compatible; values of undocumented keys are not checked now.",
        response_hint="Code that reads keys it does not know by name (iterating the map) may "
        "get values of any shape; documented properties are compared on their own.",
    ),
    _f(
        "additional-properties-constrained",
        W,
        I,
        "undocumented keys must now match a schema",
        "Calls whose extra keys do not match the new schema are refused; check what you "
        "send beyond the documented fields.",
        response_hint="Values under undocumented keys are described now; nothing to do.",
    ),
    _f(
        "additional-properties-allowed",
        I,
        I,
        "additional properties are allowed now",
        "Backward compatible; extra keys are accepted now.",
        response_hint="Readers may see unknown keys; ignore the ones you do not know.",
    ),
    # Composition.
    _f(
        "one-of-added",
        I,
        B,
        "oneOf alternative {after} added",
        "Readers must handle the new alternative.",
        request_hint="Backward compatible; the new alternative is accepted.",
    ),
    _f(
        "one-of-removed",
        B,
        I,
        "oneOf alternative {before} removed",
        "Stop sending the removed alternative.",
        response_hint="Responses no longer carry the removed alternative; nothing to do.",
    ),
    _f(
        "any-of-added",
        I,
        I,
        "anyOf alternative {after} added",
        "A new alternative is accepted.",
        response_hint="Readers may get the new alternative.",
    ),
    _f(
        "any-of-removed",
        B,
        I,
        "anyOf alternative {before} removed",
        "Stop sending the removed alternative.",
        response_hint="Responses no longer carry the removed alternative; nothing to do.",
    ),
    _f(
        "all-of-added",
        B,
        I,
        "allOf subschema {after} added",
        "Data must satisfy an additional subschema.",
        response_hint="Responses satisfy an additional subschema; nothing to do.",
    ),
    _f(
        "all-of-removed",
        W,
        I,
        "allOf subschema {before} removed",
        "A subschema no longer applies; review the fields it defined.",
    ),
    _f(
        "all-of-added-annotation-only",
        I,
        I,
        "allOf subschema {after} with annotations only added",
        "Documentation only; no effect on data.",
    ),
    _f(
        "all-of-removed-annotation-only",
        I,
        I,
        "allOf subschema {before} with annotations only removed",
        "Documentation only; no effect on data.",
    ),
    _f(
        "any-of-became-one-of",
        W,
        I,
        "anyOf became oneOf over the same alternatives",
        "A value that matches more than one alternative is rejected now; send values that "
        "match exactly one.",
        response_hint="Responses match exactly one alternative now; nothing to do.",
    ),
    _f(
        "one-of-became-any-of",
        I,
        W,
        "oneOf became anyOf over the same alternatives",
        "A value may now match several alternatives; do not rely on exactly one matching.",
    ),
    _f(
        "wrapped-in-one-of-original-preserved",
        W,
        B,
        "schema became oneOf with {after} alternatives, the old shape kept as one",
        "Old data still fits unless it also matches another alternative (oneOf rejects that); "
        "check what you send.",
        response_hint="Readers may get the new alternatives; the old shape is one of them.",
    ),
    _f(
        "wrapped-in-any-of",
        I,
        B,
        "schema became anyOf with {after} alternatives, the old shape kept as one",
        "Old data still fits; readers may get the new alternatives.",
        request_hint="Backward compatible; the old shape is still accepted.",
    ),
    _f(
        "restructured",
        W,
        B,
        "schema restructured ({before} -> {after}); the old shape is not kept as an alternative",
        "Review the new shape against what you send.",
        response_hint="Review the new shape against what you read.",
    ),
    _f(
        "undeclared-became-required",
        B,
        I,
        "{name}, a property the schema does not define, became required",
        "Send the newly required field (its shape is not described; ask the vendor).",
        response_hint="Responses carry the field now; nothing to do.",
    ),
    _f(
        "undeclared-became-optional",
        I,
        W,
        "{name}, a property the schema does not define, is no longer required",
        "Backward compatible; the field need not be sent.",
        response_hint="No client model has this field (it is not defined); code that reads "
        "it by name should allow it to be missing.",
    ),
    _f(
        "type-made-explicit",
        I,
        I,
        "type {after} written out where the schema implied {before}",
        "Backward compatible; the values accepted are the same.",
        response_hint="The values are the same; nothing to do.",
    ),
    _f(
        "type-left-implied",
        I,
        I,
        "type {before} no longer written; the schema still implies {after}",
        "Backward compatible; the values accepted are the same.",
        response_hint="The values are the same; nothing to do.",
    ),
    _f(
        "rewritten-as-alternatives",
        I,
        I,
        "schema written as {after} alternatives that change nothing a client sees on this side",
        "Backward compatible; the alternatives accept what the schema accepted.",
        response_hint="Every alternative is a value the old schema allowed; nothing to do.",
    ),
    _f(
        "alternatives-folded",
        I,
        I,
        "{before} alternatives folded into one schema that changes nothing a client sees on "
        "this side",
        "Backward compatible; the schema accepts every value an alternative accepted.",
        response_hint="The schema allows only values an alternative allowed; nothing to do.",
    ),
    _f(
        "wrapped-in-one-of",
        B,
        B,
        "schema wrapped in a oneOf",
        "The shape is now one of several alternatives; update the client model.",
    ),
    _f(
        "discriminator-added",
        I,
        I,
        "discriminator added",
        "Polymorphic values are tagged now.",
    ),
    _f(
        "discriminator-removed",
        I,
        I,
        "discriminator removed",
        "Polymorphic values are no longer tagged.",
    ),
    _f(
        "discriminator-property-name-changed",
        B,
        B,
        "discriminator property changed from {before} to {after}",
        "Read the type tag under its new property name.",
        request_hint="Send the type tag under its new property name.",
    ),
    _f(
        "discriminator-mapping-added",
        I,
        I,
        "discriminator mapping {after} added",
        "A new tag value exists.",
    ),
    _f(
        "discriminator-mapping-deleted",
        I,
        I,
        "discriminator mapping {before} removed",
        "A tag value is gone.",
    ),
    _f(
        "discriminator-mapping-changed",
        I,
        I,
        "discriminator mapping changed for {name}",
        "A tag value maps to another schema.",
    ),
    # JSON Schema 2019-09 / 2020-12 keywords.
    *_pair("contains", "contains"),
    *_pair("prefix-items", "prefixItems", added_request=I),
    # The position's values are compared with what `items` (or `maxItems`) allowed there:
    # those findings carry the direction, this one says where.
    _f(
        "prefix-item-added",
        I,
        I,
        "prefixItems entry {after} added",
        "The position has its own schema now; see the findings at that position.",
    ),
    _f(
        "prefix-item-removed",
        I,
        I,
        "prefixItems entry {before} removed",
        "The position follows `items` now; see the findings at that position.",
    ),
    # Boolean schemas: `false` allows no value, `true` (or a schema) allows some.
    _f(
        "became-false",
        B,
        I,
        "became the false schema (no value allowed)",
        "Every value is refused here now; stop sending it.",
        response_hint="No value comes here any more; nothing to do.",
    ),
    _f(
        "no-longer-false",
        I,
        B,
        "was the false schema (no value allowed), allows values now",
        "Backward compatible; values are accepted here now.",
        response_hint="Readers may get values here that could never come before; handle them.",
    ),
    *_pair("unevaluated-items", "unevaluatedItems"),
    *_pair("unevaluated-properties", "unevaluatedProperties"),
    *_pair("dependent-required", "dependentRequired"),
    _f(
        "dependent-required-changed",
        B,
        B,
        "dependentRequired changed for {name}",
        "Co-required fields changed; check what you send.",
        response_hint="Co-required fields changed; check what you read.",
    ),
    *_pair("dependent-schema", "dependentSchemas"),
    *_pair("pattern-property", "patternProperties"),
    *_pair("property-names", "propertyNames"),
    *_pair("content-schema", "contentSchema"),
    _f(
        "content-media-type-changed",
        B,
        B,
        "contentMediaType changed from {before} to {after}",
        "The embedded content has another media type.",
    ),
    _f(
        "content-encoding-changed",
        B,
        B,
        "contentEncoding changed from {before} to {after}",
        "The embedded content is encoded differently.",
    ),
    *_pair("if", "if"),
    *_pair("then", "then"),
    *_pair("else", "else"),
    *_pair("not", "not"),
    _f(
        "not-value-added",
        B,
        I,
        "value {after} excluded now (listed under not)",
        "Calls sending this value are refused now.",
        response_hint="Responses no longer carry this value; nothing to do.",
    ),
    _f(
        "not-value-removed",
        I,
        B,
        "value {before} no longer excluded (removed from not)",
        "Backward compatible; the value is accepted now.",
        response_hint="Readers may now receive this value; handle it.",
    ),
    _f(
        "not-changed",
        W,
        W,
        "the subschema under not changed (not judged value by value: it excludes more than "
        "listed values)",
        "Other values are excluded now; check what you send against it.",
        response_hint="Other values are excluded now; check what you read against it.",
    ),
    # Lifecycle and documentation.
    _f(
        "deprecated",
        I,
        I,
        "deprecated",
        "Plan a migration away from the field.",
        action=ACCEPT,
        nested_only=True,
    ),
    _f(
        "deprecated-with-sunset",
        I,
        I,
        "deprecated, sunset {after}",
        "Migrate away from the field before the sunset date.",
        action=ACCEPT,
        nested_only=True,
    ),
    _f(
        "deprecated-sunset-invalid",
        I,
        I,
        "deprecated with a sunset date that is not a date: {after}",
        "Plan a migration away from the field; ask the vendor for the real sunset date.",
        action=ACCEPT,
        nested_only=True,
    ),
    _f(
        "reactivated",
        I,
        I,
        "no longer deprecated",
        "Nothing to do.",
        action=ACCEPT,
        nested_only=True,
    ),
    _f(
        "stability-decreased",
        B,
        B,
        "stability decreased from {before} to {after}",
        "The field may change without notice now.",
        action=ACK,
        nested_only=True,
    ),
    _f(
        "stability-increased",
        I,
        I,
        "stability increased from {before} to {after}",
        "Nothing to do.",
        action=ACCEPT,
        nested_only=True,
    ),
    _f(
        "stability-invalid",
        B,
        B,
        "stability level {after} is not valid",
        "Valid levels: draft, alpha, beta, stable.",
        action=CHECK_CONFIG,
        nested_only=True,
    ),
    _f(
        "became-not-write-only",
        I,
        W,
        "required property {name} is no longer write-only",
        "Readers now receive a field that was never returned before; check your model.",
        nested_only=True,
        request_hint="Nothing changes for what you send.",
    ),
    _f(
        "became-write-only",
        I,
        B,
        "required property {name} became write-only",
        "Responses stop carrying the field; readers that use it break.",
        nested_only=True,
        request_hint="Backward compatible; the field is still accepted.",
    ),
    _f(
        "became-not-write-only-optional",
        I,
        I,
        "optional property {name} is no longer write-only",
        "Responses may carry the field now; use it when useful.",
        action=ACCEPT,
        nested_only=True,
    ),
    _f(
        "became-write-only-optional",
        I,
        B,
        "optional property {name} became write-only",
        "Responses stop carrying the field; readers that use it break.",
        nested_only=True,
        request_hint="Backward compatible; the field is still accepted.",
    ),
    _f(
        "became-read-only",
        B,
        I,
        "required property {name} became read-only",
        "Stop sending the field: the server sets it and may refuse it in requests.",
        "Backward compatible; responses still carry the field.",
        nested_only=True,
    ),
    _f(
        "became-read-only-optional",
        B,
        I,
        "optional property {name} became read-only",
        "Stop sending the field: the server sets it and may refuse it in requests.",
        "Backward compatible; responses still carry the field.",
        nested_only=True,
    ),
    _f(
        "became-not-read-only",
        B,
        I,
        "required property {name} is no longer read-only",
        "The field is required in requests now: send it on every call.",
        "Backward compatible; responses carry the field as before.",
        action=ACCEPT,
        request_action=SEND_REQUIRED,
        nested_only=True,
    ),
    _f(
        "became-not-read-only-optional",
        I,
        I,
        "optional property {name} is no longer read-only",
        "The field may be sent now; nothing breaks.",
        "Backward compatible; responses carry the field as before.",
        action=ACCEPT,
        nested_only=True,
    ),
    # Polymorphism named by a discriminator only (Swagger 2.0 `allOf` subtypes).
    _f(
        "subtype-added",
        I,
        W,
        "subtype {after} added",
        "Readers may get objects of the new subtype; handle its type tag or a fallback.",
        request_hint="Backward compatible; objects of the new subtype may be sent too.",
        action=NEW_ENUM,
        request_action=ACCEPT,
    ),
    _f(
        "subtype-removed",
        B,
        I,
        "subtype {before} removed",
        "Stop sending objects of the removed subtype.",
        "Backward compatible; responses no longer carry objects of that subtype.",
    ),
    # The root spelling of the nested-only lifecycle aspects (`ROOT_ASPECTS`).
    _f(
        "schema-deprecated",
        I,
        I,
        "schema deprecated",
        "Plan a migration away from this schema.",
        action=ACCEPT,
        root_only=True,
    ),
    _f(
        "schema-deprecated-with-sunset",
        I,
        I,
        "schema deprecated, sunset {after}",
        "Migrate away from this schema before the sunset date.",
        action=ACCEPT,
        root_only=True,
    ),
    _f(
        "schema-deprecated-sunset-invalid",
        I,
        I,
        "schema deprecated with a sunset date that is not a date: {after}",
        "Plan a migration; ask the vendor for the real sunset date.",
        action=ACCEPT,
        root_only=True,
    ),
    _f(
        "schema-reactivated",
        I,
        I,
        "schema no longer deprecated",
        "Nothing to do.",
        action=ACCEPT,
        root_only=True,
    ),
    _f(
        "schema-stability-decreased",
        B,
        B,
        "stability decreased from {before} to {after}",
        "The schema may change without notice now.",
        action=ACK,
        root_only=True,
    ),
    _f(
        "schema-stability-increased",
        I,
        I,
        "stability increased from {before} to {after}",
        "Nothing to do.",
        action=ACCEPT,
        root_only=True,
    ),
    _f(
        "schema-stability-invalid",
        B,
        B,
        "stability level {after} is not valid",
        "Valid levels: draft, alpha, beta, stable.",
        action=CHECK_CONFIG,
        root_only=True,
    ),
    # Never silent: a schema keyword no rule reads (or a finding no rule names).
    _f(
        "unclassified-difference",
        W,
        W,
        "difference no rule classifies: {before} -> {after}",
        "driftgate has no rule for this difference; compare the two schemas at this path "
        "and decide whether it matters to you.",
        action=CHECK_CONFIG,
    ),
    _f(
        "description-changed",
        I,
        I,
        "description changed",
        "Review the new description; it may change how the field is used.",
        action=ACCEPT,
    ),
)


def _r(rule_id: str, severity: Severity, summary: str, action: str, hint: str, family: str) -> Rule:
    return Rule(rule_id, severity, summary, action, hint, family)


# Contract-level rules: operations, parameters, media types, statuses, security, MCP surface.
CONTRACT_RULES: tuple[Rule, ...] = (
    # A difference no rule classifies: never "no change" when the documents differ.
    _r(
        "unclassified-difference",
        W,
        "difference at {name} that no rule classifies ({before} -> {after})",
        CHECK_CONFIG,
        "driftgate has no rule for this difference; compare the two documents at this path "
        "and decide whether it matters to you.",
        "openapi",
    ),
    # OpenAPI paths and operations.
    _r(
        "endpoint-added",
        I,
        "operation {name} added",
        ACCEPT,
        "Backward compatible.",
        "openapi",
    ),
    _r(
        "endpoint-removed",
        B,
        "operation {name} removed",
        UPDATE_CLIENT,
        "Migrate to a replacement operation.",
        "openapi",
    ),
    _r(
        "endpoint-removed-deprecated",
        W,
        "deprecated operation {name} removed",
        UPDATE_CLIENT,
        "The operation was deprecated first; a consumer that did not migrate still breaks.",
        "openapi",
    ),
    _r(
        "endpoint-removed-before-sunset",
        B,
        "operation {name} removed before its sunset date {before}",
        UPDATE_CLIENT,
        "The vendor removed the operation earlier than announced.",
        "openapi",
    ),
    _r(
        "endpoint-removed-unstable",
        I,
        "draft/alpha operation {name} removed",
        UPDATE_CLIENT,
        "The vendor marked the operation unstable; it could go away without notice.",
        "openapi",
    ),
    _r(
        "endpoint-unstable-changed",
        I,
        "draft/alpha operation {name} changed ({detail} changes, not classified)",
        ACCEPT,
        "The vendor promises no compatibility for draft/alpha operations; review before use.",
        "openapi",
    ),
    _r(
        "endpoint-sunset-missing",
        B,
        "operation {name} deprecated without a sunset date",
        ACK,
        "The grace period before removal is unknown; ask the vendor.",
        "openapi",
    ),
    _r(
        "request-parameter-sunset-missing",
        B,
        "{name} deprecated without a sunset date",
        ACK,
        "The grace period before removal is unknown.",
        "openapi",
    ),
    _r(
        "endpoint-deprecated",
        I,
        "operation {name} deprecated",
        ACCEPT,
        "Plan a migration away from the operation.",
        "openapi",
    ),
    _r(
        "endpoint-deprecated-with-sunset",
        I,
        "operation {name} deprecated with sunset {after}",
        ACCEPT,
        "Migrate away from the operation before the sunset date.",
        "openapi",
    ),
    _r(
        "endpoint-reactivated",
        I,
        "operation {name} is no longer deprecated",
        ACCEPT,
        "Nothing to do.",
        "openapi",
    ),
    _r(
        "endpoint-sunset-deleted",
        B,
        "sunset date removed from deprecated operation {name}",
        ACK,
        "The deprecation schedule is unknown now; ask the vendor.",
        "openapi",
    ),
    _r(
        "endpoint-sunset-invalid",
        B,
        "sunset date {after} of operation {name} cannot be parsed",
        CHECK_CONFIG,
        "The vendor's deprecation metadata is malformed.",
        "openapi",
    ),
    _r(
        "endpoint-sunset-moved-earlier",
        B,
        "sunset date of operation {name} moved from {before} to {after}",
        ACK,
        "The operation goes away sooner than announced.",
        "openapi",
    ),
    _r(
        "endpoint-stability-decreased",
        B,
        "stability of operation {name} decreased from {before} to {after}",
        ACK,
        "The operation may change without notice now.",
        "openapi",
    ),
    _r(
        "endpoint-stability-increased",
        I,
        "stability of operation {name} increased from {before} to {after}",
        ACCEPT,
        "Nothing to do.",
        "openapi",
    ),
    _r(
        "endpoint-stability-invalid",
        B,
        "stability level {after} of operation {name} is not valid",
        CHECK_CONFIG,
        "Valid levels: draft, alpha, beta, stable.",
        "openapi",
    ),
    _r(
        "endpoint-operation-id-changed",
        I,
        "operationId of {name} changed from {before} to {after}",
        ACCEPT,
        "Generated clients may rename the method.",
        "openapi",
    ),
    _r(
        "server-added",
        I,
        "server {after} added",
        ACCEPT,
        "Backward compatible.",
        "openapi",
    ),
    _r(
        "server-removed",
        W,
        "server {before} removed",
        CHECK_CONFIG,
        "Clients configured with this base URL may stop working.",
        "openapi",
    ),
    # An operation's own base URLs (its `servers`, else its path's, else the document's),
    # where the operation or its path overrides them: the same severities as the document's.
    _r(
        "endpoint-server-added",
        I,
        "server {after} added for {name}",
        ACCEPT,
        "Backward compatible.",
        "openapi",
    ),
    _r(
        "endpoint-server-removed",
        W,
        "server {before} removed for {name}",
        CHECK_CONFIG,
        "Clients calling this operation at this base URL may stop working.",
        "openapi",
    ),
    # Parameters.
    _r(
        "request-parameter-added-required",
        B,
        "required {name} added",
        SEND_REQUIRED,
        "Send the new parameter on every call.",
        "openapi",
    ),
    _r(
        "request-parameter-added-optional",
        I,
        "optional {name} added",
        ACCEPT,
        "Backward compatible.",
        "openapi",
    ),
    _r(
        "request-parameter-removed",
        W,
        "{name} removed",
        UPDATE_CLIENT,
        "Stop sending the parameter; it is ignored or rejected now.",
        "openapi",
    ),
    _r(
        "request-parameter-removed-deprecated",
        I,
        "deprecated {name} removed",
        UPDATE_CLIENT,
        "Stop sending the parameter.",
        "openapi",
    ),
    _r(
        "request-parameter-removed-before-sunset",
        B,
        "{name} removed before its sunset date {before}",
        UPDATE_CLIENT,
        "The vendor removed the parameter earlier than announced.",
        "openapi",
    ),
    _r(
        "request-parameter-became-required",
        B,
        "{name} became required",
        SEND_REQUIRED,
        "Always send the parameter now.",
        "openapi",
    ),
    _r(
        "request-parameter-became-optional",
        I,
        "{name} became optional",
        ACCEPT,
        "Backward compatible.",
        "openapi",
    ),
    _r(
        "request-parameter-deprecated",
        I,
        "{name} deprecated",
        ACCEPT,
        "Plan to stop sending the parameter.",
        "openapi",
    ),
    _r(
        "request-parameter-reactivated",
        I,
        "{name} is no longer deprecated",
        ACCEPT,
        "Nothing to do.",
        "openapi",
    ),
    _r(
        "request-parameter-sunset-deleted",
        B,
        "sunset date removed from deprecated {name}",
        ACK,
        "The deprecation schedule is unknown now.",
        "openapi",
    ),
    _r(
        "request-parameter-sunset-invalid",
        B,
        "sunset date {after} of {name} cannot be parsed",
        CHECK_CONFIG,
        "The vendor's deprecation metadata is malformed.",
        "openapi",
    ),
    _r(
        "request-parameter-sunset-moved-earlier",
        B,
        "sunset date of {name} moved from {before} to {after}",
        ACK,
        "The parameter goes away sooner than announced.",
        "openapi",
    ),
    _r(
        "request-parameter-style-changed",
        B,
        "serialisation of {name} changed from {before} to {after}",
        UPDATE_CLIENT,
        "Serialise the parameter the new way.",
        "openapi",
    ),
    _r(
        "request-parameter-style-no-effect",
        I,
        "serialisation keywords of {name} changed from {before} to {after}, "
        "with no effect on the wire",
        ACCEPT,
        "Nothing to do: the value is written the same way (explode does not apply to it).",
        "openapi",
    ),
    _r(
        "request-parameter-empty-value-allowed",
        I,
        "{name} accepts an empty value now",
        ACCEPT,
        "Backward compatible.",
        "openapi",
    ),
    _r(
        "request-parameter-empty-value-refused",
        B,
        "{name} no longer accepts an empty value",
        UPDATE_CLIENT,
        "Calls that send the parameter empty are refused; send a value or leave it out.",
        "openapi",
    ),
    # Request bodies and media types.
    _r(
        "request-body-added-required",
        B,
        "required request body added",
        SEND_REQUIRED,
        "Send a body on every call.",
        "openapi",
    ),
    _r(
        "request-body-added-optional",
        I,
        "optional request body added",
        ACCEPT,
        "Backward compatible.",
        "openapi",
    ),
    _r(
        "request-body-removed",
        W,
        "request body removed",
        UPDATE_CLIENT,
        "Stop sending a body.",
        "openapi",
    ),
    _r(
        "request-body-became-required",
        B,
        "request body became required",
        SEND_REQUIRED,
        "Send a body on every call.",
        "openapi",
    ),
    _r(
        "request-body-became-optional",
        I,
        "request body became optional",
        ACCEPT,
        "Backward compatible.",
        "openapi",
    ),
    _r(
        "request-body-media-type-added",
        I,
        "request media type {name} added",
        ACCEPT,
        "Backward compatible.",
        "openapi",
    ),
    _r(
        "request-body-media-type-removed",
        B,
        "request media type {name} removed",
        UPDATE_CLIENT,
        "Send the body in one of the remaining media types.",
        "openapi",
    ),
    _r(
        "response-media-type-added",
        I,
        "response media type {name} added",
        ACCEPT,
        "Backward compatible unless you negotiate content loosely.",
        "openapi",
    ),
    _r(
        "response-media-type-removed-placeholder",
        W,
        "response media type {name} removed; its schema declared nothing to read",
        UPDATE_CLIENT,
        "Do not parse a body here: the one described was an empty placeholder (an object "
        "without properties, or null).",
        "openapi",
    ),
    _r(
        "response-body-placeholder-changed",
        I,
        "response body {name}: one empty placeholder schema replaced by another",
        ACCEPT,
        "Nothing to do: neither declares anything to read.",
        "openapi",
    ),
    _r(
        "response-media-type-removed",
        B,
        "response media type {name} removed",
        UPDATE_CLIENT,
        "Request and parse one of the remaining media types.",
        "openapi",
    ),
    _r(
        "request-body-encoding-changed",
        W,
        "encoding of {name} changed",
        UPDATE_CLIENT,
        "The field is serialised another way in the body (content type, style or headers); "
        "send it the new way.",
        "openapi",
    ),
    _r(
        "response-body-encoding-changed",
        W,
        "encoding of {name} changed",
        UPDATE_CLIENT,
        "The field is serialised another way in the body; parse it the new way.",
        "openapi",
    ),
    _r(
        "request-body-media-type-schema-added",
        W,
        "a schema now describes the request media type {name}",
        UPDATE_CLIENT,
        "What you send is checked against a schema now; make it fit.",
        "openapi",
    ),
    _r(
        "request-body-media-type-schema-removed",
        I,
        "the request media type {name} lost its schema",
        ACCEPT,
        "Anything is accepted now; nothing to do.",
        "openapi",
    ),
    _r(
        "request-body-media-type-item-schema-added",
        W,
        "an item schema now describes the request media type {name}",
        UPDATE_CLIENT,
        "What you send is checked against a schema now; make it fit.",
        "openapi",
    ),
    _r(
        "request-body-media-type-item-schema-removed",
        I,
        "the request media type {name} lost its item schema",
        ACCEPT,
        "Anything is accepted now; nothing to do.",
        "openapi",
    ),
    _r(
        "response-body-media-type-schema-added",
        I,
        "a schema now describes the response media type {name}",
        ACCEPT,
        "Readers know the shape now; nothing breaks.",
        "openapi",
    ),
    _r(
        "response-body-media-type-schema-removed",
        W,
        "the response media type {name} lost its schema",
        UPDATE_CLIENT,
        "The shape is no longer promised; read defensively.",
        "openapi",
    ),
    _r(
        "response-body-media-type-item-schema-added",
        I,
        "an item schema now describes the response media type {name}",
        ACCEPT,
        "Readers know the shape now; nothing breaks.",
        "openapi",
    ),
    _r(
        "response-body-media-type-item-schema-removed",
        W,
        "the response media type {name} lost its item schema",
        UPDATE_CLIENT,
        "The shape is no longer promised; read defensively.",
        "openapi",
    ),
    _r(
        "response-body-media-type-item-schema-removed-untyped",
        W,
        "the response media type {name} lost its item schema and has no schema left",
        UPDATE_CLIENT,
        "Nothing describes the streamed items now; read defensively.",
        "openapi",
    ),
    # The document's version against what changed.
    _r(
        "api-version-not-bumped",
        W,
        "incompatible changes, but the version is still {after}",
        ACK,
        "The vendor did not signal the break; do not rely on the version number to detect it.",
        "openapi",
    ),
    _r(
        "api-version-decreased",
        W,
        "incompatible changes, and the version went down from {before} to {after}",
        ACK,
        "The version number moved backwards; pin the contract by its content, not its version.",
        "openapi",
    ),
    _r(
        "api-major-version-not-bumped",
        W,
        "incompatible changes, but the major version stayed at {after}",
        ACK,
        "The vendor shipped a break in a minor release; review the breaking changes.",
        "openapi",
    ),
    # Responses and headers.
    _r(
        "response-success-status-added",
        I,
        "success status {name} added",
        ACCEPT,
        "Handle the new status where you branch on status codes.",
        "openapi",
    ),
    _r(
        "response-success-status-removed-covered",
        W,
        "success status {name} removed; every success status left was documented before, or "
        "carries no body like it",
        UPDATE_CLIENT,
        "Code that branches on this status no longer runs; the answers that remain are ones "
        "a reader already handled.",
        "openapi",
    ),
    _r(
        "response-success-status-removed",
        B,
        "success status {name} removed",
        UPDATE_CLIENT,
        "Code that expects this status no longer sees it.",
        "openapi",
    ),
    _r(
        "response-non-success-status-added",
        I,
        "non-success status {name} added",
        ACCEPT,
        "Handle the new error status.",
        "openapi",
    ),
    _r(
        "response-non-success-status-removed",
        I,
        "non-success status {name} removed",
        ACCEPT,
        "Nothing to do.",
        "openapi",
    ),
    _r(
        "response-header-added",
        I,
        "response header {name} added",
        ACCEPT,
        "Backward compatible.",
        "openapi",
    ),
    _r(
        "response-header-removed-required",
        B,
        "required response header {name} removed",
        UPDATE_CLIENT,
        "Code that reads the header breaks.",
        "openapi",
    ),
    _r(
        "response-header-removed-optional",
        W,
        "optional response header {name} removed",
        UPDATE_CLIENT,
        "Code that reads the header gets nothing now.",
        "openapi",
    ),
    _r(
        "response-header-became-optional",
        B,
        "response header {name} became optional",
        UPDATE_CLIENT,
        "Handle the header being absent.",
        "openapi",
    ),
    _r(
        "response-header-became-required",
        I,
        "response header {name} became required",
        ACCEPT,
        "Backward compatible.",
        "openapi",
    ),
    _r(
        "response-header-deprecated",
        I,
        "response header {name} deprecated",
        ACCEPT,
        "Plan to stop reading the header.",
        "openapi",
    ),
    _r(
        "response-header-reactivated",
        I,
        "response header {name} is no longer deprecated",
        ACCEPT,
        "Nothing to do.",
        "openapi",
    ),
    _r(
        "response-header-style-changed",
        B,
        "serialisation of response header {name} changed from {before} to {after}",
        UPDATE_CLIENT,
        "Parse the header value the new way.",
        "openapi",
    ),
    _r(
        "response-header-style-no-effect",
        I,
        "serialisation keywords of response header {name} changed from {before} to {after}, "
        "with no effect on the wire",
        ACCEPT,
        "Nothing to do: the value is written the same way.",
        "openapi",
    ),
    # Security.
    _r(
        "security-requirement-declared",
        I,
        "{name} declares as a security scheme ({after}) the credential it already required "
        "as a parameter",
        ACCEPT,
        "Nothing to do: clients send the same header, query or cookie value as before.",
        "openapi",
    ),
    _r(
        "security-requirement-added",
        B,
        "{name} needs credentials now ({after})",
        CHECK_CONFIG,
        "Calls without credentials are refused; configure the new credentials.",
        "openapi",
    ),
    _r(
        "security-requirement-removed",
        I,
        "{name} no longer needs credentials",
        ACCEPT,
        "Calls without credentials are accepted now; nothing to do.",
        "openapi",
    ),
    _r(
        "security-scope-added",
        B,
        "security scope {after} added to {name}",
        CHECK_CONFIG,
        "Tokens issued without the new scope are refused; request it.",
        "openapi",
    ),
    _r(
        "security-scope-removed",
        I,
        "security scope {before} removed from {name}",
        ACCEPT,
        "Nothing to do.",
        "openapi",
    ),
    _r(
        "security-alternative-added",
        I,
        "{name}: another way to authenticate added ({after})",
        ACCEPT,
        "Existing credentials keep working; the new alternative is optional.",
        "openapi",
    ),
    _r(
        "security-alternative-removed",
        B,
        "{name}: authenticating with {before} is no longer accepted",
        CHECK_CONFIG,
        "Clients that authenticate this way are refused; switch to a remaining alternative.",
        "openapi",
    ),
    _r(
        "security-requirement-relaxed",
        I,
        "{name}: the credentials {before} are more than needed now ({after} suffice)",
        ACCEPT,
        "Existing credentials keep working.",
        "openapi",
    ),
    _r(
        "security-scheme-openid-connect-url-changed",
        B,
        "OpenID Connect discovery URL of {name} changed from {before} to {after}",
        CHECK_CONFIG,
        "Discover the provider at the new URL.",
        "openapi",
    ),
    _r(
        "security-scheme-oauth-flow-added",
        I,
        "OAuth flow {name} added",
        ACCEPT,
        "A new way to obtain tokens; existing flows keep working.",
        "openapi",
    ),
    _r(
        "security-scheme-oauth-flow-removed",
        B,
        "OAuth flow {name} removed",
        CHECK_CONFIG,
        "Clients that obtain tokens with this flow cannot any more; use a remaining flow.",
        "openapi",
    ),
    _r(
        "webhook-added",
        I,
        "webhook {name} added",
        ACCEPT,
        "A new event the vendor can send; subscribe if you need it.",
        "openapi",
    ),
    _r(
        "webhook-removed",
        W,
        "webhook {name} removed",
        CHECK_CONFIG,
        "The vendor no longer describes this event; check that you still receive it.",
        "openapi",
    ),
    _r(
        "security-scheme-added",
        I,
        "security scheme {name} added",
        ACCEPT,
        "A new way to authenticate; nothing changes for existing credentials.",
        "openapi",
    ),
    _r(
        "security-scheme-removed",
        W,
        "security scheme {name} removed",
        CHECK_CONFIG,
        "Check that the operations you call still accept your credentials.",
        "openapi",
    ),
    _r(
        "security-scheme-type-changed",
        B,
        "security scheme {name} changed from {before} to {after}",
        CHECK_CONFIG,
        "Credentials are sent another way now; update how the client authenticates.",
        "openapi",
    ),
    _r(
        "security-scheme-oauth-url-changed",
        B,
        "authorization URL of {name} changed from {before} to {after}",
        CHECK_CONFIG,
        "Send users to the new authorization URL.",
        "openapi",
    ),
    _r(
        "security-scheme-oauth-token-url-changed",
        B,
        "token URL of {name} changed from {before} to {after}",
        CHECK_CONFIG,
        "Fetch and refresh tokens at the new URL.",
        "openapi",
    ),
    _r(
        "security-scheme-oauth-scope-added",
        I,
        "scope {after} added to {name}",
        ACCEPT,
        "A new scope exists; request it only if you need it.",
        "openapi",
    ),
    _r(
        "security-scheme-oauth-scope-removed",
        W,
        "scope {before} removed from {name}",
        CHECK_CONFIG,
        "Stop requesting the scope; token requests that name it may fail.",
        "openapi",
    ),
    _r(
        "global-security-requirement-added",
        B,
        "global security requirement {after} added",
        CHECK_CONFIG,
        "Configure the new credentials.",
        "openapi",
    ),
    _r(
        "global-security-requirement-removed",
        I,
        "global security requirement {before} removed",
        ACCEPT,
        "Nothing to do.",
        "openapi",
    ),
    # MCP surface.
    _r(
        "tool-removed",
        B,
        "tool {name} removed",
        REMOVE_TOOL,
        "Calls and saved agent workflows that name the tool fail; remove or replace it.",
        "mcp",
    ),
    _r("tool-added", I, "tool {name} added", ACCEPT, "Backward compatible.", "mcp"),
    _r(
        "tool-description-changed",
        W,
        "description of tool {name} changed",
        REVIEW_DESCRIPTION,
        "The text the model reads changed (rug-pull risk); review it before trusting the tool.",
        "mcp",
    ),
    _r(
        "tool-title-changed",
        I,
        "title of tool {name} changed",
        ACCEPT,
        "Cosmetic.",
        "mcp",
    ),
    _r(
        "tool-annotation-risk-increased",
        W,
        "tool {name}: {detail}",
        REVIEW_DESCRIPTION,
        "The tool may now modify or destroy data; review the permissions you give it.",
        "mcp",
    ),
    _r(
        "tool-annotations-changed",
        I,
        "annotations of tool {name} changed",
        ACCEPT,
        "No risk increase.",
        "mcp",
    ),
    _r(
        "tool-execution-changed",
        I,
        "execution settings of tool {name} changed",
        ACCEPT,
        "Informational.",
        "mcp",
    ),
    _r(
        "tool-metadata-changed",
        I,
        "metadata of tool {name} changed",
        ACCEPT,
        "Informational.",
        "mcp",
    ),
    _r(
        "tool-input-schema-invalid",
        B,
        "input schema of tool {name} is no longer an object schema",
        UPDATE_TOOL,
        "Strict clients reject the tool list; report it to the server's maintainers.",
        "mcp",
    ),
    _r(
        "tool-schema-dialect-changed",
        I,
        "JSON Schema dialect of tool {name} changed",
        ACCEPT,
        "Informational.",
        "mcp",
    ),
    _r(
        "tool-output-schema-added",
        I,
        "output schema of tool {name} added",
        ACCEPT,
        "Structured output is described now.",
        "mcp",
    ),
    _r(
        "tool-output-schema-removed",
        W,
        "output schema of tool {name} removed",
        UPDATE_TOOL,
        "Consumers of structuredContent lose their contract.",
        "mcp",
    ),
    _r(
        "prompt-removed",
        B,
        "prompt {name} removed",
        REMOVE_TOOL,
        "Stop using the prompt.",
        "mcp",
    ),
    _r("prompt-added", I, "prompt {name} added", ACCEPT, "Backward compatible.", "mcp"),
    _r(
        "prompt-description-changed",
        I,
        "description of prompt {name} changed",
        ACCEPT,
        "Informational.",
        "mcp",
    ),
    _r(
        "prompt-argument-added-required",
        B,
        "required argument {detail} added to prompt {name}",
        SEND_REQUIRED,
        "Pass the new argument.",
        "mcp",
    ),
    _r(
        "prompt-argument-added-optional",
        I,
        "optional argument {detail} added to prompt {name}",
        ACCEPT,
        "Backward compatible.",
        "mcp",
    ),
    _r(
        "prompt-argument-became-required",
        B,
        "argument {detail} of prompt {name} became required",
        SEND_REQUIRED,
        "Always pass the argument now.",
        "mcp",
    ),
    _r(
        "prompt-argument-became-optional",
        I,
        "argument {detail} of prompt {name} became optional",
        ACCEPT,
        "Backward compatible.",
        "mcp",
    ),
    _r(
        "prompt-argument-removed",
        W,
        "argument {detail} removed from prompt {name}",
        UPDATE_TOOL,
        "Stop passing the argument.",
        "mcp",
    ),
    _r(
        "resource-template-removed",
        B,
        "resource template {name} removed",
        REMOVE_TOOL,
        "Stop reading resources through this template.",
        "mcp",
    ),
    _r(
        "resource-template-added",
        I,
        "resource template {name} added",
        ACCEPT,
        "Backward compatible.",
        "mcp",
    ),
    _r(
        "resource-template-changed",
        I,
        "resource template {name} changed",
        ACCEPT,
        "Informational.",
        "mcp",
    ),
    _r(
        "resource-removed",
        W,
        "resource {name} removed",
        UPDATE_TOOL,
        "Resource lists are often data-driven; check that you still need it.",
        "mcp",
    ),
    _r("resource-added", I, "resource {name} added", ACCEPT, "Backward compatible.", "mcp"),
    _r(
        "resource-metadata-changed",
        I,
        "metadata of resource {name} changed",
        ACCEPT,
        "Informational.",
        "mcp",
    ),
    _r(
        "capability-removed",
        B,
        "capability {name} no longer advertised",
        REMOVE_TOOL,
        "Everything behind the capability is unavailable now.",
        "mcp",
    ),
    _r(
        "capability-removed-minor",
        W,
        "capability {name} no longer advertised",
        CHECK_CONFIG,
        "An optional feature of the server is gone.",
        "mcp",
    ),
    _r(
        "capability-added",
        I,
        "capability {name} advertised",
        ACCEPT,
        "Backward compatible.",
        "mcp",
    ),
    _r(
        "capability-flags-changed",
        I,
        "flags of capability {name} changed",
        ACCEPT,
        "Informational.",
        "mcp",
    ),
    _r(
        "instructions-changed",
        W,
        "server instructions changed",
        REVIEW_DESCRIPTION,
        "The text the model reads changed; review it.",
        "mcp",
    ),
    _r(
        "server-name-changed",
        W,
        "server name changed from {before} to {after}",
        CHECK_CONFIG,
        "Check that the watch still points at the intended server.",
        "mcp",
    ),
    _r(
        "server-version-changed",
        I,
        "server version changed from {before} to {after}",
        ACCEPT,
        "Informational.",
        "mcp",
    ),
    _r(
        "server-info-metadata-changed",
        I,
        "server metadata changed",
        ACCEPT,
        "Informational.",
        "mcp",
    ),
    _r(
        "protocol-version-changed",
        I,
        "protocol version changed from {before} to {after}",
        ACCEPT,
        "Informational; the tool surface is compared separately.",
        "mcp",
    ),
    # A2A agent card (skills diff like MCP tools; schema findings use the tool-input/-output ids).
    _r(
        "skill-removed",
        B,
        "skill {name} removed",
        REMOVE_TOOL,
        "Delegations that ask the agent for this skill fail; route the task to another skill or "
        "agent.",
        "a2a",
    ),
    _r(
        "skill-added",
        I,
        "skill {name} added",
        ACCEPT,
        "Backward compatible.",
        "a2a",
    ),
    _r(
        "skill-name-changed",
        I,
        "name of skill {name} changed",
        ACCEPT,
        "Cosmetic; the skill id is unchanged.",
        "a2a",
    ),
    _r(
        "skill-description-changed",
        I,
        "description of skill {name} changed",
        ACCEPT,
        "Informational; an orchestrator that picks skills by their description may choose "
        "differently.",
        "a2a",
    ),
    _r(
        "skill-tags-changed",
        I,
        "tags of skill {name} changed",
        ACCEPT,
        "Informational.",
        "a2a",
    ),
    _r(
        "skill-examples-changed",
        I,
        "examples of skill {name} changed",
        ACCEPT,
        "Informational.",
        "a2a",
    ),
    _r(
        "skill-input-mode-removed",
        B,
        "skill {name} no longer accepts {detail}",
        UPDATE_CLIENT,
        "Messages with parts of this media type are refused now; send one the skill still accepts.",
        "a2a",
    ),
    _r(
        "skill-input-mode-added",
        I,
        "skill {name} accepts {detail}",
        ACCEPT,
        "Backward compatible.",
        "a2a",
    ),
    _r(
        "skill-output-mode-removed",
        B,
        "skill {name} no longer produces {detail}",
        UPDATE_CLIENT,
        "Results no longer come in this media type; accept one the skill still produces.",
        "a2a",
    ),
    _r(
        "skill-output-mode-added",
        I,
        "skill {name} produces {detail}",
        ACCEPT,
        "Backward compatible.",
        "a2a",
    ),
    _r(
        "skill-security-requirement-added",
        B,
        "security requirement {after} added to skill {name}",
        CHECK_CONFIG,
        "Configure the new credentials before delegating to the skill.",
        "a2a",
    ),
    _r(
        "skill-security-requirement-removed",
        I,
        "security requirement {before} removed from skill {name}",
        ACCEPT,
        "Nothing to do.",
        "a2a",
    ),
    _r(
        "skill-schema-dialect-changed",
        I,
        "JSON Schema dialect of skill {name} changed",
        ACCEPT,
        "Informational.",
        "a2a",
    ),
    _r(
        "skill-input-schema-invalid",
        B,
        "input schema of skill {name} is no longer an object schema",
        UPDATE_TOOL,
        "Callers that build the skill's input from its schema break; report it to the agent's "
        "maintainers.",
        "a2a",
    ),
    _r(
        "skill-output-schema-added",
        I,
        "output schema of skill {name} added",
        ACCEPT,
        "The skill's result is described now.",
        "a2a",
    ),
    _r(
        "skill-output-schema-removed",
        W,
        "output schema of skill {name} removed",
        UPDATE_TOOL,
        "Consumers of the skill's structured result lose their contract.",
        "a2a",
    ),
    _r(
        "agent-default-input-mode-removed",
        B,
        "the agent no longer accepts {detail} by default",
        UPDATE_CLIENT,
        "Skills without modes of their own refuse parts of this media type now; send one the agent"
        " still accepts.",
        "a2a",
    ),
    _r(
        "agent-default-input-mode-added",
        I,
        "the agent accepts {detail} by default",
        ACCEPT,
        "Backward compatible.",
        "a2a",
    ),
    _r(
        "agent-default-output-mode-removed",
        B,
        "the agent no longer produces {detail} by default",
        UPDATE_CLIENT,
        "Skills without modes of their own no longer answer in this media type; accept one the "
        "agent still produces.",
        "a2a",
    ),
    _r(
        "agent-default-output-mode-added",
        I,
        "the agent produces {detail} by default",
        ACCEPT,
        "Backward compatible.",
        "a2a",
    ),
    _r(
        "agent-url-changed",
        W,
        "agent endpoint changed from {before} to {after}",
        CHECK_CONFIG,
        "Calls to the old endpoint may fail; check that the watch and your client still point at "
        "the intended agent.",
        "a2a",
    ),
    _r(
        "agent-transport-changed",
        W,
        "preferred transport changed from {before} to {after}",
        CHECK_CONFIG,
        "Check that your A2A client speaks the new transport.",
        "a2a",
    ),
    _r(
        "agent-security-requirement-added",
        B,
        "security requirement {after} added",
        CHECK_CONFIG,
        "Configure the new credentials before calling the agent.",
        "a2a",
    ),
    _r(
        "agent-security-requirement-removed",
        I,
        "security requirement {before} removed",
        ACCEPT,
        "Nothing to do.",
        "a2a",
    ),
    _r(
        "agent-capability-removed",
        W,
        "capability {name} no longer supported",
        CHECK_CONFIG,
        "Fall back to polling the task (streaming) or stop registering webhooks (push "
        "notifications).",
        "a2a",
    ),
    _r(
        "agent-capability-added",
        I,
        "capability {name} supported",
        ACCEPT,
        "Backward compatible.",
        "a2a",
    ),
    _r(
        "agent-capabilities-changed",
        I,
        "capabilities changed",
        ACCEPT,
        "Informational.",
        "a2a",
    ),
    _r(
        "agent-name-changed",
        W,
        "agent name changed from {before} to {after}",
        CHECK_CONFIG,
        "Check that the watch still points at the intended agent.",
        "a2a",
    ),
    _r(
        "agent-version-changed",
        I,
        "agent version changed from {before} to {after}",
        ACCEPT,
        "Informational.",
        "a2a",
    ),
    _r(
        "agent-protocol-version-changed",
        I,
        "A2A protocol version changed from {before} to {after}",
        ACCEPT,
        "Informational; the skills are compared separately.",
        "a2a",
    ),
    _r(
        "agent-description-changed",
        I,
        "agent description changed",
        ACCEPT,
        "Informational.",
        "a2a",
    ),
    _r(
        "agent-metadata-changed",
        I,
        "agent metadata changed",
        ACCEPT,
        "Informational.",
        "a2a",
    ),
)


# New constraints where there were none (CONTRACT.md: request warning).
NEW_CONSTRAINT_ASPECTS = frozenset(
    {
        f"{stem}-set"
        for stem in (
            "max",
            "min",
            "exclusive-max",
            "exclusive-min",
            "max-length",
            "min-length",
            "max-items",
            "min-items",
            "max-properties",
            "min-properties",
            "max-contains",
            "min-contains",
            "multiple-of",
            "unique-items",
        )
    }
    | {"pattern-added", "format-added"}
)


def adjust_for_subject(prefix: str, aspect: str, severity: Severity) -> Severity:
    """Apply the MCP-specific classification (docs/decisions.md, "Diff engines").

    Tool output schemas describe optional `structuredContent` (servers also send text
    content), so no output-schema change is worse than a warning. A new bound on a tool
    input is sent to the model with the schema on every `tools/list`, so it is information.
    """
    if prefix.startswith("tool-output") and severity is B:
        return W
    if prefix.startswith("tool-input") and aspect in NEW_CONSTRAINT_ASPECTS:
        return I
    return severity


def build_catalog() -> dict[str, Rule]:
    """Expand the schema families and add the contract rules into one id -> rule map."""
    catalog: dict[str, Rule] = {}
    for fam in SCHEMA_FAMILIES:
        for direction, subjects in SUBJECTS.items():
            for root, nested in subjects:
                prefixes = (
                    (nested,) if fam.nested_only else (root,) if fam.root_only else (root, nested)
                )
                for prefix in prefixes:
                    rule_id = f"{prefix}-{fam.aspect}"
                    catalog[rule_id] = Rule(
                        id=rule_id,
                        severity=adjust_for_subject(
                            prefix, fam.aspect, fam.severity_for(direction, prefix)
                        ),
                        summary=fam.summary,
                        agent_action=fam.action_for(direction),
                        hint=fam.hint_for(direction),
                        family=fam.aspect,
                        direction=direction,
                    )
    for rule in CONTRACT_RULES:
        if rule.id in catalog:
            raise ValueError(f"duplicate rule id {rule.id}")
        catalog[rule.id] = rule
    return catalog


# Nested-only aspects found at the root of a subject, by the aspect that names them there.
ROOT_ASPECTS = {
    "deprecated": "schema-deprecated",
    "deprecated-with-sunset": "schema-deprecated-with-sunset",
    "deprecated-sunset-invalid": "schema-deprecated-sunset-invalid",
    "reactivated": "schema-reactivated",
    "stability-decreased": "schema-stability-decreased",
    "stability-increased": "schema-stability-increased",
    "stability-invalid": "schema-stability-invalid",
}
CATALOG: dict[str, Rule] = build_catalog()
FAMILIES: dict[str, SchemaFamily] = {fam.aspect: fam for fam in SCHEMA_FAMILIES}


def aspect_severity(aspect: str, direction: Direction) -> Severity:
    """The severity of a schema aspect for a property in a direction (an aspect outside the
    families counts as breaking: the conservative reading)."""
    fam = FAMILIES.get(aspect)
    if fam is None:
        return B
    return fam.severity_for(direction, f"{direction.value}-property")


def breaks(aspect: str, direction: Direction) -> bool:
    """Whether a schema aspect is breaking for a property in a direction."""
    return aspect_severity(aspect, direction) is B


def get_rule(rule_id: str) -> Rule:
    """Return the rule with this id; KeyError for an unknown id."""
    return CATALOG[rule_id]
