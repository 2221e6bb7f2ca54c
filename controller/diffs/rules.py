"""The rule catalog: every kind of change driftgate reports, with its fixed classification.

Schema-level changes come in *families* (one aspect such as `max-length-decreased`) that carry
one severity per direction (request = data we send, response = data we read, CONTRACT.md) and
expand into concrete, stable rule ids by subject: `request-property-max-length-decreased`,
`response-body-max-length-decreased`, `tool-input-property-...` and so on. Contract-level
rules (operations, parameters, tools, prompts ...) are listed one by one. Rule ids are never
renamed. Each declaration carries its reason, why it has its severity (who breaks, and how):
one per side for a family, one for a contract rule; a breaking one also carries what a client
sees fail (`fails`, filled by `controller/diffs/fails.py`). `docs/rules.md` is rendered from
this module by `controller/diffs/rulesdoc.py`.
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
VERIFY_CARD = "verify_agent_card"
REVIEW_LOCK = "review_tool_lock"
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
    VERIFY_CARD,
    REVIEW_LOCK,
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
    """One concrete rule: a stable id, its severity, how to explain a finding, why it has
    that severity (who breaks, and how) and, when it breaks, what a client sees fail."""

    id: str
    severity: Severity
    summary: str
    agent_action: str
    hint: str
    family: str = ""
    direction: Direction | None = None
    reason: str = ""
    fails: str = ""
    # The run gate's reason token a non-ignored finding of this rule adds to
    # `breaking_drift` (SPEC.md "Reason tokens"), when it has one of its own.
    gate_reason: str = ""


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
    # Why each side has its severity: who breaks, and how (docs/rules.md).
    request_reason: str = ""
    response_reason: str = ""
    # What a client sees fail on a side where the family breaks ("" elsewhere).
    request_fails: str = ""
    response_fails: str = ""

    def hint_for(self, direction: Direction) -> str:
        """The hint of a rule of this family on one side: the side's own, else `hint`."""
        own = self.request_hint if direction is Direction.REQUEST else self.response_hint
        return own or self.hint

    def reason_for(self, direction: Direction) -> str:
        """Why a rule of this family has its severity on one side."""
        return self.request_reason if direction is Direction.REQUEST else self.response_reason

    def fails_for(self, direction: Direction) -> str:
        """What a client sees fail through a rule of this family on one side ("" if none)."""
        return self.request_fails if direction is Direction.REQUEST else self.response_fails

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
    *,
    reasons: tuple[str, str],
    fails: tuple[str, str] = ("", ""),
    **kw: object,
) -> SchemaFamily:
    """A family; `hint` serves every side without a hint of its own (`response_hint`, or
    `request_hint` among `kw`); `reasons` says why each side (request, response) has its
    severity, `fails` what a client sees fail on each side where it breaks."""
    return SchemaFamily(
        aspect,
        request,
        response,
        summary,
        hint,
        response_hint=response_hint,
        request_reason=reasons[0],
        response_reason=reasons[1],
        request_fails=fails[0],
        response_fails=fails[1],
        **kw,  # type: ignore[arg-type]
    )


# Reason phrases shared by families (why a side breaks or not, docs/rules.md).
_SAFE_SEND = "Senders are unaffected: everything they sent is still accepted."
_SAFE_READ = "Readers are unaffected: they get nothing they did not get before."
_REFUSED = "Senders break: values they sent before are refused now."
_UNEXPECTED = "Readers break: they may get values their code does not expect."
_NEW_LIMIT = (
    "Senders may break: values outside the new limit are refused (a warning: what they send "
    "may already fit, CONTRACT.md)."
)
_LIMIT_LOST = "Readers break: values outside the old limit may come now."
_NOTHING = "Nobody breaks: the values allowed are the same."


# What a client sees fail (`fails=`), shared by families. Request-side texts open with {call}
# (`A request to POST /v1/charges`), response-side ones with {reader} (`A reader of GET
# /v1/refunds/{id} 200`); {field} is the property, parameter or header; {before}/{after} the
# old and new value (`{before:fallback words}` when absent); controller/diffs/fails.py fills them.
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
        _f(
            f"{name}-{tighter}",
            B,
            I,
            f"{label} tightened from {{before}} to {{after}}",
            *_TIGHTER,
            reasons=(_REFUSED, _SAFE_READ),
            fails=(_REFUSED_BOUND.replace("{label}", label), ""),
        ),
        _f(
            f"{name}-{looser}",
            I,
            loose,
            f"{label} relaxed from {{before}} to {{after}}",
            *_LOOSER,
            reasons=(_SAFE_SEND, _UNEXPECTED),
            fails=("", _WIDER_BOUND.replace("{label}", label)),
        ),
        _f(
            f"{name}-set",
            W,
            I,
            f"{label} set to {{after}}",
            *_NEW_BOUND,
            reasons=(_NEW_LIMIT, _SAFE_READ),
        ),
        _f(
            f"{name}-unset",
            I,
            loose,
            f"{label} {{before}} removed",
            *_DROPPED_BOUND,
            reasons=(_SAFE_SEND, _LIMIT_LOST),
            fails=("", _LOST_BOUND.replace("{label}", label)),
        ),
    ]


# Upper bounds on a value's size (its length, item or property count): raised or dropped on
# a response they are warnings (docs/decisions.md, "Response bounds"). A lower size bound
# dropped stays breaking: a reader may take the first item of a list that can now be empty.
_SIZE_BOUNDS = frozenset({"max-length", "max-items", "max-properties"})


# Why a keyword that restricts values (contains, if, not ...) has its severity per side when
# added, and when removed.
_RESTRICTED = (_REFUSED, _SAFE_READ)
_UNRESTRICTED = (_SAFE_SEND, _UNEXPECTED)


def _pair(
    aspect: str,
    label: str,
    added_request: Severity = B,
    reasons: tuple[tuple[str, str], tuple[str, str]] = (_RESTRICTED, _UNRESTRICTED),
) -> list[SchemaFamily]:
    """Families for a keyword that restricts values when added (contains, if, ...); the hint
    of each side follows its severity (a change that is information needs no action).
    `reasons` are the added family's and the removed family's (request, response); what
    fails follows the side that breaks."""
    removed_request = I if added_request is B else B
    refused = f"{{call}} whose {{field}} does not satisfy the {label} now in force is now refused."
    wider = (
        f"{{reader}} that relies on {{field}} satisfying the old {label} may now get values "
        "that do not."
    )
    return [
        _f(
            f"{aspect}-added",
            added_request,
            I if added_request is B else B,
            f"{label} added",
            *_restriction_hints(added_request, I if added_request is B else B),
            reasons=reasons[0],
            fails=(refused, "") if added_request is B else ("", wider),
        ),
        _f(
            f"{aspect}-removed",
            removed_request,
            B if added_request is B else I,
            f"{label} removed",
            *_restriction_hints(removed_request, B if added_request is B else I),
            reasons=reasons[1],
            fails=("", wider) if added_request is B else (refused, ""),
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
        reasons=(
            "Senders break: calls without the new field are refused.",
            "Readers are unaffected: they get one field more.",
        ),
        fails=(_REQUIRED, ""),
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
        reasons=(
            "Senders break: a required field must be sent, whatever its default.",
            "Readers are unaffected: they get one field more.",
        ),
        fails=(_REQUIRED_DEFAULT, ""),
    ),
    _f(
        "added-optional",
        I,
        I,
        "optional property {name} added",
        "Backward compatible; use the new field when useful.",
        action=ACCEPT,
        nested_only=True,
        reasons=(
            "Senders are unaffected: the field may be left out.",
            "Readers are unaffected: they may get one field more.",
        ),
    ),
    _f(
        "removed",
        W,
        W,
        "property {name} removed",
        "Stop sending the field; it is ignored or rejected now.",
        nested_only=True,
        response_hint="Stop reading the field; responses no longer carry it.",
        reasons=(
            "Senders may break: the field is ignored or refused now (a warning, CONTRACT.md).",
            "Readers may break: an optional field they read no longer comes (a warning).",
        ),
    ),
    _f(
        "removed-required",
        W,
        B,
        "required property {name} removed",
        "Readers that relied on the field break; update the client model.",
        nested_only=True,
        request_hint="Stop sending the field; it is ignored or rejected now.",
        reasons=(
            "Senders may break: the field is ignored or refused now (a warning, CONTRACT.md).",
            "Readers break: a field they were promised no longer comes.",
        ),
        fails=(
            "",
            "{reader} that expects {field} finds it missing: it no longer comes.",
        ),
    ),
    _f(
        "removed-closed-schema",
        B,
        W,
        "property {name} removed from a schema that forbids extra properties",
        "Calls that still send the field are rejected; stop sending it.",
        nested_only=True,
        response_hint="Stop reading the field; responses no longer carry it.",
        reasons=(
            "Senders break: the schema refuses unknown fields, so calls that send it are refused.",
            "Readers may break: the field no longer comes (a warning).",
        ),
        fails=(
            "{call} that sends {field} is now refused: the schema forbids unknown properties.",
            "",
        ),
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
        reasons=(
            "Senders break: calls without the field are refused.",
            "Readers are unaffected: the field now always comes.",
        ),
        fails=(_REQUIRED, ""),
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
        reasons=(
            "Senders break: a required field must be sent, whatever its default.",
            "Readers are unaffected: the field now always comes.",
        ),
        fails=(_REQUIRED_DEFAULT, ""),
    ),
    _f(
        "became-optional",
        I,
        B,
        "property {name} became optional",
        "Readers must handle the field being absent.",
        nested_only=True,
        request_hint="Backward compatible; you may leave the field out now.",
        reasons=(
            "Senders are unaffected: they may still send it.",
            "Readers break: a field they relied on may be missing.",
        ),
        fails=(
            "",
            "{reader} that expects {field} on every response may find it missing.",
        ),
    ),
    # Types.
    _f(
        "type-changed",
        B,
        B,
        "type changed from {before} to {after}",
        "The value has an incompatible type now; update the client model.",
        reasons=(
            "Senders break: values of the old type are refused.",
            "Readers break: values come in a type their code does not parse.",
        ),
        fails=(
            "{call} that sends {field} as {before:the old type} is now refused: it must be "
            "{after:another type}.",
            "{reader} that expects {field} as {before:the old type} now gets {after:another type}.",
        ),
    ),
    _f(
        "type-generalized",
        I,
        B,
        "type widened from {before} to {after}",
        "Readers get values they may not parse (for example decimals where integers were).",
        request_hint="Backward compatible; the old values are still accepted.",
        reasons=(
            "Senders are unaffected: the old type is still accepted.",
            "Readers break: values of the wider type (decimals where integers were) may come.",
        ),
        fails=(
            "",
            "{reader} that expects {field} as {before:the old type} may now get "
            "{after:a wider type}.",
        ),
    ),
    _f(
        "type-specialized",
        B,
        I,
        "type narrowed from {before} to {after}",
        "Senders must restrict their values to the narrower type.",
        response_hint="Responses carry a subset of the old values; nothing to do.",
        reasons=(
            "Senders break: values outside the narrower type are refused.",
            "Readers are unaffected: the narrower type is one they already parse.",
        ),
        fails=(
            "{call} that sends {field} as {before:the old type} is now refused unless it is "
            "{after:the narrower type}.",
            "",
        ),
    ),
    _f(
        "list-of-types-widened",
        I,
        B,
        "list of types widened from {before} to {after}",
        "Readers may get values of a type they do not handle.",
        request_hint="Backward compatible; the old types are still accepted.",
        reasons=(
            "Senders are unaffected: every old type is still accepted.",
            "Readers break: values of a type they do not handle may come.",
        ),
        fails=(
            "",
            "{reader} that expects {field} as {before:the old types} may now get "
            "{after:other types}.",
        ),
    ),
    _f(
        "list-of-types-narrowed",
        B,
        I,
        "list of types narrowed from {before} to {after}",
        "Senders may no longer send some of the old types.",
        response_hint="Responses carry fewer types than before; nothing to do.",
        reasons=(
            "Senders break: values of the dropped types are refused.",
            "Readers are unaffected: they get fewer types.",
        ),
        fails=(
            "{call} that sends {field} as {before:one of the old types} is now refused unless "
            "it is {after:one of the remaining types}.",
            "",
        ),
    ),
    _f(
        "became-nullable",
        I,
        B,
        "became nullable",
        "Readers must handle null values.",
        request_hint="Backward compatible; null is accepted now.",
        reasons=(
            "Senders are unaffected: null is one more value accepted.",
            "Readers break: null may come where a value always came.",
        ),
        fails=(
            "",
            "{reader} that expects {field} to hold a value may now get null.",
        ),
    ),
    _f(
        "became-not-nullable",
        B,
        I,
        "is no longer nullable",
        "Senders may no longer send null.",
        response_hint="Responses no longer carry null; nothing to do.",
        reasons=(
            "Senders break: null is refused now.",
            "Readers are unaffected: null no longer comes.",
        ),
        fails=(
            "{call} that sends {field} as null is now refused.",
            "",
        ),
    ),
    _f(
        "format-added",
        W,
        I,
        "format {after} added",
        "Values must now follow the format; check what you send.",
        response_hint="Responses follow the format now; nothing to do.",
        reasons=(_NEW_LIMIT, _SAFE_READ),
    ),
    _f(
        "format-removed",
        I,
        W,
        "format {before} removed",
        "Readers may receive values that do not follow the old format.",
        request_hint="Backward compatible; the format is no longer checked.",
        reasons=(
            _SAFE_SEND,
            "Readers may break: values may no longer follow the format.",
        ),
    ),
    _f(
        "format-changed",
        B,
        B,
        "format changed from {before} to {after}",
        "The value representation changed; update serialisation.",
        response_hint="The value representation changed; update parsing.",
        reasons=(
            "Senders break: values in the old format are refused.",
            "Readers break: values come in a format their parsing does not expect.",
        ),
        fails=(
            "{call} that sends {field} in format {before:the old one} is now refused: it must "
            "be {after:another format}.",
            "{reader} that parses {field} as {before:the old format} now gets "
            "{after:another format}.",
        ),
    ),
    _f(
        "format-widened",
        I,
        B,
        "format widened from {before} to {after}",
        "Readers may get values their old type cannot hold; widen the field's type.",
        request_hint="Backward compatible: every value sent before still fits.",
        reasons=(
            "Senders are unaffected: every old value still fits (int32 -> int64).",
            "Readers break: values their old type cannot hold may come (int64 into an int32).",
        ),
        fails=(
            "",
            "{reader} that holds {field} in {before:the old format} may now get values only "
            "{after:the wider format} holds.",
        ),
    ),
    _f(
        "format-narrowed",
        B,
        I,
        "format narrowed from {before} to {after}",
        "Send only values the narrower format holds.",
        response_hint="Backward compatible: every value received still fits the old format.",
        reasons=(
            "Senders break: values only the old format holds are refused.",
            "Readers are unaffected: the values fit the old format too.",
        ),
        fails=(
            "{call} that sends {field} beyond {after:the narrower format} (was {before:}) is "
            "now refused.",
            "",
        ),
    ),
    _f(
        "keyword-no-effect",
        I,
        I,
        "changed from {before} to {after}, which allows the same values",
        "Nothing to do: the values allowed are the same.",
        action=ACCEPT,
        reasons=(_NOTHING, _NOTHING),
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
        reasons=(
            "Senders are unaffected: one more value is accepted.",
            "Readers may break: a value their code does not know may come (a warning).",
        ),
    ),
    _f(
        "enum-value-corrected",
        I,
        I,
        "enum value {before} corrected to {after} (documentation markup removed)",
        "Backward compatible; the value a server took is listed as it is sent now.",
        response_hint="The value readers get is listed as it comes now; nothing to do.",
        reasons=(
            "Senders are unaffected: the marked-up text was never a value a server took; the "
            "value it meant is still listed.",
            "Readers are unaffected: the value that comes is the one listed now.",
        ),
    ),
    _f(
        "enum-value-removed",
        B,
        I,
        "enum value {before} removed",
        "Stop sending the removed value.",
        response_hint="Responses no longer carry the removed value; nothing to do.",
        reasons=(
            "Senders break: the removed value is refused.",
            "Readers are unaffected: one value fewer comes.",
        ),
        fails=(
            "{call} that sends {field} = {before!v:the removed value} is now refused: the enum "
            "no longer has it.",
            "",
        ),
    ),
    _f(
        "xml-changed",
        W,
        W,
        "XML representation changed from {before} to {after}",
        "XML bodies name, wrap or namespace this value another way now; JSON is unaffected.",
        action=UPDATE_CLIENT,
        reasons=(
            "Senders of XML may break: the element is named, wrapped or namespaced another way.",
            "Readers of XML may break: the element is named, wrapped or namespaced another way.",
        ),
    ),
    _f(
        "x-extensible-enum-value-added",
        I,
        I,
        "extensible enum value {after} added",
        "Known values grew; readers of an extensible enum already accept unknown values.",
        action=ACCEPT,
        request_hint="Backward compatible; the new value is accepted.",
        reasons=(
            "Senders are unaffected: one more value is known.",
            "Readers are unaffected: an extensible enum promised unknown values from the start.",
        ),
    ),
    _f(
        "x-extensible-enum-value-removed",
        B,
        I,
        "extensible enum value {before} removed",
        "Stop sending the removed value.",
        response_hint="Readers of an extensible enum already accept unknown values; nothing to do.",
        reasons=(
            "Senders break: the value is no longer accepted.",
            "Readers are unaffected: one value fewer comes.",
        ),
        fails=(
            "{call} that sends {field} = {before!v:the removed value} is now refused: the "
            "extensible enum no longer has it.",
            "",
        ),
    ),
    _f(
        "became-enum",
        B,
        I,
        "became an enum of {after}",
        "Only the listed values are accepted now.",
        response_hint="Responses carry only the listed values now; nothing to do.",
        reasons=(
            "Senders break: values outside the list are refused.",
            "Readers are unaffected: they get fewer values.",
        ),
        fails=(
            "{call} that sends {field} outside {after!v:the new list} is now refused.",
            "",
        ),
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
        reasons=(
            "Senders are unaffected: every value is accepted now.",
            "Readers may break: values outside the old list may come (a warning).",
        ),
    ),
    _f(
        "const-added",
        B,
        I,
        "constant {after} imposed",
        "Only the constant value is accepted now.",
        response_hint="Responses carry only the constant now; nothing to do.",
        reasons=(
            "Senders break: only the constant is accepted.",
            "Readers are unaffected: they always get the same value.",
        ),
        fails=(
            "{call} that sends {field} other than {after!v:the constant} is now refused.",
            "",
        ),
    ),
    _f(
        "const-removed",
        I,
        B,
        "constant {before} removed",
        "Readers may receive other values than the old constant.",
        request_hint="Backward compatible; other values are accepted now.",
        reasons=(
            "Senders are unaffected: any value is accepted.",
            "Readers break: other values than the constant may come.",
        ),
        fails=(
            "",
            "{reader} that expects {field} = {before!v:the constant} may now get other values.",
        ),
    ),
    _f(
        "const-changed",
        B,
        B,
        "constant changed from {before} to {after}",
        "The fixed value changed; update the client.",
        reasons=(
            "Senders break: the old constant is refused.",
            "Readers break: another value than the one they check for comes.",
        ),
        fails=(
            "{call} that sends {field} = {before!v:the old constant} is now refused: only "
            "{after!v:the new one} is accepted.",
            "{reader} that checks {field} = {before!v:the old constant} now gets "
            "{after!v:another value}.",
        ),
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
        reasons=(
            "Senders break: no value the old bounds allowed is accepted now.",
            "Readers break: every value now lies where the old bounds said none would.",
        ),
        fails=(
            "{call} whose {field} lies in the old range is now refused: the ranges do not meet "
            "({after:}).",
            "{reader} that relies on {field} staying in the old range gets only values outside "
            "it now ({after:}).",
        ),
    ),
    _f(
        "known-value-refused",
        B,
        I,
        "the value {before}, named by the schema itself, is refused now ({after})",
        "A value the contract offered (an enum value, default or example) is refused now; "
        "stop sending it.",
        response_hint="Responses no longer carry that value; nothing to do.",
        reasons=(
            "Senders break: a value the schema itself offered (enum, default, example) is refused.",
            "Readers are unaffected: that value no longer comes.",
        ),
        fails=(
            "{call} that sends {field} as {before:the value the schema offered} is now refused "
            "({after:}).",
            "",
        ),
    ),
    _f(
        "multiple-of-changed",
        B,
        B,
        "multipleOf changed from {before} to {after}",
        "Allowed steps changed; check values on both sides.",
        reasons=(
            "Senders break: some multiples of the old step are refused.",
            "Readers break: values between the old steps may come.",
        ),
        fails=(
            "{call} that sends {field} as a multiple of {before:the old step} is refused unless "
            "it is a multiple of {after:the new step}.",
            "{reader} that expects {field} in steps of {before:the old step} now gets steps of "
            "{after:the new one}.",
        ),
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
        reasons=(
            "Nobody is refused: in XML, forms and plain text nothing on the wire tells the "
            "types apart.",
            "Readers parse the same text either way: nothing on the wire tells the types apart.",
        ),
    ),
    _f(
        "multiple-of-generalized",
        I,
        B,
        "multipleOf relaxed from {before} to {after}",
        "Every old multiple is still valid; readers may now receive values between them.",
        request_hint="Backward compatible; every old multiple is still accepted.",
        reasons=(_SAFE_SEND, _UNEXPECTED),
        fails=(
            "",
            "{reader} that expects {field} in steps of {before:the old step} may now get values "
            "between them (steps of {after:}).",
        ),
    ),
    _f(
        "multiple-of-specialized",
        B,
        I,
        "multipleOf tightened from {before} to {after}",
        "Send multiples of the new step.",
        response_hint="Responses carry multiples of the new step; nothing to do.",
        reasons=(_REFUSED, _SAFE_READ),
        fails=(
            "{call} that sends {field} as a multiple of {before:the old step} is refused unless "
            "it is a multiple of {after:the new step}.",
            "",
        ),
    ),
    _f(
        "multiple-of-set",
        W,
        I,
        "multipleOf {after} set",
        *_NEW_BOUND,
        reasons=(_NEW_LIMIT, _SAFE_READ),
    ),
    _f(
        "multiple-of-unset",
        I,
        W,
        "multipleOf {before} removed",
        *_DROPPED_BOUND,
        reasons=(
            _SAFE_SEND,
            "Readers may break: values between the old steps may come.",
        ),
    ),
    _f(
        "unique-items-set",
        W,
        I,
        "items must be unique now",
        "Do not send duplicate items.",
        response_hint="Responses carry no duplicate items now; nothing to do.",
        reasons=(
            "Senders may break: lists with duplicates are refused (a warning: theirs may have "
            "none).",
            _SAFE_READ,
        ),
    ),
    _f(
        "unique-items-unset",
        I,
        W,
        "items are no longer guaranteed unique",
        "Readers may receive duplicates.",
        request_hint="Backward compatible; duplicates are accepted now.",
        reasons=(
            _SAFE_SEND,
            "Readers may break: duplicates may come (a warning).",
        ),
    ),
    # Patterns.
    _f(
        "pattern-added",
        W,
        I,
        "pattern {after} added",
        "Values must now match the pattern; check what you send.",
        response_hint="Responses match the pattern now; nothing to do.",
        reasons=(_NEW_LIMIT, _SAFE_READ),
    ),
    _f(
        "pattern-changed",
        W,
        I,
        "pattern changed from {before} to {after}",
        "Check that the values you send match the new pattern.",
        response_hint="Responses match the new pattern; check code that relies on the old one.",
        reasons=(
            "Senders may break: values that matched the old pattern may not match the new one "
            "(patterns are not compared as languages: a warning).",
            "Readers are unaffected unless they validate against the old pattern.",
        ),
    ),
    _f(
        "pattern-generalized",
        I,
        I,
        "pattern relaxed from {before} to {after}",
        "The new pattern accepts any string.",
        reasons=(
            _SAFE_SEND,
            "Readers are unaffected unless they validated the value.",
        ),
    ),
    _f(
        "pattern-removed",
        I,
        I,
        "pattern {before} removed",
        "Values are no longer checked against the pattern.",
        reasons=(
            _SAFE_SEND,
            "Readers are unaffected unless they validated the value.",
        ),
    ),
    # Defaults.
    _f(
        "default-value-added",
        I,
        I,
        "default {after} added",
        "Behaviour when the field is omitted may change.",
        overrides={"request-parameter": W},
        reasons=(
            "Senders that leave the field out get the default applied; for a request parameter "
            "(breaking) the server now acts as if they had sent it.",
            "Readers are unaffected: a default documents what comes when nothing is said.",
        ),
        fails=(_DEFAULT, ""),
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
        reasons=(
            "Senders that leave the field out get another behaviour; for a request parameter "
            "(breaking) silently.",
            "Readers are unaffected: a default documents what comes when nothing is said.",
        ),
        fails=(_DEFAULT, ""),
    ),
    _f(
        "default-value-removed",
        I,
        I,
        "default {before} removed",
        "Behaviour when the field is omitted may change.",
        overrides={"request-parameter": W},
        reasons=(
            "Senders that leave the field out no longer know what applies; for a request "
            "parameter (breaking) the behaviour may change silently.",
            "Readers are unaffected: a default documents what comes when nothing is said.",
        ),
        fails=(_DEFAULT, ""),
    ),
    # Object shape.
    _f(
        "additional-properties-forbidden",
        W,
        I,
        "additional properties are forbidden now",
        "Calls with extra keys are rejected now; send only documented fields.",
        response_hint="Responses carry only documented keys now; nothing to do.",
        reasons=(
            "Senders may break: calls with undocumented keys are refused (a warning: theirs may "
            "have none).",
            _SAFE_READ,
        ),
    ),
    _f(
        "additional-properties-unconstrained",
        I,
        W,
        "the schema for undocumented keys was dropped: any value is allowed there now",
        "Backward compatible; values of undocumented keys are not checked now.",
        response_hint="Code that reads keys it does not know by name (iterating the map) may "
        "get values of any shape; documented properties are compared on their own.",
        reasons=(
            "Senders are unaffected: more values are accepted.",
            "Readers need a look, no more: only code iterating undocumented keys meets a new "
            "shape (a warning).",
        ),
    ),
    _f(
        "additional-properties-constrained",
        W,
        I,
        "undocumented keys must now match a schema",
        "Calls whose extra keys do not match the new schema are refused; check what you "
        "send beyond the documented fields.",
        response_hint="Values under undocumented keys are described now; nothing to do.",
        reasons=(
            "Senders may break: undocumented keys they send must match the new schema (a "
            "warning: few send undocumented keys).",
            "Readers are unaffected: those values are described now.",
        ),
    ),
    _f(
        "additional-properties-allowed",
        I,
        I,
        "additional properties are allowed now",
        "Backward compatible; extra keys are accepted now.",
        response_hint="Readers may see unknown keys; ignore the ones you do not know.",
        reasons=(
            _SAFE_SEND,
            "Readers are unaffected: unknown keys are ignored by tolerant readers.",
        ),
    ),
    # Composition.
    _f(
        "one-of-added",
        I,
        B,
        "oneOf alternative {after} added",
        "Readers must handle the new alternative.",
        request_hint="Backward compatible; the new alternative is accepted.",
        reasons=(
            "Senders are unaffected: one more shape is accepted.",
            "Readers break: a shape their code does not handle may come.",
        ),
        fails=(
            "",
            "{reader} of {field} may now get the new alternative {after:}.",
        ),
    ),
    _f(
        "one-of-removed",
        B,
        I,
        "oneOf alternative {before} removed",
        "Stop sending the removed alternative.",
        response_hint="Responses no longer carry the removed alternative; nothing to do.",
        reasons=(
            "Senders break: values of the removed shape are refused.",
            "Readers are unaffected: one shape fewer comes.",
        ),
        fails=(
            "{call} that sends {field} as alternative {before:the removed one} is now refused.",
            "",
        ),
    ),
    _f(
        "any-of-added",
        I,
        I,
        "anyOf alternative {after} added",
        "A new alternative is accepted.",
        response_hint="Readers may get the new alternative.",
        reasons=(
            "Senders are unaffected: one more shape is accepted.",
            "Readers are unaffected as the field's reference reads it (info): the new shape may "
            "overlap ones they handle.",
        ),
    ),
    _f(
        "any-of-removed",
        B,
        I,
        "anyOf alternative {before} removed",
        "Stop sending the removed alternative.",
        response_hint="Responses no longer carry the removed alternative; nothing to do.",
        reasons=(
            "Senders break: values of the removed shape are refused.",
            "Readers are unaffected: one shape fewer comes.",
        ),
        fails=(
            "{call} that sends {field} as alternative {before:the removed one} is now refused.",
            "",
        ),
    ),
    _f(
        "all-of-added",
        B,
        I,
        "allOf subschema {after} added",
        "Data must satisfy an additional subschema.",
        response_hint="Responses satisfy an additional subschema; nothing to do.",
        reasons=(
            "Senders break: values must satisfy one more subschema.",
            "Readers are unaffected: what comes satisfies more.",
        ),
        fails=(
            "{call} whose {field} does not satisfy the added subschema {after:} is now refused.",
            "",
        ),
    ),
    _f(
        "all-of-removed",
        W,
        I,
        "allOf subschema {before} removed",
        "A subschema no longer applies; review the fields it defined.",
        reasons=(
            "Senders may break: what the subschema defined may be ignored now (a warning).",
            "Readers are unaffected as far as the shape goes (info).",
        ),
    ),
    _f(
        "all-of-added-annotation-only",
        I,
        I,
        "allOf subschema {after} with annotations only added",
        "Documentation only; no effect on data.",
        reasons=(_NOTHING, _NOTHING),
    ),
    _f(
        "all-of-removed-annotation-only",
        I,
        I,
        "allOf subschema {before} with annotations only removed",
        "Documentation only; no effect on data.",
        reasons=(_NOTHING, _NOTHING),
    ),
    _f(
        "any-of-became-one-of",
        W,
        I,
        "anyOf became oneOf over the same alternatives",
        "A value that matches more than one alternative is rejected now; send values that "
        "match exactly one.",
        response_hint="Responses match exactly one alternative now; nothing to do.",
        reasons=(
            "Senders may break: a value that matches two alternatives is refused now (a warning).",
            "Readers are unaffected: what comes matches exactly one alternative.",
        ),
    ),
    _f(
        "one-of-became-any-of",
        I,
        W,
        "oneOf became anyOf over the same alternatives",
        "A value may now match several alternatives; do not rely on exactly one matching.",
        reasons=(
            "Senders are unaffected: more values are accepted.",
            "Readers may break: a value may match several alternatives now (a warning).",
        ),
    ),
    _f(
        "wrapped-in-one-of-original-preserved",
        W,
        B,
        "schema became oneOf with {after} alternatives, the old shape kept as one",
        "Old data still fits unless it also matches another alternative (oneOf rejects that); "
        "check what you send.",
        response_hint="Readers may get the new alternatives; the old shape is one of them.",
        reasons=(
            "Senders may break: an old value that also matches another alternative is refused "
            "(a warning).",
            "Readers break: values of the new alternatives may come.",
        ),
        fails=(
            "",
            "{reader} that expects {field} in the old shape may now get one of the other "
            "alternatives.",
        ),
    ),
    _f(
        "wrapped-in-any-of",
        I,
        B,
        "schema became anyOf with {after} alternatives, the old shape kept as one",
        "Old data still fits; readers may get the new alternatives.",
        request_hint="Backward compatible; the old shape is still accepted.",
        reasons=(
            "Senders are unaffected: the old shape is one of the alternatives.",
            "Readers break: values of the new alternatives may come.",
        ),
        fails=(
            "",
            "{reader} that expects {field} in the old shape may now get one of the other "
            "alternatives.",
        ),
    ),
    _f(
        "restructured",
        W,
        B,
        "schema restructured ({before} -> {after}); the old shape is not kept as an alternative",
        "Review the new shape against what you send.",
        response_hint="Review the new shape against what you read.",
        reasons=(
            "Senders may break: the old shape is not kept as an alternative (a warning: it may "
            "still fit).",
            "Readers break: values come in a shape their model does not describe.",
        ),
        fails=("", _SHAPE),
    ),
    _f(
        "undeclared-became-required",
        B,
        I,
        "{name}, a property the schema does not define, became required",
        "Send the newly required field (its shape is not described; ask the vendor).",
        response_hint="Responses carry the field now; nothing to do.",
        reasons=(
            "Senders break: a call without the field is refused, and nothing says what to send.",
            "Readers are unaffected: one more field always comes.",
        ),
        fails=(_REQUIRED, ""),
    ),
    _f(
        "undeclared-became-optional",
        I,
        W,
        "{name}, a property the schema does not define, is no longer required",
        "Backward compatible; the field need not be sent.",
        response_hint="No client model has this field (it is not defined); code that reads "
        "it by name should allow it to be missing.",
        reasons=(
            "Senders are unaffected: the field need not be sent.",
            "Readers need a look, no more: no model has the field, so only code reading it by "
            "name can miss it (a warning).",
        ),
    ),
    _f(
        "type-made-explicit",
        I,
        I,
        "type {after} written out where the schema implied {before}",
        "Backward compatible; the values accepted are the same.",
        response_hint="The values are the same; nothing to do.",
        reasons=(
            "Senders are unaffected: the properties, alternatives or values already implied the "
            "type.",
            "Readers are unaffected: the values were of that type already.",
        ),
    ),
    _f(
        "type-left-implied",
        I,
        I,
        "type {before} no longer written; the schema still implies {after}",
        "Backward compatible; the values accepted are the same.",
        response_hint="The values are the same; nothing to do.",
        reasons=(
            "Senders are unaffected: the properties, alternatives or values still imply the type.",
            "Readers are unaffected: generated models read the same type.",
        ),
    ),
    _f(
        "rewritten-as-alternatives",
        I,
        I,
        "schema written as {after} alternatives that change nothing a client sees on this side",
        "Backward compatible; the alternatives accept what the schema accepted.",
        response_hint="Every alternative is a value the old schema allowed; nothing to do.",
        reasons=(
            "Senders are unaffected: every value they sent fits an alternative (and with oneOf, "
            "only one).",
            "Readers are unaffected: every alternative is a value the old schema allowed.",
        ),
    ),
    _f(
        "alternatives-folded",
        I,
        I,
        "{before} alternatives folded into one schema that changes nothing a client sees on "
        "this side",
        "Backward compatible; the schema accepts every value an alternative accepted.",
        response_hint="The schema allows only values an alternative allowed; nothing to do.",
        reasons=(
            "Senders are unaffected: the one schema accepts every value an alternative accepted.",
            "Readers are unaffected: the one schema allows only values an alternative allowed.",
        ),
    ),
    _f(
        "wrapped-in-one-of",
        B,
        B,
        "schema wrapped in a oneOf",
        "The shape is now one of several alternatives; update the client model.",
        reasons=(
            "Senders break: the shape they send is not one of the alternatives.",
            "Readers break: values come in shapes their model does not describe.",
        ),
        fails=(
            "{call} that sends {field} in the old shape may be refused: it is now one of "
            "several alternatives.",
            "{reader} that expects {field} in the old shape may now get another alternative.",
        ),
    ),
    _f(
        "discriminator-added",
        I,
        I,
        "discriminator added",
        "Polymorphic values are tagged now.",
        reasons=(
            "Senders are unaffected: the tag property was part of the values already.",
            "Readers are unaffected: values are tagged now.",
        ),
    ),
    _f(
        "discriminator-removed",
        I,
        I,
        "discriminator removed",
        "Polymorphic values are no longer tagged.",
        reasons=(
            "Senders are unaffected: the tag may still be sent.",
            "Readers that dispatch on the tag should check (info): the values are the same.",
        ),
    ),
    _f(
        "discriminator-property-name-changed",
        B,
        B,
        "discriminator property changed from {before} to {after}",
        "Read the type tag under its new property name.",
        request_hint="Send the type tag under its new property name.",
        reasons=(
            "Senders break: the server reads the type from another property.",
            "Readers break: generated deserialisers dispatch on a property that no longer tags.",
        ),
        fails=(
            "{call} that tags {field} with property {before:the old name} is now refused: the "
            "tag is {after:another property} now.",
            "{reader} that picks the type of {field} by {before:the old tag property} now finds "
            "the tag under {after:another property}.",
        ),
    ),
    _f(
        "discriminator-mapping-added",
        I,
        I,
        "discriminator mapping {after} added",
        "A new tag value exists.",
        reasons=(
            "Senders are unaffected: one more tag value is known.",
            "Readers are unaffected as far as the mapping goes (a new subtype is its own change).",
        ),
    ),
    _f(
        "discriminator-mapping-deleted",
        I,
        I,
        "discriminator mapping {before} removed",
        "A tag value is gone.",
        reasons=(
            "Senders should check (info): the tag value may still be accepted by schema.",
            "Readers are unaffected: one tag value fewer comes.",
        ),
    ),
    _f(
        "discriminator-mapping-changed",
        I,
        I,
        "discriminator mapping changed for {name}",
        "A tag value maps to another schema.",
        reasons=(
            "Senders should check (info): the tag value maps to another schema.",
            "Readers should check (info): the tag value maps to another schema.",
        ),
    ),
    # JSON Schema 2019-09 / 2020-12 keywords.
    *_pair("contains", "contains"),
    *_pair(
        "prefix-items",
        "prefixItems",
        added_request=I,
        reasons=(
            (
                "Senders are unaffected as far as the position goes (info): items were any before.",
                "Readers break: items at those positions follow other schemas now.",
            ),
            (
                "Senders break: positions lose their own schemas, the items schema applies to all.",
                "Readers are unaffected: what comes satisfies less.",
            ),
        ),
    ),
    # The position's values are compared with what `items` (or `maxItems`) allowed there:
    # those findings carry the direction, this one says where.
    _f(
        "prefix-item-added",
        I,
        I,
        "prefixItems entry {after} added",
        "The position has its own schema now; see the findings at that position.",
        reasons=(
            "Nobody breaks by the entry itself (info): the findings at its position say how the "
            "values allowed there changed.",
            "Nobody breaks by the entry itself (info): the findings at its position say how the "
            "values allowed there changed.",
        ),
    ),
    _f(
        "prefix-item-removed",
        I,
        I,
        "prefixItems entry {before} removed",
        "The position follows `items` now; see the findings at that position.",
        reasons=(
            "Nobody breaks by the entry itself (info): the position follows `items` now, and "
            "the findings there say how.",
            "Nobody breaks by the entry itself (info): the position follows `items` now, and "
            "the findings there say how.",
        ),
    ),
    # Boolean schemas: `false` allows no value, `true` (or a schema) allows some.
    _f(
        "became-false",
        B,
        I,
        "became the false schema (no value allowed)",
        "Every value is refused here now; stop sending it.",
        response_hint="No value comes here any more; nothing to do.",
        reasons=(
            "Senders break: the false schema refuses every value they sent before.",
            "Readers are unaffected: nothing comes where something came before (a narrowing).",
        ),
        fails=(
            "{call} that sends {field} at all is now refused: it allows no value.",
            "",
        ),
    ),
    _f(
        "no-longer-false",
        I,
        B,
        "was the false schema (no value allowed), allows values now",
        "Backward compatible; values are accepted here now.",
        response_hint="Readers may get values here that could never come before; handle them.",
        reasons=(
            _SAFE_SEND,
            "Readers break: values come where none could come before.",
        ),
        fails=(
            "",
            "{reader} that expects no {field} may now get one.",
        ),
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
        reasons=(
            "Senders break: other fields are required together now.",
            "Readers break: fields they relied on coming together may not.",
        ),
        fails=(
            "{call} that sends {field} without its newly co-required properties is now refused.",
            "{reader} that expects the old co-required properties with {field} may find them "
            "missing.",
        ),
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
        reasons=(
            "Senders break: the embedded content must be of another media type.",
            "Readers break: the embedded content comes in another media type.",
        ),
        fails=(
            "{call} that embeds {field} as {before:the old media type} is now refused: it must "
            "be {after:another}.",
            "{reader} that decodes {field} as {before:the old media type} now gets "
            "{after:another}.",
        ),
    ),
    _f(
        "content-encoding-changed",
        B,
        B,
        "contentEncoding changed from {before} to {after}",
        "The embedded content is encoded differently.",
        reasons=(
            "Senders break: the embedded content must be encoded another way.",
            "Readers break: the embedded content comes encoded another way.",
        ),
        fails=(
            "{call} that encodes {field} as {before:the old encoding} is now refused: it must "
            "be {after:another}.",
            "{reader} that decodes {field} as {before:the old encoding} now gets {after:another}.",
        ),
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
        reasons=(
            "Senders break: the value newly listed under not is refused.",
            "Readers are unaffected: one value fewer comes.",
        ),
        fails=(
            "{call} that sends {field} as {after:that value} is now refused.",
            "",
        ),
    ),
    _f(
        "not-value-removed",
        I,
        B,
        "value {before} no longer excluded (removed from not)",
        "Backward compatible; the value is accepted now.",
        response_hint="Readers may now receive this value; handle it.",
        reasons=(
            "Senders are unaffected: one more value is accepted.",
            "Readers break: a value the old contract excluded may come.",
        ),
        fails=(
            "",
            "{reader} of {field} may now get {before:a value} the old contract excluded.",
        ),
    ),
    _f(
        "not-changed",
        W,
        W,
        "the subschema under not changed (not judged value by value: it excludes more than "
        "listed values)",
        "Other values are excluded now; check what you send against it.",
        response_hint="Other values are excluded now; check what you read against it.",
        reasons=(
            "Senders may break: other values are excluded now (a warning: findings inside a not "
            "read inverted).",
            "Readers may break: values excluded before may come (a warning).",
        ),
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
        reasons=(
            "Nobody breaks yet: the field still works; migrate before it goes.",
            "Nobody breaks yet: the field still comes; stop relying on it.",
        ),
    ),
    _f(
        "deprecated-with-sunset",
        I,
        I,
        "deprecated, sunset {after}",
        "Migrate away from the field before the sunset date.",
        action=ACCEPT,
        nested_only=True,
        reasons=(
            "Nobody breaks yet: the field works until the sunset date.",
            "Nobody breaks yet: the field comes until the sunset date.",
        ),
    ),
    _f(
        "deprecated-sunset-invalid",
        I,
        I,
        "deprecated with a sunset date that is not a date: {after}",
        "Plan a migration away from the field; ask the vendor for the real sunset date.",
        action=ACCEPT,
        nested_only=True,
        reasons=(
            "Nobody breaks yet: the field still works; the sunset date is unreadable.",
            "Nobody breaks yet: the field still comes; the sunset date is unreadable.",
        ),
    ),
    _f(
        "reactivated",
        I,
        I,
        "no longer deprecated",
        "Nothing to do.",
        action=ACCEPT,
        nested_only=True,
        reasons=(_NOTHING, _NOTHING),
    ),
    _f(
        "stability-decreased",
        B,
        B,
        "stability decreased from {before} to {after}",
        "The field may change without notice now.",
        action=ACK,
        nested_only=True,
        reasons=(
            "Senders break on the vendor's word: the field may change without notice now.",
            "Readers break on the vendor's word: the field may change without notice now.",
        ),
        fails=(_STABILITY, _STABILITY_READ),
    ),
    _f(
        "stability-increased",
        I,
        I,
        "stability increased from {before} to {after}",
        "Nothing to do.",
        action=ACCEPT,
        nested_only=True,
        reasons=(_NOTHING, _NOTHING),
    ),
    _f(
        "stability-invalid",
        B,
        B,
        "stability level {after} is not valid",
        "Valid levels: draft, alpha, beta, stable.",
        action=CHECK_CONFIG,
        nested_only=True,
        reasons=(
            "Nobody knows what the vendor promises: the level is not one of draft, alpha, beta, "
            "stable.",
            "Nobody knows what the vendor promises: the level is not one of draft, alpha, beta, "
            "stable.",
        ),
        fails=(_BAD_STABILITY, _BAD_STABILITY_READ),
    ),
    _f(
        "became-not-write-only",
        I,
        W,
        "required property {name} is no longer write-only",
        "Readers now receive a field that was never returned before; check your model.",
        nested_only=True,
        request_hint="Nothing changes for what you send.",
        reasons=(
            "Senders are unaffected: writeOnly does not restrict what is sent.",
            "Readers may break: a required field that was never returned comes now (a warning).",
        ),
    ),
    _f(
        "became-write-only",
        I,
        B,
        "required property {name} became write-only",
        "Responses stop carrying the field; readers that use it break.",
        nested_only=True,
        request_hint="Backward compatible; the field is still accepted.",
        reasons=(
            "Senders are unaffected: writeOnly does not restrict what is sent.",
            "Readers break: the field is never returned now.",
        ),
        fails=(
            "",
            "{reader} that expects {field} finds it missing: it is write-only.",
        ),
    ),
    _f(
        "became-not-write-only-optional",
        I,
        I,
        "optional property {name} is no longer write-only",
        "Responses may carry the field now; use it when useful.",
        action=ACCEPT,
        nested_only=True,
        reasons=(
            "Senders are unaffected: writeOnly does not restrict what is sent.",
            "Readers are unaffected: an optional field may come now.",
        ),
    ),
    _f(
        "became-write-only-optional",
        I,
        B,
        "optional property {name} became write-only",
        "Responses stop carrying the field; readers that use it break.",
        nested_only=True,
        request_hint="Backward compatible; the field is still accepted.",
        reasons=(
            "Senders are unaffected: writeOnly does not restrict what is sent.",
            "Readers break: a field they got is never returned now.",
        ),
        fails=(
            "",
            "{reader} that uses {field} no longer gets it: it is write-only.",
        ),
    ),
    _f(
        "became-read-only",
        B,
        I,
        "required property {name} became read-only",
        "Stop sending the field: the server sets it and may refuse it in requests.",
        "Backward compatible; responses still carry the field.",
        nested_only=True,
        reasons=(
            "Senders break: the server sets the field and may refuse it in requests.",
            "Readers are unaffected: readOnly does not restrict what is returned.",
        ),
        fails=(_READ_ONLY, ""),
    ),
    _f(
        "became-read-only-optional",
        B,
        I,
        "optional property {name} became read-only",
        "Stop sending the field: the server sets it and may refuse it in requests.",
        "Backward compatible; responses still carry the field.",
        nested_only=True,
        reasons=(
            "Senders break: the server sets the field and may refuse it in requests.",
            "Readers are unaffected: readOnly does not restrict what is returned.",
        ),
        fails=(_READ_ONLY, ""),
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
        reasons=(
            "Senders break: the field is required in requests now and was never sent.",
            "Readers are unaffected: readOnly does not restrict what is returned.",
        ),
        fails=(_REQUIRED, ""),
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
        reasons=(
            "Senders are unaffected: they may send the field now.",
            "Readers are unaffected: readOnly does not restrict what is returned.",
        ),
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
        reasons=(
            "Senders are unaffected: one more subtype is accepted.",
            "Readers may break: objects of a subtype they do not know may come (a warning, like "
            "an enum value).",
        ),
    ),
    _f(
        "subtype-removed",
        B,
        I,
        "subtype {before} removed",
        "Stop sending objects of the removed subtype.",
        "Backward compatible; responses no longer carry objects of that subtype.",
        reasons=(
            "Senders break: objects of the removed subtype are refused.",
            "Readers are unaffected: one subtype fewer comes.",
        ),
        fails=(
            "{call} that sends {field} as subtype {before:the removed one} is now refused.",
            "",
        ),
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
        reasons=(
            "Nobody breaks yet: the schema still works; migrate before it goes.",
            "Nobody breaks yet: the schema still comes; stop relying on it.",
        ),
    ),
    _f(
        "schema-deprecated-with-sunset",
        I,
        I,
        "schema deprecated, sunset {after}",
        "Migrate away from this schema before the sunset date.",
        action=ACCEPT,
        root_only=True,
        reasons=(
            "Nobody breaks yet: the schema works until the sunset date.",
            "Nobody breaks yet: the schema comes until the sunset date.",
        ),
    ),
    _f(
        "schema-deprecated-sunset-invalid",
        I,
        I,
        "schema deprecated with a sunset date that is not a date: {after}",
        "Plan a migration; ask the vendor for the real sunset date.",
        action=ACCEPT,
        root_only=True,
        reasons=(
            "Nobody breaks yet: the schema still works; the sunset date is unreadable.",
            "Nobody breaks yet: the schema still comes; the sunset date is unreadable.",
        ),
    ),
    _f(
        "schema-reactivated",
        I,
        I,
        "schema no longer deprecated",
        "Nothing to do.",
        action=ACCEPT,
        root_only=True,
        reasons=(_NOTHING, _NOTHING),
    ),
    _f(
        "schema-stability-decreased",
        B,
        B,
        "stability decreased from {before} to {after}",
        "The schema may change without notice now.",
        action=ACK,
        root_only=True,
        reasons=(
            "Senders break on the vendor's word: the schema may change without notice now.",
            "Readers break on the vendor's word: the schema may change without notice now.",
        ),
        fails=(_STABILITY, _STABILITY_READ),
    ),
    _f(
        "schema-stability-increased",
        I,
        I,
        "stability increased from {before} to {after}",
        "Nothing to do.",
        action=ACCEPT,
        root_only=True,
        reasons=(_NOTHING, _NOTHING),
    ),
    _f(
        "schema-stability-invalid",
        B,
        B,
        "stability level {after} is not valid",
        "Valid levels: draft, alpha, beta, stable.",
        action=CHECK_CONFIG,
        root_only=True,
        reasons=(
            "Nobody knows what the vendor promises: the level is not valid.",
            "Nobody knows what the vendor promises: the level is not valid.",
        ),
        fails=(_BAD_STABILITY, _BAD_STABILITY_READ),
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
        reasons=(
            "Unknown: no rule reads this keyword, so it is at least a warning, never silence.",
            "Unknown: no rule reads this keyword, so it is at least a warning, never silence.",
        ),
    ),
    _f(
        "description-changed",
        I,
        I,
        "description changed",
        "Review the new description; it may change how the field is used.",
        action=ACCEPT,
        reasons=(
            "Nobody breaks: the text changed (reported only when asked for).",
            "Nobody breaks: the text changed (reported only when asked for).",
        ),
    ),
)


# What a client sees fail, shared by contract rules.
_SUNSET = "{call} may stop working at any time: "

# Description risk (`controller/diffs/poisoning.py`): text a model reads that holds a
# prompt-injection cue.
_POISON_HINT = (
    "A new or changed text the model reads holds a prompt-injection cue (tool poisoning); "
    "read the quoted text and the whole description before any agent lists this server "
    "again, and waive the finding only once a person has judged the text harmless."
)
_POISON_REASON = (
    "Agents are attacked: the model reads the text as instructions (read secrets, send data "
    "out, call other tools, keep it from the user), whatever the schema says."
)
_POISON_FAILS = (
    "A model that lists the server reads the quoted text as instructions and may leak data "
    "or misuse tools."
)
_POISON_FAILS_CARD = (
    "A model that reads the agent card takes the quoted text as instructions and may leak "
    "data or delegate where it should not."
)
# The gate's reason token of a watch whose breaking drift holds a poisoning finding.
TOOL_POISONING_SUSPECTED = "tool_poisoning_suspected"
# The gate's reason token of a watch whose breaking drift holds a card-signature finding.
CARD_SIGNATURE_INVALID = "card_signature_invalid"
# Signed agent cards (`controller/cardtrust/`): a card's signatures checked against the keys
# the watch trusts, read from the check's verdict (`controller/diffs/a2a.py`).
_CARD_HINT = (
    "Find out who published this card before any agent reads it again: if the agent's owner "
    "rotated keys, add the new key to the watch's cardKeys (or its JWKS); otherwise treat the "
    "card as forged. A jku inside the card is never trusted by itself."
)
_CARD_REASON = (
    "Agents are attacked: whoever can serve the card can point callers at their own endpoint, "
    "skills and credentials, and only a signature by a key the watch trusts says the card's "
    "owner wrote it."
)
_CARD_FAILS = (
    "A caller that trusts the card delegates to whatever endpoint and skills it names, which "
    "its owner may not have written."
)
# The gate's reason token of a watch whose server left its pinned tool set
# (`.driftgate/mcp.lock`, `controller.toollock`).
TOOL_LOCK_VIOLATED = "tool_lock_violated"
_LOCK_HINT = (
    "The server no longer matches the tool set pinned in the repository's lock; review what "
    "changed, then lock it again (`driftgate mcp lock`) and commit the lock, or keep agents "
    "off the server."
)
# Reason phrases shared by contract rules.
_OPERATION_GONE = "Callers break: requests to the operation fail."
_VENDOR_CLOCK = "Callers break on the vendor's schedule: the grace period they planned on changed."
_META = "Callers cannot tell when it goes: the deprecation metadata is unreadable."


def _r(
    rule_id: str,
    severity: Severity,
    summary: str,
    action: str,
    hint: str,
    family: str,
    *,
    reason: str,
    fails: str = "",
    gate_reason: str = "",
) -> Rule:
    """A contract rule; `reason` says why it has its severity (who breaks, and how), `fails`
    what a client sees fail when it breaks, `gate_reason` the gate's token of its own."""
    return Rule(
        rule_id,
        severity,
        summary,
        action,
        hint,
        family,
        reason=reason,
        fails=fails,
        gate_reason=gate_reason,
    )


def _lock(rule_id: str, summary: str, reason: str, fails: str) -> Rule:
    """A tool-lock rule (`controller.toollock`): breaking, the gate's own reason token, a
    review of the lock as the action."""
    return _r(
        rule_id,
        B,
        summary,
        REVIEW_LOCK,
        _LOCK_HINT,
        "mcp",
        reason=reason,
        fails=fails,
        gate_reason=TOOL_LOCK_VIOLATED,
    )


def _card_signature(rule_id: str, summary: str) -> Rule:
    """A signed card's rule (`controller.cardtrust`): breaking, the card to verify, the gate's
    own reason token."""
    return _r(
        rule_id,
        B,
        summary,
        VERIFY_CARD,
        _CARD_HINT,
        "a2a",
        reason=_CARD_REASON,
        fails=_CARD_FAILS,
        gate_reason=CARD_SIGNATURE_INVALID,
    )


def _poisoning(unit: str, family: str) -> Rule:
    """The description-risk rule of `unit` (`tool`, `prompt`, `skill`...): breaking, a review
    of the quoted text, the gate's own reason token."""
    return _r(
        f"{unit}-poisoning-suspected",
        B,
        f"{unit.split('-')[0]} {{name}} may carry instructions for the model: {{detail}}",
        REVIEW_DESCRIPTION,
        _POISON_HINT,
        family,
        reason=_POISON_REASON,
        fails=_POISON_FAILS if family == "mcp" else _POISON_FAILS_CARD,
        gate_reason=TOOL_POISONING_SUSPECTED,
    )


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
        reason="Unknown: no rule reads this place, so it is at least a warning, never silence.",
    ),
    # OpenAPI paths and operations.
    _r(
        "endpoint-added",
        I,
        "operation {name} added",
        ACCEPT,
        "Backward compatible.",
        "openapi",
        reason="Nobody breaks: a new operation is there to use.",
    ),
    _r(
        "endpoint-removed",
        B,
        "operation {name} removed",
        UPDATE_CLIENT,
        "Migrate to a replacement operation.",
        "openapi",
        reason=_OPERATION_GONE,
        fails="{call} now fails: the operation no longer exists (404 or 405).",
    ),
    _r(
        "endpoint-removed-deprecated",
        W,
        "deprecated operation {name} removed",
        UPDATE_CLIENT,
        "The operation was deprecated first; a consumer that did not migrate still breaks.",
        "openapi",
        reason="Callers that did not migrate break; deprecation gave notice (a warning, "
        "CONTRACT.md).",
    ),
    _r(
        "endpoint-removed-before-sunset",
        B,
        "operation {name} removed before its sunset date {before}",
        UPDATE_CLIENT,
        "The vendor removed the operation earlier than announced.",
        "openapi",
        reason=_OPERATION_GONE + " Earlier than announced.",
        fails="{call} now fails: the operation was removed before its announced sunset "
        "{before:date}.",
    ),
    _r(
        "endpoint-removed-unstable",
        I,
        "draft/alpha operation {name} removed",
        UPDATE_CLIENT,
        "The vendor marked the operation unstable; it could go away without notice.",
        "openapi",
        reason="Callers of a draft/alpha operation were promised nothing.",
    ),
    _r(
        "endpoint-unstable-changed",
        I,
        "draft/alpha operation {name} changed ({detail} changes, not classified)",
        ACCEPT,
        "The vendor promises no compatibility for draft/alpha operations; review before use.",
        "openapi",
        reason="Callers of a draft/alpha operation were promised nothing.",
    ),
    _r(
        "endpoint-sunset-missing",
        B,
        "operation {name} deprecated without a sunset date",
        ACK,
        "The grace period before removal is unknown; ask the vendor.",
        "openapi",
        reason="Callers cannot plan: the operation is going without a date (the policy asks for "
        "one).",
        fails=_SUNSET + "it is deprecated with no removal date.",
    ),
    _r(
        "request-parameter-sunset-missing",
        B,
        "{name} deprecated without a sunset date",
        ACK,
        "The grace period before removal is unknown.",
        "openapi",
        reason="Callers cannot plan: the parameter is going without a date (the policy asks for "
        "one).",
        fails="{call} that sends {field} may break at any time: it is deprecated with no removal "
        "date.",
    ),
    _r(
        "endpoint-deprecated",
        I,
        "operation {name} deprecated",
        ACCEPT,
        "Plan a migration away from the operation.",
        "openapi",
        reason="Nobody breaks yet: the operation still works.",
    ),
    _r(
        "endpoint-deprecated-with-sunset",
        I,
        "operation {name} deprecated with sunset {after}",
        ACCEPT,
        "Migrate away from the operation before the sunset date.",
        "openapi",
        reason="Nobody breaks yet: the operation works until the date.",
    ),
    _r(
        "endpoint-reactivated",
        I,
        "operation {name} is no longer deprecated",
        ACCEPT,
        "Nothing to do.",
        "openapi",
        reason="Nobody breaks: the operation stays.",
    ),
    _r(
        "endpoint-sunset-deleted",
        B,
        "sunset date removed from deprecated operation {name}",
        ACK,
        "The deprecation schedule is unknown now; ask the vendor.",
        "openapi",
        reason=_VENDOR_CLOCK,
        fails=_SUNSET + "its deprecation lost the removal date.",
    ),
    _r(
        "endpoint-sunset-invalid",
        B,
        "sunset date {after} of operation {name} cannot be parsed",
        CHECK_CONFIG,
        "The vendor's deprecation metadata is malformed.",
        "openapi",
        reason=_META,
        fails=_SUNSET + "its removal date {after:} is no date.",
    ),
    _r(
        "endpoint-sunset-moved-earlier",
        B,
        "sunset date of operation {name} moved from {before} to {after}",
        ACK,
        "The operation goes away sooner than announced.",
        "openapi",
        reason=_VENDOR_CLOCK,
        fails="{call} stops working sooner: removal moved from {before:} to {after:}.",
    ),
    _r(
        "endpoint-stability-decreased",
        B,
        "stability of operation {name} decreased from {before} to {after}",
        ACK,
        "The operation may change without notice now.",
        "openapi",
        reason="Callers break on the vendor's word: the operation may change without notice now.",
        fails="{call} may fail without notice: stability went from {before:} to {after:}.",
    ),
    _r(
        "endpoint-stability-increased",
        I,
        "stability of operation {name} increased from {before} to {after}",
        ACCEPT,
        "Nothing to do.",
        "openapi",
        reason="Nobody breaks: the vendor promises more.",
    ),
    _r(
        "endpoint-stability-invalid",
        B,
        "stability level {after} of operation {name} is not valid",
        CHECK_CONFIG,
        "Valid levels: draft, alpha, beta, stable.",
        "openapi",
        reason="Nobody knows what the vendor promises: the level is not valid.",
        fails="{call} cannot trust the operation: stability {after:} is not valid.",
    ),
    _r(
        "endpoint-operation-id-changed",
        I,
        "operationId of {name} changed from {before} to {after}",
        ACCEPT,
        "Generated clients may rename the method.",
        "openapi",
        reason="Nobody breaks on the wire; generated clients may rename the method.",
    ),
    _r(
        "server-added",
        I,
        "server {after} added",
        ACCEPT,
        "Backward compatible.",
        "openapi",
        reason="Nobody breaks: one more base URL.",
    ),
    _r(
        "server-removed",
        W,
        "server {before} removed",
        CHECK_CONFIG,
        "Clients configured with this base URL may stop working.",
        "openapi",
        reason="Callers configured with that base URL may break (a warning: servers lists are "
        "often edited).",
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
        reason="Nobody breaks: one more base URL for the operation.",
    ),
    _r(
        "endpoint-server-removed",
        W,
        "server {before} removed for {name}",
        CHECK_CONFIG,
        "Clients calling this operation at this base URL may stop working.",
        "openapi",
        reason="Callers of the operation at that base URL may break (a warning, as for the "
        "document's servers: servers lists are often edited).",
    ),
    # Parameters.
    _r(
        "request-parameter-added-required",
        B,
        "required {name} added",
        SEND_REQUIRED,
        "Send the new parameter on every call.",
        "openapi",
        reason="Callers break: requests without the parameter are refused.",
        fails="{call} without {field} is now refused: it is required.",
    ),
    _r(
        "request-parameter-added-optional",
        I,
        "optional {name} added",
        ACCEPT,
        "Backward compatible.",
        "openapi",
        reason="Nobody breaks: the parameter may be left out.",
    ),
    _r(
        "request-parameter-removed",
        W,
        "{name} removed",
        UPDATE_CLIENT,
        "Stop sending the parameter; it is ignored or rejected now.",
        "openapi",
        reason="Callers may break: the parameter is ignored or refused now (a warning, "
        "CONTRACT.md).",
    ),
    _r(
        "request-parameter-removed-deprecated",
        I,
        "deprecated {name} removed",
        UPDATE_CLIENT,
        "Stop sending the parameter.",
        "openapi",
        reason="Callers were told to stop sending it.",
    ),
    _r(
        "request-parameter-removed-before-sunset",
        B,
        "{name} removed before its sunset date {before}",
        UPDATE_CLIENT,
        "The vendor removed the parameter earlier than announced.",
        "openapi",
        reason="Callers break: the parameter went earlier than announced.",
        fails="{call} that sends {field} may now be refused: it was removed before its sunset "
        "{before:date}.",
    ),
    _r(
        "request-parameter-became-required",
        B,
        "{name} became required",
        SEND_REQUIRED,
        "Always send the parameter now.",
        "openapi",
        reason="Callers break: requests without it are refused.",
        fails="{call} without {field} is now refused: it is required.",
    ),
    _r(
        "request-parameter-became-optional",
        I,
        "{name} became optional",
        ACCEPT,
        "Backward compatible.",
        "openapi",
        reason="Nobody breaks: it may still be sent.",
    ),
    _r(
        "request-parameter-deprecated",
        I,
        "{name} deprecated",
        ACCEPT,
        "Plan to stop sending the parameter.",
        "openapi",
        reason="Nobody breaks yet: the parameter still works.",
    ),
    _r(
        "request-parameter-reactivated",
        I,
        "{name} is no longer deprecated",
        ACCEPT,
        "Nothing to do.",
        "openapi",
        reason="Nobody breaks: the parameter stays.",
    ),
    _r(
        "request-parameter-sunset-deleted",
        B,
        "sunset date removed from deprecated {name}",
        ACK,
        "The deprecation schedule is unknown now.",
        "openapi",
        reason=_VENDOR_CLOCK,
        fails="{call} that sends {field} may break at any time: its removal date is gone.",
    ),
    _r(
        "request-parameter-sunset-invalid",
        B,
        "sunset date {after} of {name} cannot be parsed",
        CHECK_CONFIG,
        "The vendor's deprecation metadata is malformed.",
        "openapi",
        reason=_META,
        fails="{call} that sends {field} may break at any time: its removal date {after:} is no "
        "date.",
    ),
    _r(
        "request-parameter-sunset-moved-earlier",
        B,
        "sunset date of {name} moved from {before} to {after}",
        ACK,
        "The parameter goes away sooner than announced.",
        "openapi",
        reason=_VENDOR_CLOCK,
        fails="{call} that sends {field} breaks sooner: removal moved from {before:} to {after:}.",
    ),
    _r(
        "request-parameter-style-changed",
        B,
        "serialisation of {name} changed from {before} to {after}",
        UPDATE_CLIENT,
        "Serialise the parameter the new way.",
        "openapi",
        reason="Callers break: the value is written another way on the wire (style, explode, "
        "collectionFormat).",
        fails="{call} that serialises {field} as {before:before} is now misread: it must be "
        "{after:serialised the new way}.",
    ),
    _r(
        "request-parameter-style-no-effect",
        I,
        "serialisation keywords of {name} changed from {before} to {after}, "
        "with no effect on the wire",
        ACCEPT,
        "Nothing to do: the value is written the same way (explode does not apply to it).",
        "openapi",
        reason="Nobody breaks: the value is written the same way (explode has no effect on a "
        "primitive).",
    ),
    _r(
        "request-parameter-empty-value-allowed",
        I,
        "{name} accepts an empty value now",
        ACCEPT,
        "Backward compatible.",
        "openapi",
        reason="Nobody breaks: an empty value is accepted too.",
    ),
    _r(
        "request-parameter-empty-value-refused",
        B,
        "{name} no longer accepts an empty value",
        UPDATE_CLIENT,
        "Calls that send the parameter empty are refused; send a value or leave it out.",
        "openapi",
        reason="Callers that send the parameter empty break: `?name=` is refused now.",
        fails="{call} that sends {field} empty is now refused.",
    ),
    # Request bodies and media types.
    _r(
        "request-body-added-required",
        B,
        "required request body added",
        SEND_REQUIRED,
        "Send a body on every call.",
        "openapi",
        reason="Callers break: requests without a body are refused.",
        fails="{call} without a body is now refused.",
    ),
    _r(
        "request-body-added-optional",
        I,
        "optional request body added",
        ACCEPT,
        "Backward compatible.",
        "openapi",
        reason="Nobody breaks: the body may be left out.",
    ),
    _r(
        "request-body-removed",
        W,
        "request body removed",
        UPDATE_CLIENT,
        "Stop sending a body.",
        "openapi",
        reason="Callers may break: the body is ignored or refused now (a warning).",
    ),
    _r(
        "request-body-became-required",
        B,
        "request body became required",
        SEND_REQUIRED,
        "Send a body on every call.",
        "openapi",
        reason="Callers break: requests without a body are refused.",
        fails="{call} without a body is now refused.",
    ),
    _r(
        "request-body-became-optional",
        I,
        "request body became optional",
        ACCEPT,
        "Backward compatible.",
        "openapi",
        reason="Nobody breaks: the body may still be sent.",
    ),
    _r(
        "request-body-media-type-added",
        I,
        "request media type {name} added",
        ACCEPT,
        "Backward compatible.",
        "openapi",
        reason="Nobody breaks: one more media type is accepted.",
    ),
    _r(
        "request-body-media-type-removed",
        B,
        "request media type {name} removed",
        UPDATE_CLIENT,
        "Send the body in one of the remaining media types.",
        "openapi",
        reason="Callers break: bodies in that media type are refused.",
        fails="{call} with its body in `{name}` is now refused (415).",
    ),
    _r(
        "response-media-type-added",
        I,
        "response media type {name} added",
        ACCEPT,
        "Backward compatible unless you negotiate content loosely.",
        "openapi",
        reason="Readers are unaffected unless they negotiate content loosely.",
    ),
    _r(
        "response-media-type-removed-placeholder",
        W,
        "response media type {name} removed; its schema declared nothing to read",
        UPDATE_CLIENT,
        "Do not parse a body here: the one described was an empty placeholder (an object "
        "without properties, or null).",
        "openapi",
        reason="Readers need a look, no more: the schema gone declared nothing to read (a "
        "warning).",
    ),
    _r(
        "response-body-placeholder-changed",
        I,
        "response body {name}: one empty placeholder schema replaced by another",
        ACCEPT,
        "Nothing to do: neither declares anything to read.",
        "openapi",
        reason="Readers are unaffected: neither schema declares anything to read.",
    ),
    _r(
        "response-media-type-removed",
        B,
        "response media type {name} removed",
        UPDATE_CLIENT,
        "Request and parse one of the remaining media types.",
        "openapi",
        reason="Readers break: responses in that media type no longer come.",
        fails="{call} that asks for {name} no longer gets it (406, or another media type).",
    ),
    _r(
        "request-body-encoding-changed",
        W,
        "encoding of {name} changed",
        UPDATE_CLIENT,
        "The field is serialised another way in the body (content type, style or headers); "
        "send it the new way.",
        "openapi",
        reason="Callers may break: a form or multipart field is serialised another way (a "
        "warning).",
    ),
    _r(
        "response-body-encoding-changed",
        W,
        "encoding of {name} changed",
        UPDATE_CLIENT,
        "The field is serialised another way in the body; parse it the new way.",
        "openapi",
        reason="Readers may break: a form or multipart field comes serialised another way (a "
        "warning).",
    ),
    _r(
        "request-body-media-type-schema-added",
        W,
        "a schema now describes the request media type {name}",
        UPDATE_CLIENT,
        "What you send is checked against a schema now; make it fit.",
        "openapi",
        reason="Callers may break: what they send is checked against a schema now (a warning: it "
        "may fit).",
    ),
    _r(
        "request-body-media-type-schema-removed",
        I,
        "the request media type {name} lost its schema",
        ACCEPT,
        "Anything is accepted now; nothing to do.",
        "openapi",
        reason="Nobody breaks: anything is accepted now.",
    ),
    _r(
        "request-body-media-type-item-schema-added",
        W,
        "an item schema now describes the request media type {name}",
        UPDATE_CLIENT,
        "What you send is checked against a schema now; make it fit.",
        "openapi",
        reason="Callers may break: streamed items are checked against a schema now (a warning).",
    ),
    _r(
        "request-body-media-type-item-schema-removed",
        I,
        "the request media type {name} lost its item schema",
        ACCEPT,
        "Anything is accepted now; nothing to do.",
        "openapi",
        reason="Nobody breaks: any item is accepted now.",
    ),
    _r(
        "response-body-media-type-schema-added",
        I,
        "a schema now describes the response media type {name}",
        ACCEPT,
        "Readers know the shape now; nothing breaks.",
        "openapi",
        reason="Readers are unaffected: the shape is promised now where anything could come.",
    ),
    _r(
        "response-body-media-type-schema-removed",
        W,
        "the response media type {name} lost its schema",
        UPDATE_CLIENT,
        "The shape is no longer promised; read defensively.",
        "openapi",
        reason="Readers may break: the shape is no longer promised (a warning).",
    ),
    _r(
        "response-body-media-type-item-schema-added",
        I,
        "an item schema now describes the response media type {name}",
        ACCEPT,
        "Readers know the shape now; nothing breaks.",
        "openapi",
        reason="Readers are unaffected: streamed items are promised a shape now.",
    ),
    _r(
        "response-body-media-type-item-schema-removed",
        W,
        "the response media type {name} lost its item schema",
        UPDATE_CLIENT,
        "The shape is no longer promised; read defensively.",
        "openapi",
        reason="Readers may break: streamed items are no longer promised a shape (a warning).",
    ),
    _r(
        "response-body-media-type-item-schema-removed-untyped",
        W,
        "the response media type {name} lost its item schema and has no schema left",
        UPDATE_CLIENT,
        "Nothing describes the streamed items now; read defensively.",
        "openapi",
        reason="Readers may break: nothing describes the streamed items now (a warning).",
    ),
    # The document's version against what changed.
    _r(
        "api-version-not-bumped",
        W,
        "incompatible changes, but the version is still {after}",
        ACK,
        "The vendor did not signal the break; do not rely on the version number to detect it.",
        "openapi",
        reason="Readers of the version number are misled: a break shipped under the same version.",
    ),
    _r(
        "api-version-decreased",
        W,
        "incompatible changes, and the version went down from {before} to {after}",
        ACK,
        "The version number moved backwards; pin the contract by its content, not its version.",
        "openapi",
        reason="Readers of the version number are misled: it went backwards.",
    ),
    _r(
        "api-major-version-not-bumped",
        W,
        "incompatible changes, but the major version stayed at {after}",
        ACK,
        "The vendor shipped a break in a minor release; review the breaking changes.",
        "openapi",
        reason="Readers of the version number are misled: a break shipped in a minor release.",
    ),
    # Responses and headers.
    _r(
        "response-success-status-added",
        I,
        "success status {name} added",
        ACCEPT,
        "Handle the new status where you branch on status codes.",
        "openapi",
        reason="Readers are unaffected unless they branch on exact status codes.",
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
        reason="Readers need a look, no more: the statuses left were documented already (or carry "
        "no body either); code branching on the gone one is dead (a warning).",
    ),
    _r(
        "response-success-status-removed",
        B,
        "success status {name} removed",
        UPDATE_CLIENT,
        "Code that expects this status no longer sees it.",
        "openapi",
        reason="Readers break: the operation may answer with a success status they never saw "
        "documented.",
        fails="{call} that expects status {name} on success no longer gets it, and may get a "
        "success status it never saw documented.",
    ),
    _r(
        "response-non-success-status-added",
        I,
        "non-success status {name} added",
        ACCEPT,
        "Handle the new error status.",
        "openapi",
        reason="Readers are unaffected: an error they may handle generically.",
    ),
    _r(
        "response-non-success-status-removed",
        I,
        "non-success status {name} removed",
        ACCEPT,
        "Nothing to do.",
        "openapi",
        reason="Readers are unaffected: one error fewer comes.",
    ),
    _r(
        "response-header-added",
        I,
        "response header {name} added",
        ACCEPT,
        "Backward compatible.",
        "openapi",
        reason="Readers are unaffected: one more header.",
    ),
    _r(
        "response-header-removed-required",
        B,
        "required response header {name} removed",
        UPDATE_CLIENT,
        "Code that reads the header breaks.",
        "openapi",
        reason="Readers break: a header they were promised no longer comes.",
        fails="{call} that reads header {name} from the response finds it missing.",
    ),
    _r(
        "response-header-removed-optional",
        W,
        "optional response header {name} removed",
        UPDATE_CLIENT,
        "Code that reads the header gets nothing now.",
        "openapi",
        reason="Readers may break: an optional header no longer comes (a warning).",
    ),
    _r(
        "response-header-became-optional",
        B,
        "response header {name} became optional",
        UPDATE_CLIENT,
        "Handle the header being absent.",
        "openapi",
        reason="Readers break: a header they relied on may be missing.",
        fails="{call} that reads header {name} from every response may find it missing.",
    ),
    _r(
        "response-header-became-required",
        I,
        "response header {name} became required",
        ACCEPT,
        "Backward compatible.",
        "openapi",
        reason="Readers are unaffected: the header now always comes.",
    ),
    _r(
        "response-header-deprecated",
        I,
        "response header {name} deprecated",
        ACCEPT,
        "Plan to stop reading the header.",
        "openapi",
        reason="Nobody breaks yet: the header still comes.",
    ),
    _r(
        "response-header-reactivated",
        I,
        "response header {name} is no longer deprecated",
        ACCEPT,
        "Nothing to do.",
        "openapi",
        reason="Nobody breaks: the header stays.",
    ),
    _r(
        "response-header-style-changed",
        B,
        "serialisation of response header {name} changed from {before} to {after}",
        UPDATE_CLIENT,
        "Parse the header value the new way.",
        "openapi",
        reason="Readers break: the header value is written another way.",
        fails="{call} that parses header {name} as {before:before} now gets it "
        "{after:another way}.",
    ),
    _r(
        "response-header-style-no-effect",
        I,
        "serialisation keywords of response header {name} changed from {before} to {after}, "
        "with no effect on the wire",
        ACCEPT,
        "Nothing to do: the value is written the same way.",
        "openapi",
        reason="Nobody breaks: the value is written the same way.",
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
        reason="Senders are unaffected: the credential was a required parameter in the same place "
        "already.",
    ),
    _r(
        "security-requirement-added",
        B,
        "{name} needs credentials now ({after})",
        CHECK_CONFIG,
        "Calls without credentials are refused; configure the new credentials.",
        "openapi",
        reason="Callers without credentials break: they are refused now.",
        fails="{call} without credentials ({after:the new scheme}) is now refused (401).",
    ),
    _r(
        "security-requirement-removed",
        I,
        "{name} no longer needs credentials",
        ACCEPT,
        "Calls without credentials are accepted now; nothing to do.",
        "openapi",
        reason="Nobody breaks: credentials are not needed any more.",
    ),
    _r(
        "security-scope-added",
        B,
        "security scope {after} added to {name}",
        CHECK_CONFIG,
        "Tokens issued without the new scope are refused; request it.",
        "openapi",
        reason="Callers break: tokens issued without the new scope are refused.",
        fails="{call} with a token lacking scope {after:the new scope} is now refused (403).",
    ),
    _r(
        "security-scope-removed",
        I,
        "security scope {before} removed from {name}",
        ACCEPT,
        "Nothing to do.",
        "openapi",
        reason="Nobody breaks: tokens need fewer scopes.",
    ),
    _r(
        "security-alternative-added",
        I,
        "{name}: another way to authenticate added ({after})",
        ACCEPT,
        "Existing credentials keep working; the new alternative is optional.",
        "openapi",
        reason="Nobody breaks: one more way to authenticate (requirements are alternatives).",
    ),
    _r(
        "security-alternative-removed",
        B,
        "{name}: authenticating with {before} is no longer accepted",
        CHECK_CONFIG,
        "Clients that authenticate this way are refused; switch to a remaining alternative.",
        "openapi",
        reason="Callers that authenticate that way break: they are refused.",
        fails="{call} that authenticates with {before:the removed scheme} is now refused (401).",
    ),
    _r(
        "security-requirement-relaxed",
        I,
        "{name}: the credentials {before} are more than needed now ({after} suffice)",
        ACCEPT,
        "Existing credentials keep working.",
        "openapi",
        reason="Nobody breaks: the credentials clients hold are more than enough.",
    ),
    _r(
        "security-scheme-openid-connect-url-changed",
        B,
        "OpenID Connect discovery URL of {name} changed from {before} to {after}",
        CHECK_CONFIG,
        "Discover the provider at the new URL.",
        "openapi",
        reason="Callers break: they discover the provider at the old URL.",
        fails="A client that discovers {name} at {before:the old URL} gets no valid tokens: it "
        "moved to {after:a new URL}.",
    ),
    _r(
        "security-scheme-oauth-flow-added",
        I,
        "OAuth flow {name} added",
        ACCEPT,
        "A new way to obtain tokens; existing flows keep working.",
        "openapi",
        reason="Nobody breaks: one more way to get tokens.",
    ),
    _r(
        "security-scheme-oauth-flow-removed",
        B,
        "OAuth flow {name} removed",
        CHECK_CONFIG,
        "Clients that obtain tokens with this flow cannot any more; use a remaining flow.",
        "openapi",
        reason="Callers that get tokens with that flow break.",
        fails="A client that gets tokens through the {name} flow can no longer get any.",
    ),
    _r(
        "webhook-added",
        I,
        "webhook {name} added",
        ACCEPT,
        "A new event the vendor can send; subscribe if you need it.",
        "openapi",
        reason="Nobody breaks: one more event may be sent to consumers.",
    ),
    _r(
        "webhook-removed",
        W,
        "webhook {name} removed",
        CHECK_CONFIG,
        "The vendor no longer describes this event; check that you still receive it.",
        "openapi",
        reason="Consumers may miss the event (a warning: they should check it still comes).",
    ),
    _r(
        "security-scheme-added",
        I,
        "security scheme {name} added",
        ACCEPT,
        "A new way to authenticate; nothing changes for existing credentials.",
        "openapi",
        reason="Nobody breaks: a scheme is only a definition until required.",
    ),
    _r(
        "security-scheme-removed",
        W,
        "security scheme {name} removed",
        CHECK_CONFIG,
        "Check that the operations you call still accept your credentials.",
        "openapi",
        reason="Callers may break: operations that used it changed (a warning; the operations' "
        "own changes say how).",
    ),
    _r(
        "security-scheme-type-changed",
        B,
        "security scheme {name} changed from {before} to {after}",
        CHECK_CONFIG,
        "Credentials are sent another way now; update how the client authenticates.",
        "openapi",
        reason="Callers break: credentials are sent another way.",
        fails="A client that authenticates with {name} as {before:before} is now refused: it is "
        "{after:another type}.",
    ),
    _r(
        "security-scheme-oauth-url-changed",
        B,
        "authorization URL of {name} changed from {before} to {after}",
        CHECK_CONFIG,
        "Send users to the new authorization URL.",
        "openapi",
        reason="Callers break: users are sent to the old authorization URL.",
        fails="A client that sends users to {before:the old authorization URL} gets no tokens: it "
        "is {after:a new URL} now.",
    ),
    _r(
        "security-scheme-oauth-token-url-changed",
        B,
        "token URL of {name} changed from {before} to {after}",
        CHECK_CONFIG,
        "Fetch and refresh tokens at the new URL.",
        "openapi",
        reason="Callers break: tokens are fetched or refreshed at the old URL.",
        fails="A client that fetches tokens at {before:the old URL} gets none: it is "
        "{after:a new URL} now.",
    ),
    _r(
        "security-scheme-oauth-scope-added",
        I,
        "scope {after} added to {name}",
        ACCEPT,
        "A new scope exists; request it only if you need it.",
        "openapi",
        reason="Nobody breaks: a scope exists that nobody must ask for yet.",
    ),
    _r(
        "security-scheme-oauth-scope-removed",
        W,
        "scope {before} removed from {name}",
        CHECK_CONFIG,
        "Stop requesting the scope; token requests that name it may fail.",
        "openapi",
        reason="Callers that request the scope may be refused (a warning).",
    ),
    _r(
        "global-security-requirement-added",
        B,
        "global security requirement {after} added",
        CHECK_CONFIG,
        "Configure the new credentials.",
        "openapi",
        reason="Callers without the credentials break.",
        fails="A request without credentials ({after:the new scheme}) is now refused on every "
        "operation (401).",
    ),
    _r(
        "global-security-requirement-removed",
        I,
        "global security requirement {before} removed",
        ACCEPT,
        "Nothing to do.",
        "openapi",
        reason="Nobody breaks: fewer credentials are needed.",
    ),
    # MCP surface.
    _r(
        "tool-removed",
        B,
        "tool {name} removed",
        REMOVE_TOOL,
        "Calls and saved agent workflows that name the tool fail; remove or replace it.",
        "mcp",
        reason="Agents break: calls that name the tool fail.",
        fails="{call} now fails: the server no longer lists the tool.",
    ),
    _r(
        "tool-added",
        I,
        "tool {name} added",
        ACCEPT,
        "Backward compatible.",
        "mcp",
        reason="Nobody breaks: one more tool.",
    ),
    _r(
        "tool-renamed",
        B,
        "tool renamed from {before} to {after}{detail}",
        REMOVE_TOOL,
        "Renamed from the old name to the new one (the summary names both): call the tool, and "
        "pin it, by its new name.",
        "mcp",
        reason="Agents break: calls that name the tool by its old name fail, though the tool "
        "is still there under its new name (a removal and an addition paired by their "
        "spelling, or by an equal input schema and a similar description).",
        fails="{call} now fails: the server lists the tool as {after} now.",
    ),
    _r(
        "tool-description-changed",
        W,
        "description of tool {name} changed",
        REVIEW_DESCRIPTION,
        "The text the model reads changed (rug-pull risk); review it before trusting the tool.",
        "mcp",
        reason="Agents may change behaviour: the model reads the new text (rug-pull risk; a "
        "warning).",
    ),
    _poisoning("tool", "mcp"),
    _lock(
        "tool-not-in-lock",
        "tool {name} is not in the lock of server {detail}",
        "Agents may call what nobody reviewed: the server lists a tool its pinned tool set "
        "does not hold.",
        "A run that trusts the lock meets a tool nobody reviewed and may call it.",
    ),
    _lock(
        "tool-lock-schema-changed",
        "input schema of tool {name} differs from the lock of server {detail}",
        "Agents break or are misled: the tool takes other arguments than the ones pinned and "
        "reviewed.",
        "{call} may now fail or do something else: its input schema is not the one pinned.",
    ),
    _lock(
        "tool-lock-description-changed",
        "description of tool {name} differs from the lock of server {detail}",
        "Agents are exposed: the model reads a text nobody reviewed (a rug pull of a pinned tool).",
        "A model that lists the server reads a description of the tool nobody reviewed.",
    ),
    _lock(
        "tool-lock-tool-missing",
        "tool {name} of the lock of server {detail} is not listed",
        "Agents break: calls to a pinned tool fail.",
        "{call} now fails: the server no longer lists a tool its lock pins.",
    ),
    _lock(
        "tool-lock-protocol-changed",
        "protocol version of server {detail} differs from the lock ({before} -> {after})",
        "Agents may break: the server speaks another protocol revision than the one pinned.",
        "A client pinned to the locked protocol revision may fail to talk to the server.",
    ),
    _lock(
        "tool-lock-capabilities-changed",
        "capabilities of server {detail} differ from the lock",
        "Agents may break: the server offers other features than the ones pinned.",
        "A client that relies on a pinned capability may find it gone or changed.",
    ),
    _poisoning("prompt", "mcp"),
    _poisoning("resource", "mcp"),
    _poisoning("server-instructions", "mcp"),
    _r(
        "tool-title-changed",
        I,
        "title of tool {name} changed",
        ACCEPT,
        "Cosmetic.",
        "mcp",
        reason="Nobody breaks: a display name.",
    ),
    _r(
        "tool-annotation-risk-increased",
        W,
        "tool {name}: {detail}",
        REVIEW_DESCRIPTION,
        "The tool may now modify or destroy data; review the permissions you give it.",
        "mcp",
        reason="Agents may do more harm: the tool may modify or destroy data now (a warning).",
    ),
    _r(
        "tool-annotations-changed",
        I,
        "annotations of tool {name} changed",
        ACCEPT,
        "No risk increase.",
        "mcp",
        reason="Nobody breaks: no risk increase.",
    ),
    _r(
        "tool-execution-changed",
        I,
        "execution settings of tool {name} changed",
        ACCEPT,
        "Informational.",
        "mcp",
        reason="Nobody breaks: execution hints.",
    ),
    _r(
        "tool-metadata-changed",
        I,
        "metadata of tool {name} changed",
        ACCEPT,
        "Informational.",
        "mcp",
        reason="Nobody breaks: metadata.",
    ),
    _r(
        "tool-input-schema-invalid",
        B,
        "input schema of tool {name} is no longer an object schema",
        UPDATE_TOOL,
        "Strict clients reject the tool list; report it to the server's maintainers.",
        "mcp",
        reason="Agents break: strict clients refuse the tool list.",
        fails="A strict client refuses the whole tool list: {op} has no object input schema.",
    ),
    _r(
        "tool-schema-dialect-changed",
        I,
        "JSON Schema dialect of tool {name} changed",
        ACCEPT,
        "Informational.",
        "mcp",
        reason="Nobody breaks: the schema keywords are compared as they are.",
    ),
    _r(
        "tool-output-schema-added",
        I,
        "output schema of tool {name} added",
        ACCEPT,
        "Structured output is described now.",
        "mcp",
        reason="Nobody breaks: structured output is described now.",
    ),
    _r(
        "tool-output-schema-removed",
        W,
        "output schema of tool {name} removed",
        UPDATE_TOOL,
        "Consumers of structuredContent lose their contract.",
        "mcp",
        reason="Consumers of structuredContent lose their contract (a warning: text content still "
        "comes).",
    ),
    _r(
        "prompt-removed",
        B,
        "prompt {name} removed",
        REMOVE_TOOL,
        "Stop using the prompt.",
        "mcp",
        reason="Agents break: requests for the prompt fail.",
        fails="A request for prompt `{name}` now fails: the server no longer lists it.",
    ),
    _r(
        "prompt-added",
        I,
        "prompt {name} added",
        ACCEPT,
        "Backward compatible.",
        "mcp",
        reason="Nobody breaks: one more prompt.",
    ),
    _r(
        "prompt-description-changed",
        I,
        "description of prompt {name} changed",
        ACCEPT,
        "Informational.",
        "mcp",
        reason="Nobody breaks: the text shown changed.",
    ),
    _r(
        "prompt-argument-added-required",
        B,
        "required argument {detail} added to prompt {name}",
        SEND_REQUIRED,
        "Pass the new argument.",
        "mcp",
        reason="Agents break: requests without the argument fail.",
        fails="A request for prompt `{name}` without argument {after:the new one} is now refused.",
    ),
    _r(
        "prompt-argument-added-optional",
        I,
        "optional argument {detail} added to prompt {name}",
        ACCEPT,
        "Backward compatible.",
        "mcp",
        reason="Nobody breaks: the argument may be left out.",
    ),
    _r(
        "prompt-argument-became-required",
        B,
        "argument {detail} of prompt {name} became required",
        SEND_REQUIRED,
        "Always pass the argument now.",
        "mcp",
        reason="Agents break: requests without the argument fail.",
        fails="A request for prompt `{name}` without argument {after:the required one} is now "
        "refused.",
    ),
    _r(
        "prompt-argument-became-optional",
        I,
        "argument {detail} of prompt {name} became optional",
        ACCEPT,
        "Backward compatible.",
        "mcp",
        reason="Nobody breaks.",
    ),
    _r(
        "prompt-argument-removed",
        W,
        "argument {detail} removed from prompt {name}",
        UPDATE_TOOL,
        "Stop passing the argument.",
        "mcp",
        reason="Agents may break: the argument is ignored or refused (a warning).",
    ),
    _r(
        "resource-template-removed",
        B,
        "resource template {name} removed",
        REMOVE_TOOL,
        "Stop reading resources through this template.",
        "mcp",
        reason="Agents break: reads through the template fail.",
        fails="A read of resources through template `{name}` now fails: the template is gone.",
    ),
    _r(
        "resource-template-added",
        I,
        "resource template {name} added",
        ACCEPT,
        "Backward compatible.",
        "mcp",
        reason="Nobody breaks.",
    ),
    _r(
        "resource-template-changed",
        I,
        "resource template {name} changed",
        ACCEPT,
        "Informational.",
        "mcp",
        reason="Nobody breaks: metadata of the template.",
    ),
    _r(
        "resource-removed",
        W,
        "resource {name} removed",
        UPDATE_TOOL,
        "Resource lists are often data-driven; check that you still need it.",
        "mcp",
        reason="Agents may break: resource lists are often data-driven (a warning).",
    ),
    _r(
        "resource-added",
        I,
        "resource {name} added",
        ACCEPT,
        "Backward compatible.",
        "mcp",
        reason="Nobody breaks.",
    ),
    _r(
        "resource-metadata-changed",
        I,
        "metadata of resource {name} changed",
        ACCEPT,
        "Informational.",
        "mcp",
        reason="Nobody breaks: metadata.",
    ),
    _r(
        "capability-removed",
        B,
        "capability {name} no longer advertised",
        REMOVE_TOOL,
        "Everything behind the capability is unavailable now.",
        "mcp",
        reason="Agents break: everything behind the capability is gone.",
        fails="A call that uses the `{name}` capability now fails: it is not advertised.",
    ),
    _r(
        "capability-removed-minor",
        W,
        "capability {name} no longer advertised",
        CHECK_CONFIG,
        "An optional feature of the server is gone.",
        "mcp",
        reason="Agents may miss an optional feature (a warning).",
    ),
    _r(
        "capability-added",
        I,
        "capability {name} advertised",
        ACCEPT,
        "Backward compatible.",
        "mcp",
        reason="Nobody breaks.",
    ),
    _r(
        "capability-flags-changed",
        I,
        "flags of capability {name} changed",
        ACCEPT,
        "Informational.",
        "mcp",
        reason="Nobody breaks: notification flags.",
    ),
    _r(
        "capability-flag-removed",
        W,
        "capability flag {name} no longer advertised",
        CHECK_CONFIG,
        "Clients that relied on the feature (list-changed notifications, resource "
        "subscriptions) stop getting it; refresh lists yourself or stop subscribing.",
        "mcp",
        reason="Agents may miss an optional feature: a notification no longer comes, or a "
        "subscription is refused; no listed tool, prompt or resource is gone (a warning).",
    ),
    _r(
        "instructions-changed",
        W,
        "server instructions changed",
        REVIEW_DESCRIPTION,
        "The text the model reads changed; review it.",
        "mcp",
        reason="Agents may change behaviour: the model reads the new text (a warning).",
    ),
    _r(
        "server-name-changed",
        W,
        "server name changed from {before} to {after}",
        CHECK_CONFIG,
        "Check that the watch still points at the intended server.",
        "mcp",
        reason="The watch may point at another server now (a warning).",
    ),
    _r(
        "server-version-changed",
        I,
        "server version changed from {before} to {after}",
        ACCEPT,
        "Informational.",
        "mcp",
        reason="Nobody breaks: a version label.",
    ),
    _r(
        "server-info-metadata-changed",
        I,
        "server metadata changed",
        ACCEPT,
        "Informational.",
        "mcp",
        reason="Nobody breaks: metadata.",
    ),
    _r(
        "protocol-version-changed",
        I,
        "protocol version changed from {before} to {after}",
        ACCEPT,
        "Informational; the tool surface is compared separately.",
        "mcp",
        reason="Nobody breaks: the surface is compared on its own.",
    ),
    _r(
        "protocol-version-downgraded",
        W,
        "protocol version went back from {before} to {after}",
        CHECK_CONFIG,
        "The server now speaks an older MCP revision: features of the newer one (structured "
        "output, elicitation, tasks) may be gone for clients that use them; check the server's "
        "release.",
        "mcp",
        reason="Agents may lose features of the newer revision; the tool surface is compared on "
        "its own (a warning).",
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
        reason="Agents break: delegations that ask for the skill fail.",
        fails="{call} now fails: the agent no longer has the skill.",
    ),
    _r(
        "skill-added",
        I,
        "skill {name} added",
        ACCEPT,
        "Backward compatible.",
        "a2a",
        reason="Nobody breaks: one more skill.",
    ),
    _r(
        "skill-renamed",
        B,
        "skill renamed from {before} to {after}{detail}",
        REMOVE_TOOL,
        "Renamed from the old id to the new one (the summary names both): ask the agent for "
        "the skill by its new id.",
        "a2a",
        reason="Agents break: delegations that name the skill by its old id fail, though the "
        "skill is still there under its new id (a removal and an addition paired by their "
        "spelling, or by equal schemas and modes and a similar description).",
        fails="{call} now fails: the agent lists the skill as {after} now.",
    ),
    _r(
        "skill-name-changed",
        I,
        "name of skill {name} changed",
        ACCEPT,
        "Cosmetic; the skill id is unchanged.",
        "a2a",
        reason="Nobody breaks: a display name; the skill id is the same.",
    ),
    _r(
        "skill-description-changed",
        I,
        "description of skill {name} changed",
        ACCEPT,
        "Informational; an orchestrator that picks skills by their description may choose "
        "differently.",
        "a2a",
        reason="Nobody breaks: the skill is the same; an orchestrator may route differently.",
    ),
    _poisoning("skill", "a2a"),
    _poisoning("agent-description", "a2a"),
    _r(
        "skill-tags-changed",
        I,
        "tags of skill {name} changed",
        ACCEPT,
        "Informational.",
        "a2a",
        reason="Nobody breaks: labels for discovery.",
    ),
    _r(
        "skill-examples-changed",
        I,
        "examples of skill {name} changed",
        ACCEPT,
        "Informational.",
        "a2a",
        reason="Nobody breaks: sample requests.",
    ),
    _r(
        "skill-input-mode-removed",
        B,
        "skill {name} no longer accepts {detail}",
        UPDATE_CLIENT,
        "Messages with parts of this media type are refused now; send one the skill still accepts.",
        "a2a",
        reason="Callers break: messages in the removed media type are refused.",
        fails="{call} with {before:parts of the removed media type} is now refused.",
    ),
    _r(
        "skill-input-mode-added",
        I,
        "skill {name} accepts {detail}",
        ACCEPT,
        "Backward compatible.",
        "a2a",
        reason="Nobody breaks: one more media type is accepted.",
    ),
    _r(
        "skill-output-mode-removed",
        B,
        "skill {name} no longer produces {detail}",
        UPDATE_CLIENT,
        "Results no longer come in this media type; accept one the skill still produces.",
        "a2a",
        reason="Callers break: results no longer come in the removed media type.",
        fails="{call} that expects results as {before:the removed media type} no longer gets them.",
    ),
    _r(
        "skill-output-mode-added",
        I,
        "skill {name} produces {detail}",
        ACCEPT,
        "Backward compatible.",
        "a2a",
        reason="Nobody breaks: one more media type is produced.",
    ),
    _r(
        "skill-security-requirement-added",
        B,
        "security requirement {after} added to skill {name}",
        CHECK_CONFIG,
        "Configure the new credentials before delegating to the skill.",
        "a2a",
        reason="Callers break: calls without the new credentials are refused.",
        fails="{call} without credentials ({after:the new requirement}) is now refused.",
    ),
    _r(
        "skill-security-requirement-removed",
        I,
        "security requirement {before} removed from skill {name}",
        ACCEPT,
        "Nothing to do.",
        "a2a",
        reason="Nobody breaks: fewer credentials are asked for.",
    ),
    _r(
        "skill-schema-dialect-changed",
        I,
        "JSON Schema dialect of skill {name} changed",
        ACCEPT,
        "Informational.",
        "a2a",
        reason="Nobody breaks: the schema is compared on its own.",
    ),
    _r(
        "skill-input-schema-invalid",
        B,
        "input schema of skill {name} is no longer an object schema",
        UPDATE_TOOL,
        "Callers that build the skill's input from its schema break; report it to the agent's "
        "maintainers.",
        "a2a",
        reason="Callers break: the input cannot be built from the schema.",
        fails="A caller that builds input from the schema of {op} breaks: it is no object schema.",
    ),
    _r(
        "skill-output-schema-added",
        I,
        "output schema of skill {name} added",
        ACCEPT,
        "The skill's result is described now.",
        "a2a",
        reason="Nobody breaks: the result is described now.",
    ),
    _r(
        "skill-output-schema-removed",
        W,
        "output schema of skill {name} removed",
        UPDATE_TOOL,
        "Consumers of the skill's structured result lose their contract.",
        "a2a",
        reason="Callers may break: the result has no contract any more (a warning, as for MCP "
        "tools).",
    ),
    _r(
        "agent-default-input-mode-removed",
        B,
        "the agent no longer accepts {detail} by default",
        UPDATE_CLIENT,
        "Skills without modes of their own refuse parts of this media type now; send one the agent"
        " still accepts.",
        "a2a",
        reason="Callers break: skills without modes of their own refuse the removed media type.",
        fails="A task with {before:parts of the removed media type} is now refused by skills "
        "without modes of their own.",
    ),
    _r(
        "agent-default-input-mode-added",
        I,
        "the agent accepts {detail} by default",
        ACCEPT,
        "Backward compatible.",
        "a2a",
        reason="Nobody breaks: one more media type is accepted.",
    ),
    _r(
        "agent-default-output-mode-removed",
        B,
        "the agent no longer produces {detail} by default",
        UPDATE_CLIENT,
        "Skills without modes of their own no longer answer in this media type; accept one the "
        "agent still produces.",
        "a2a",
        reason="Callers break: skills without modes of their own no longer answer in the removed "
        "media type.",
        fails="A task that expects results as {before:the removed media type} no longer gets them "
        "from skills without modes of their own.",
    ),
    _r(
        "agent-default-output-mode-added",
        I,
        "the agent produces {detail} by default",
        ACCEPT,
        "Backward compatible.",
        "a2a",
        reason="Nobody breaks: one more media type is produced.",
    ),
    _r(
        "agent-url-changed",
        W,
        "agent endpoint changed from {before} to {after}",
        CHECK_CONFIG,
        "Calls to the old endpoint may fail; check that the watch and your client still point at "
        "the intended agent.",
        "a2a",
        reason="Callers may break: those that call the old endpoint (a warning: it may still "
        "answer).",
    ),
    _r(
        "agent-transport-changed",
        W,
        "preferred transport changed from {before} to {after}",
        CHECK_CONFIG,
        "Check that your A2A client speaks the new transport.",
        "a2a",
        reason="Callers may break: those that speak only the old transport (a warning: it may "
        "still be offered).",
    ),
    _r(
        "agent-security-requirement-added",
        B,
        "security requirement {after} added",
        CHECK_CONFIG,
        "Configure the new credentials before calling the agent.",
        "a2a",
        reason="Callers break: calls without the new credentials are refused.",
        fails="A task sent without credentials ({after:the new requirement}) is now refused.",
    ),
    _r(
        "agent-security-requirement-removed",
        I,
        "security requirement {before} removed",
        ACCEPT,
        "Nothing to do.",
        "a2a",
        reason="Nobody breaks: fewer credentials are asked for.",
    ),
    _r(
        "agent-capability-removed",
        W,
        "capability {name} no longer supported",
        CHECK_CONFIG,
        "Fall back to polling the task (streaming) or stop registering webhooks (push "
        "notifications).",
        "a2a",
        reason="Callers that stream or register push webhooks must fall back to polling (a "
        "warning).",
    ),
    _r(
        "agent-capability-added",
        I,
        "capability {name} supported",
        ACCEPT,
        "Backward compatible.",
        "a2a",
        reason="Nobody breaks.",
    ),
    _r(
        "agent-capabilities-changed",
        I,
        "capabilities changed",
        ACCEPT,
        "Informational.",
        "a2a",
        reason="Nobody breaks: extensions and other flags.",
    ),
    _card_signature(
        "card-signature-removed", "agent card no longer signed by a trusted key ({detail})"
    ),
    _card_signature("card-signature-invalid", "agent card signature does not verify ({detail})"),
    _card_signature(
        "card-signature-untrusted", "agent card signed by a key the watch does not trust ({detail})"
    ),
    _r(
        "agent-name-changed",
        W,
        "agent name changed from {before} to {after}",
        CHECK_CONFIG,
        "Check that the watch still points at the intended agent.",
        "a2a",
        reason="The watch may point at another agent now (a warning).",
    ),
    _r(
        "agent-version-changed",
        I,
        "agent version changed from {before} to {after}",
        ACCEPT,
        "Informational.",
        "a2a",
        reason="Nobody breaks: a version label.",
    ),
    _r(
        "agent-protocol-version-changed",
        I,
        "A2A protocol version changed from {before} to {after}",
        ACCEPT,
        "Informational; the skills are compared separately.",
        "a2a",
        reason="Nobody breaks: the skills are compared on their own.",
    ),
    _r(
        "agent-description-changed",
        I,
        "agent description changed",
        ACCEPT,
        "Informational.",
        "a2a",
        reason="Nobody breaks: text about the agent.",
    ),
    _r(
        "agent-metadata-changed",
        I,
        "agent metadata changed",
        ACCEPT,
        "Informational.",
        "a2a",
        reason="Nobody breaks: metadata.",
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
                        reason=fam.reason_for(direction),
                        fails=fam.fails_for(direction),
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


def gate_reasons(rule_ids: Iterable[str]) -> list[str]:
    """The gate's own reason tokens of the rules of a comparison's counted breaking findings
    (`tool_poisoning_suspected`), sorted, without repeats; unknown ids add none."""
    return sorted({CATALOG[r].gate_reason for r in rule_ids if r in CATALOG} - {""})
