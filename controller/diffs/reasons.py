"""Why each rule has its severity, per side: who breaks, and how (docs/rules.md).

A request is data the consumer sends, a response data it reads (CONTRACT.md). Each schema
family has one reason per side, each contract rule one reason; `render_rules_markdown` puts
them beside the severities, and a test keeps every rule with a reason.
"""

from __future__ import annotations

from controller.diffs.rules import CONTRACT_RULES, SCHEMA_FAMILIES, Direction

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


def _bounds(stem: str) -> dict[str, tuple[str, str]]:
    upper = stem.startswith(("max", "exclusive-max"))
    tighter, looser = ("decreased", "increased") if upper else ("increased", "decreased")
    return {
        f"{stem}-{tighter}": (_REFUSED, _SAFE_READ),
        f"{stem}-{looser}": (_SAFE_SEND, _UNEXPECTED),
        f"{stem}-set": (_NEW_LIMIT, _SAFE_READ),
        f"{stem}-unset": (_SAFE_SEND, _LIMIT_LOST),
    }


def _restriction(aspect: str) -> dict[str, tuple[str, str]]:
    """A keyword that restricts values when present (contains, if, not ...)."""
    return {
        f"{aspect}-added": (_REFUSED, _SAFE_READ),
        f"{aspect}-removed": (_SAFE_SEND, _UNEXPECTED),
    }


# Schema family aspect -> (why in a request, why in a response).
FAMILY_REASONS: dict[str, tuple[str, str]] = {
    "added-required": (
        "Senders break: calls without the new field are refused.",
        "Readers are unaffected: they get one field more.",
    ),
    "added-required-with-default": (
        "Senders break: a required field must be sent, whatever its default.",
        "Readers are unaffected: they get one field more.",
    ),
    "added-optional": (
        "Senders are unaffected: the field may be left out.",
        "Readers are unaffected: they may get one field more.",
    ),
    "removed": (
        "Senders may break: the field is ignored or refused now (a warning, CONTRACT.md).",
        "Readers may break: an optional field they read no longer comes (a warning).",
    ),
    "removed-required": (
        "Senders may break: the field is ignored or refused now (a warning, CONTRACT.md).",
        "Readers break: a field they were promised no longer comes.",
    ),
    "removed-closed-schema": (
        "Senders break: the schema refuses unknown fields, so calls that send it are refused.",
        "Readers may break: the field no longer comes (a warning).",
    ),
    "became-required": (
        "Senders break: calls without the field are refused.",
        "Readers are unaffected: the field now always comes.",
    ),
    "became-required-with-default": (
        "Senders break: a required field must be sent, whatever its default.",
        "Readers are unaffected: the field now always comes.",
    ),
    "became-optional": (
        "Senders are unaffected: they may still send it.",
        "Readers break: a field they relied on may be missing.",
    ),
    "type-changed": (
        "Senders break: values of the old type are refused.",
        "Readers break: values come in a type their code does not parse.",
    ),
    "type-generalized": (
        "Senders are unaffected: the old type is still accepted.",
        "Readers break: values of the wider type (decimals where integers were) may come.",
    ),
    "type-specialized": (
        "Senders break: values outside the narrower type are refused.",
        "Readers are unaffected: the narrower type is one they already parse.",
    ),
    "list-of-types-widened": (
        "Senders are unaffected: every old type is still accepted.",
        "Readers break: values of a type they do not handle may come.",
    ),
    "list-of-types-narrowed": (
        "Senders break: values of the dropped types are refused.",
        "Readers are unaffected: they get fewer types.",
    ),
    "became-nullable": (
        "Senders are unaffected: null is one more value accepted.",
        "Readers break: null may come where a value always came.",
    ),
    "became-not-nullable": (
        "Senders break: null is refused now.",
        "Readers are unaffected: null no longer comes.",
    ),
    "format-added": (_NEW_LIMIT, _SAFE_READ),
    "format-removed": (_SAFE_SEND, "Readers may break: values may no longer follow the format."),
    "format-changed": (
        "Senders break: values in the old format are refused.",
        "Readers break: values come in a format their parsing does not expect.",
    ),
    "format-widened": (
        "Senders are unaffected: every old value still fits (int32 -> int64).",
        "Readers break: values their old type cannot hold may come (int64 into an int32).",
    ),
    "format-narrowed": (
        "Senders break: values only the old format holds are refused.",
        "Readers are unaffected: the values fit the old format too.",
    ),
    "keyword-no-effect": (_NOTHING, _NOTHING),
    "enum-value-added": (
        "Senders are unaffected: one more value is accepted.",
        "Readers may break: a value their code does not know may come (a warning).",
    ),
    "enum-value-removed": (
        "Senders break: the removed value is refused.",
        "Readers are unaffected: one value fewer comes.",
    ),
    "xml-changed": (
        "Senders of XML may break: the element is named, wrapped or namespaced another way.",
        "Readers of XML may break: the element is named, wrapped or namespaced another way.",
    ),
    "x-extensible-enum-value-added": (
        "Senders are unaffected: one more value is known.",
        "Readers are unaffected: an extensible enum promised unknown values from the start.",
    ),
    "x-extensible-enum-value-removed": (
        "Senders break: the value is no longer accepted.",
        "Readers are unaffected: one value fewer comes.",
    ),
    "became-enum": (
        "Senders break: values outside the list are refused.",
        "Readers are unaffected: they get fewer values.",
    ),
    "enum-removed": (
        "Senders are unaffected: every value is accepted now.",
        "Readers may break: values outside the old list may come (a warning).",
    ),
    "const-added": (
        "Senders break: only the constant is accepted.",
        "Readers are unaffected: they always get the same value.",
    ),
    "const-removed": (
        "Senders are unaffected: any value is accepted.",
        "Readers break: other values than the constant may come.",
    ),
    "const-changed": (
        "Senders break: the old constant is refused.",
        "Readers break: another value than the one they check for comes.",
    ),
    **_bounds("max"),
    **_bounds("min"),
    **_bounds("exclusive-max"),
    **_bounds("exclusive-min"),
    **_bounds("max-length"),
    **_bounds("min-length"),
    **_bounds("max-items"),
    **_bounds("min-items"),
    **_bounds("max-properties"),
    **_bounds("min-properties"),
    **_bounds("max-contains"),
    **_bounds("min-contains"),
    "multiple-of-changed": (
        "Senders break: some multiples of the old step are refused.",
        "Readers break: values between the old steps may come.",
    ),
    "type-compatible": (
        "Nobody is refused: in XML, forms and plain text nothing on the wire tells the types "
        "apart.",
        "Readers parse the same text either way: nothing on the wire tells the types apart.",
    ),
    "multiple-of-generalized": (_SAFE_SEND, _UNEXPECTED),
    "multiple-of-specialized": (_REFUSED, _SAFE_READ),
    "multiple-of-set": (_NEW_LIMIT, _SAFE_READ),
    "multiple-of-unset": (_SAFE_SEND, "Readers may break: values between the old steps may come."),
    "unique-items-set": (
        "Senders may break: lists with duplicates are refused (a warning: theirs may have none).",
        _SAFE_READ,
    ),
    "unique-items-unset": (_SAFE_SEND, "Readers may break: duplicates may come (a warning)."),
    "pattern-added": (_NEW_LIMIT, _SAFE_READ),
    "pattern-changed": (
        "Senders may break: values that matched the old pattern may not match the new one "
        "(patterns are not compared as languages: a warning).",
        "Readers are unaffected unless they validate against the old pattern.",
    ),
    "pattern-generalized": (_SAFE_SEND, "Readers are unaffected unless they validated the value."),
    "pattern-removed": (_SAFE_SEND, "Readers are unaffected unless they validated the value."),
    "default-value-added": (
        "Senders that leave the field out get the default applied; for a request parameter "
        "(breaking) the server now acts as if they had sent it.",
        "Readers are unaffected: a default documents what comes when nothing is said.",
    ),
    "default-value-changed": (
        "Senders that leave the field out get another behaviour; for a request parameter "
        "(breaking) silently.",
        "Readers are unaffected: a default documents what comes when nothing is said.",
    ),
    "default-value-removed": (
        "Senders that leave the field out no longer know what applies; for a request "
        "parameter (breaking) the behaviour may change silently.",
        "Readers are unaffected: a default documents what comes when nothing is said.",
    ),
    "additional-properties-forbidden": (
        "Senders may break: calls with undocumented keys are refused (a warning: theirs may "
        "have none).",
        _SAFE_READ,
    ),
    "additional-properties-allowed": (
        _SAFE_SEND,
        "Readers are unaffected: unknown keys are ignored by tolerant readers.",
    ),
    "one-of-added": (
        "Senders are unaffected: one more shape is accepted.",
        "Readers break: a shape their code does not handle may come.",
    ),
    "one-of-removed": (
        "Senders break: values of the removed shape are refused.",
        "Readers are unaffected: one shape fewer comes.",
    ),
    "any-of-added": (
        "Senders are unaffected: one more shape is accepted.",
        "Readers are unaffected as the field's reference reads it (info): the new shape may "
        "overlap ones they handle.",
    ),
    "any-of-removed": (
        "Senders break: values of the removed shape are refused.",
        "Readers are unaffected: one shape fewer comes.",
    ),
    "all-of-added": (
        "Senders break: values must satisfy one more subschema.",
        "Readers are unaffected: what comes satisfies more.",
    ),
    "all-of-removed": (
        "Senders may break: what the subschema defined may be ignored now (a warning).",
        "Readers are unaffected as far as the shape goes (info).",
    ),
    "all-of-added-annotation-only": (_NOTHING, _NOTHING),
    "all-of-removed-annotation-only": (_NOTHING, _NOTHING),
    "any-of-became-one-of": (
        "Senders may break: a value that matches two alternatives is refused now (a warning).",
        "Readers are unaffected: what comes matches exactly one alternative.",
    ),
    "one-of-became-any-of": (
        "Senders are unaffected: more values are accepted.",
        "Readers may break: a value may match several alternatives now (a warning).",
    ),
    "wrapped-in-one-of-original-preserved": (
        "Senders may break: an old value that also matches another alternative is refused "
        "(a warning).",
        "Readers break: values of the new alternatives may come.",
    ),
    "additional-properties-unconstrained": (
        "Senders are unaffected: more values are accepted.",
        "Readers need a look, no more: only code iterating undocumented keys meets a new "
        "shape (a warning).",
    ),
    "additional-properties-constrained": (
        "Senders may break: undocumented keys they send must match the new schema (a "
        "warning: few send undocumented keys).",
        "Readers are unaffected: those values are described now.",
    ),
    "not-value-added": (
        "Senders break: the value newly listed under not is refused.",
        "Readers are unaffected: one value fewer comes.",
    ),
    "not-value-removed": (
        "Senders are unaffected: one more value is accepted.",
        "Readers break: a value the old contract excluded may come.",
    ),
    "range-disjoint": (
        "Senders break: no value the old bounds allowed is accepted now.",
        "Readers break: every value now lies where the old bounds said none would.",
    ),
    "known-value-refused": (
        "Senders break: a value the schema itself offered (enum, default, example) is refused.",
        "Readers are unaffected: that value no longer comes.",
    ),
    "undeclared-became-required": (
        "Senders break: a call without the field is refused, and nothing says what to send.",
        "Readers are unaffected: one more field always comes.",
    ),
    "undeclared-became-optional": (
        "Senders are unaffected: the field need not be sent.",
        "Readers need a look, no more: no model has the field, so only code reading it by "
        "name can miss it (a warning).",
    ),
    "type-made-explicit": (
        "Senders are unaffected: the properties, alternatives or values already implied the type.",
        "Readers are unaffected: the values were of that type already.",
    ),
    "type-left-implied": (
        "Senders are unaffected: the properties, alternatives or values still imply the type.",
        "Readers are unaffected: generated models read the same type.",
    ),
    "enum-value-corrected": (
        "Senders are unaffected: the marked-up text was never a value a server took; the "
        "value it meant is still listed.",
        "Readers are unaffected: the value that comes is the one listed now.",
    ),
    "rewritten-as-alternatives": (
        "Senders are unaffected: every value they sent fits an alternative (and with oneOf, "
        "only one).",
        "Readers are unaffected: every alternative is a value the old schema allowed.",
    ),
    "alternatives-folded": (
        "Senders are unaffected: the one schema accepts every value an alternative accepted.",
        "Readers are unaffected: the one schema allows only values an alternative allowed.",
    ),
    "wrapped-in-any-of": (
        "Senders are unaffected: the old shape is one of the alternatives.",
        "Readers break: values of the new alternatives may come.",
    ),
    "restructured": (
        "Senders may break: the old shape is not kept as an alternative (a warning: it may "
        "still fit).",
        "Readers break: values come in a shape their model does not describe.",
    ),
    "wrapped-in-one-of": (
        "Senders break: the shape they send is not one of the alternatives.",
        "Readers break: values come in shapes their model does not describe.",
    ),
    "discriminator-added": (
        "Senders are unaffected: the tag property was part of the values already.",
        "Readers are unaffected: values are tagged now.",
    ),
    "discriminator-removed": (
        "Senders are unaffected: the tag may still be sent.",
        "Readers that dispatch on the tag should check (info): the values are the same.",
    ),
    "discriminator-property-name-changed": (
        "Senders break: the server reads the type from another property.",
        "Readers break: generated deserialisers dispatch on a property that no longer tags.",
    ),
    "discriminator-mapping-added": (
        "Senders are unaffected: one more tag value is known.",
        "Readers are unaffected as far as the mapping goes (a new subtype is its own change).",
    ),
    "discriminator-mapping-deleted": (
        "Senders should check (info): the tag value may still be accepted by schema.",
        "Readers are unaffected: one tag value fewer comes.",
    ),
    "discriminator-mapping-changed": (
        "Senders should check (info): the tag value maps to another schema.",
        "Readers should check (info): the tag value maps to another schema.",
    ),
    **_restriction("contains"),
    "prefix-items-added": (
        "Senders are unaffected as far as the position goes (info): items were any before.",
        "Readers break: items at those positions follow other schemas now.",
    ),
    "prefix-items-removed": (
        "Senders break: positions lose their own schemas, the items schema applies to all.",
        "Readers are unaffected: what comes satisfies less.",
    ),
    "prefix-item-added": (
        "Nobody breaks by the entry itself (info): the findings at its position say how the "
        "values allowed there changed.",
        "Nobody breaks by the entry itself (info): the findings at its position say how the "
        "values allowed there changed.",
    ),
    "prefix-item-removed": (
        "Nobody breaks by the entry itself (info): the position follows `items` now, and the "
        "findings there say how.",
        "Nobody breaks by the entry itself (info): the position follows `items` now, and the "
        "findings there say how.",
    ),
    "became-false": (
        "Senders break: the false schema refuses every value they sent before.",
        "Readers are unaffected: nothing comes where something came before (a narrowing).",
    ),
    "no-longer-false": (
        _SAFE_SEND,
        "Readers break: values come where none could come before.",
    ),
    **_restriction("unevaluated-items"),
    **_restriction("unevaluated-properties"),
    **_restriction("dependent-required"),
    "dependent-required-changed": (
        "Senders break: other fields are required together now.",
        "Readers break: fields they relied on coming together may not.",
    ),
    **_restriction("dependent-schema"),
    **_restriction("pattern-property"),
    **_restriction("property-names"),
    **_restriction("content-schema"),
    "content-media-type-changed": (
        "Senders break: the embedded content must be of another media type.",
        "Readers break: the embedded content comes in another media type.",
    ),
    "content-encoding-changed": (
        "Senders break: the embedded content must be encoded another way.",
        "Readers break: the embedded content comes encoded another way.",
    ),
    **_restriction("if"),
    **_restriction("then"),
    **_restriction("else"),
    **_restriction("not"),
    "not-changed": (
        "Senders may break: other values are excluded now (a warning: findings inside a not "
        "read inverted).",
        "Readers may break: values excluded before may come (a warning).",
    ),
    "deprecated": (
        "Nobody breaks yet: the field still works; migrate before it goes.",
        "Nobody breaks yet: the field still comes; stop relying on it.",
    ),
    "deprecated-with-sunset": (
        "Nobody breaks yet: the field works until the sunset date.",
        "Nobody breaks yet: the field comes until the sunset date.",
    ),
    "deprecated-sunset-invalid": (
        "Nobody breaks yet: the field still works; the sunset date is unreadable.",
        "Nobody breaks yet: the field still comes; the sunset date is unreadable.",
    ),
    "reactivated": (_NOTHING, _NOTHING),
    "stability-decreased": (
        "Senders break on the vendor's word: the field may change without notice now.",
        "Readers break on the vendor's word: the field may change without notice now.",
    ),
    "stability-increased": (_NOTHING, _NOTHING),
    "stability-invalid": (
        "Nobody knows what the vendor promises: the level is not one of draft, alpha, beta, "
        "stable.",
        "Nobody knows what the vendor promises: the level is not one of draft, alpha, beta, "
        "stable.",
    ),
    "became-not-write-only": (
        "Senders are unaffected: writeOnly does not restrict what is sent.",
        "Readers may break: a required field that was never returned comes now (a warning).",
    ),
    "became-write-only": (
        "Senders are unaffected: writeOnly does not restrict what is sent.",
        "Readers break: the field is never returned now.",
    ),
    "became-not-write-only-optional": (
        "Senders are unaffected: writeOnly does not restrict what is sent.",
        "Readers are unaffected: an optional field may come now.",
    ),
    "became-write-only-optional": (
        "Senders are unaffected: writeOnly does not restrict what is sent.",
        "Readers break: a field they got is never returned now.",
    ),
    "became-read-only": (
        "Senders break: the server sets the field and may refuse it in requests.",
        "Readers are unaffected: readOnly does not restrict what is returned.",
    ),
    "became-read-only-optional": (
        "Senders break: the server sets the field and may refuse it in requests.",
        "Readers are unaffected: readOnly does not restrict what is returned.",
    ),
    "became-not-read-only": (
        "Senders break: the field is required in requests now and was never sent.",
        "Readers are unaffected: readOnly does not restrict what is returned.",
    ),
    "became-not-read-only-optional": (
        "Senders are unaffected: they may send the field now.",
        "Readers are unaffected: readOnly does not restrict what is returned.",
    ),
    "subtype-added": (
        "Senders are unaffected: one more subtype is accepted.",
        "Readers may break: objects of a subtype they do not know may come (a warning, like an "
        "enum value).",
    ),
    "subtype-removed": (
        "Senders break: objects of the removed subtype are refused.",
        "Readers are unaffected: one subtype fewer comes.",
    ),
    "schema-deprecated": (
        "Nobody breaks yet: the schema still works; migrate before it goes.",
        "Nobody breaks yet: the schema still comes; stop relying on it.",
    ),
    "schema-deprecated-with-sunset": (
        "Nobody breaks yet: the schema works until the sunset date.",
        "Nobody breaks yet: the schema comes until the sunset date.",
    ),
    "schema-deprecated-sunset-invalid": (
        "Nobody breaks yet: the schema still works; the sunset date is unreadable.",
        "Nobody breaks yet: the schema still comes; the sunset date is unreadable.",
    ),
    "schema-reactivated": (_NOTHING, _NOTHING),
    "schema-stability-decreased": (
        "Senders break on the vendor's word: the schema may change without notice now.",
        "Readers break on the vendor's word: the schema may change without notice now.",
    ),
    "schema-stability-increased": (_NOTHING, _NOTHING),
    "schema-stability-invalid": (
        "Nobody knows what the vendor promises: the level is not valid.",
        "Nobody knows what the vendor promises: the level is not valid.",
    ),
    "unclassified-difference": (
        "Unknown: no rule reads this keyword, so it is at least a warning, never silence.",
        "Unknown: no rule reads this keyword, so it is at least a warning, never silence.",
    ),
    "description-changed": (
        "Nobody breaks: the text changed (reported only when asked for).",
        "Nobody breaks: the text changed (reported only when asked for).",
    ),
}

_OPERATION_GONE = "Callers break: requests to the operation fail."
_VENDOR_CLOCK = "Callers break on the vendor's schedule: the grace period they planned on changed."
_META = "Callers cannot tell when it goes: the deprecation metadata is unreadable."

# Contract rule id -> why it has its severity.
CONTRACT_REASONS: dict[str, str] = {
    "unclassified-difference": "Unknown: no rule reads this place, so it is at least a warning, "
    "never silence.",
    "endpoint-added": "Nobody breaks: a new operation is there to use.",
    "endpoint-removed": _OPERATION_GONE,
    "endpoint-removed-deprecated": "Callers that did not migrate break; deprecation gave notice "
    "(a warning, CONTRACT.md).",
    "endpoint-removed-before-sunset": _OPERATION_GONE + " Earlier than announced.",
    "endpoint-removed-unstable": "Callers of a draft/alpha operation were promised nothing.",
    "endpoint-unstable-changed": "Callers of a draft/alpha operation were promised nothing.",
    "endpoint-sunset-missing": "Callers cannot plan: the operation is going without a date "
    "(the policy asks for one).",
    "request-parameter-sunset-missing": "Callers cannot plan: the parameter is going without "
    "a date (the policy asks for one).",
    "endpoint-deprecated": "Nobody breaks yet: the operation still works.",
    "endpoint-deprecated-with-sunset": "Nobody breaks yet: the operation works until the date.",
    "endpoint-reactivated": "Nobody breaks: the operation stays.",
    "endpoint-sunset-deleted": _VENDOR_CLOCK,
    "endpoint-sunset-invalid": _META,
    "endpoint-sunset-moved-earlier": _VENDOR_CLOCK,
    "endpoint-stability-decreased": "Callers break on the vendor's word: the operation may "
    "change without notice now.",
    "endpoint-stability-increased": "Nobody breaks: the vendor promises more.",
    "endpoint-stability-invalid": "Nobody knows what the vendor promises: the level is not valid.",
    "endpoint-operation-id-changed": "Nobody breaks on the wire; generated clients may rename "
    "the method.",
    "server-added": "Nobody breaks: one more base URL.",
    "server-removed": "Callers configured with that base URL may break (a warning: servers "
    "lists are often edited).",
    "endpoint-server-added": "Nobody breaks: one more base URL for the operation.",
    "endpoint-server-removed": "Callers of the operation at that base URL may break (a warning, "
    "as for the document's servers: servers lists are often edited).",
    "request-parameter-added-required": "Callers break: requests without the parameter are "
    "refused.",
    "request-parameter-added-optional": "Nobody breaks: the parameter may be left out.",
    "request-parameter-removed": "Callers may break: the parameter is ignored or refused now "
    "(a warning, CONTRACT.md).",
    "request-parameter-removed-deprecated": "Callers were told to stop sending it.",
    "request-parameter-removed-before-sunset": "Callers break: the parameter went earlier than "
    "announced.",
    "request-parameter-became-required": "Callers break: requests without it are refused.",
    "request-parameter-became-optional": "Nobody breaks: it may still be sent.",
    "request-parameter-deprecated": "Nobody breaks yet: the parameter still works.",
    "request-parameter-reactivated": "Nobody breaks: the parameter stays.",
    "request-parameter-sunset-deleted": _VENDOR_CLOCK,
    "request-parameter-sunset-invalid": _META,
    "request-parameter-sunset-moved-earlier": _VENDOR_CLOCK,
    "request-parameter-style-changed": "Callers break: the value is written another way on the "
    "wire (style, explode, collectionFormat).",
    "request-parameter-style-no-effect": "Nobody breaks: the value is written the same way "
    "(explode has no effect on a primitive).",
    "request-parameter-empty-value-allowed": "Nobody breaks: an empty value is accepted too.",
    "request-parameter-empty-value-refused": "Callers that send the parameter empty break: "
    "`?name=` is refused now.",
    "request-body-added-required": "Callers break: requests without a body are refused.",
    "request-body-added-optional": "Nobody breaks: the body may be left out.",
    "request-body-removed": "Callers may break: the body is ignored or refused now (a warning).",
    "request-body-became-required": "Callers break: requests without a body are refused.",
    "request-body-became-optional": "Nobody breaks: the body may still be sent.",
    "request-body-media-type-added": "Nobody breaks: one more media type is accepted.",
    "request-body-media-type-removed": "Callers break: bodies in that media type are refused.",
    "response-media-type-added": "Readers are unaffected unless they negotiate content loosely.",
    "response-media-type-removed": "Readers break: responses in that media type no longer come.",
    "request-body-encoding-changed": "Callers may break: a form or multipart field is "
    "serialised another way (a warning).",
    "response-body-encoding-changed": "Readers may break: a form or multipart field comes "
    "serialised another way (a warning).",
    "request-body-media-type-schema-added": "Callers may break: what they send is checked "
    "against a schema now (a warning: it may fit).",
    "request-body-media-type-schema-removed": "Nobody breaks: anything is accepted now.",
    "request-body-media-type-item-schema-added": "Callers may break: streamed items are "
    "checked against a schema now (a warning).",
    "request-body-media-type-item-schema-removed": "Nobody breaks: any item is accepted now.",
    "response-body-media-type-schema-added": "Readers are unaffected: the shape is promised "
    "now where anything could come.",
    "response-body-media-type-schema-removed": "Readers may break: the shape is no longer "
    "promised (a warning).",
    "response-body-media-type-item-schema-added": "Readers are unaffected: streamed items are "
    "promised a shape now.",
    "response-body-media-type-item-schema-removed": "Readers may break: streamed items are no "
    "longer promised a shape (a warning).",
    "response-body-media-type-item-schema-removed-untyped": "Readers may break: nothing "
    "describes the streamed items now (a warning).",
    "api-version-not-bumped": "Readers of the version number are misled: a break shipped "
    "under the same version.",
    "api-version-decreased": "Readers of the version number are misled: it went backwards.",
    "api-major-version-not-bumped": "Readers of the version number are misled: a break "
    "shipped in a minor release.",
    "security-requirement-declared": "Senders are unaffected: the credential was a required "
    "parameter in the same place already.",
    "response-media-type-removed-placeholder": "Readers need a look, no more: the schema "
    "gone declared nothing to read (a warning).",
    "response-body-placeholder-changed": "Readers are unaffected: neither schema declares "
    "anything to read.",
    "response-success-status-added": "Readers are unaffected unless they branch on exact "
    "status codes.",
    "response-success-status-removed": "Readers break: the operation may answer with a success "
    "status they never saw documented.",
    "response-success-status-removed-covered": "Readers need a look, no more: the statuses left "
    "were documented already (or carry no body either); code branching on the gone one is "
    "dead (a warning).",
    "response-non-success-status-added": "Readers are unaffected: an error they may handle "
    "generically.",
    "response-non-success-status-removed": "Readers are unaffected: one error fewer comes.",
    "response-header-added": "Readers are unaffected: one more header.",
    "response-header-removed-required": "Readers break: a header they were promised no longer "
    "comes.",
    "response-header-removed-optional": "Readers may break: an optional header no longer comes "
    "(a warning).",
    "response-header-became-optional": "Readers break: a header they relied on may be missing.",
    "response-header-became-required": "Readers are unaffected: the header now always comes.",
    "response-header-deprecated": "Nobody breaks yet: the header still comes.",
    "response-header-reactivated": "Nobody breaks: the header stays.",
    "response-header-style-changed": "Readers break: the header value is written another way.",
    "response-header-style-no-effect": "Nobody breaks: the value is written the same way.",
    "security-requirement-added": "Callers without credentials break: they are refused now.",
    "security-requirement-removed": "Nobody breaks: credentials are not needed any more.",
    "security-scope-added": "Callers break: tokens issued without the new scope are refused.",
    "security-scope-removed": "Nobody breaks: tokens need fewer scopes.",
    "security-alternative-added": "Nobody breaks: one more way to authenticate (requirements "
    "are alternatives).",
    "security-alternative-removed": "Callers that authenticate that way break: they are refused.",
    "security-requirement-relaxed": "Nobody breaks: the credentials clients hold are more "
    "than enough.",
    "security-scheme-openid-connect-url-changed": "Callers break: they discover the provider "
    "at the old URL.",
    "security-scheme-oauth-flow-added": "Nobody breaks: one more way to get tokens.",
    "security-scheme-oauth-flow-removed": "Callers that get tokens with that flow break.",
    "webhook-added": "Nobody breaks: one more event may be sent to consumers.",
    "webhook-removed": "Consumers may miss the event (a warning: they should check it still "
    "comes).",
    "security-scheme-added": "Nobody breaks: a scheme is only a definition until required.",
    "security-scheme-removed": "Callers may break: operations that used it changed (a warning; "
    "the operations' own changes say how).",
    "security-scheme-type-changed": "Callers break: credentials are sent another way.",
    "security-scheme-oauth-url-changed": "Callers break: users are sent to the old "
    "authorization URL.",
    "security-scheme-oauth-token-url-changed": "Callers break: tokens are fetched or refreshed "
    "at the old URL.",
    "security-scheme-oauth-scope-added": "Nobody breaks: a scope exists that nobody must ask "
    "for yet.",
    "security-scheme-oauth-scope-removed": "Callers that request the scope may be refused (a "
    "warning).",
    "global-security-requirement-added": "Callers without the credentials break.",
    "global-security-requirement-removed": "Nobody breaks: fewer credentials are needed.",
    "tool-removed": "Agents break: calls that name the tool fail.",
    "tool-added": "Nobody breaks: one more tool.",
    "tool-description-changed": "Agents may change behaviour: the model reads the new text "
    "(rug-pull risk; a warning).",
    "tool-title-changed": "Nobody breaks: a display name.",
    "tool-annotation-risk-increased": "Agents may do more harm: the tool may modify or destroy "
    "data now (a warning).",
    "tool-annotations-changed": "Nobody breaks: no risk increase.",
    "tool-execution-changed": "Nobody breaks: execution hints.",
    "tool-metadata-changed": "Nobody breaks: metadata.",
    "tool-input-schema-invalid": "Agents break: strict clients refuse the tool list.",
    "tool-schema-dialect-changed": "Nobody breaks: the schema keywords are compared as they are.",
    "tool-output-schema-added": "Nobody breaks: structured output is described now.",
    "tool-output-schema-removed": "Consumers of structuredContent lose their contract (a "
    "warning: text content still comes).",
    "prompt-removed": "Agents break: requests for the prompt fail.",
    "prompt-added": "Nobody breaks: one more prompt.",
    "prompt-description-changed": "Nobody breaks: the text shown changed.",
    "prompt-argument-added-required": "Agents break: requests without the argument fail.",
    "prompt-argument-added-optional": "Nobody breaks: the argument may be left out.",
    "prompt-argument-became-required": "Agents break: requests without the argument fail.",
    "prompt-argument-became-optional": "Nobody breaks.",
    "prompt-argument-removed": "Agents may break: the argument is ignored or refused (a warning).",
    "resource-template-removed": "Agents break: reads through the template fail.",
    "resource-template-added": "Nobody breaks.",
    "resource-template-changed": "Nobody breaks: metadata of the template.",
    "resource-removed": "Agents may break: resource lists are often data-driven (a warning).",
    "resource-added": "Nobody breaks.",
    "resource-metadata-changed": "Nobody breaks: metadata.",
    "capability-removed": "Agents break: everything behind the capability is gone.",
    "capability-removed-minor": "Agents may miss an optional feature (a warning).",
    "capability-added": "Nobody breaks.",
    "capability-flags-changed": "Nobody breaks: notification flags.",
    "instructions-changed": "Agents may change behaviour: the model reads the new text (a "
    "warning).",
    "server-name-changed": "The watch may point at another server now (a warning).",
    "server-version-changed": "Nobody breaks: a version label.",
    "server-info-metadata-changed": "Nobody breaks: metadata.",
    "protocol-version-changed": "Nobody breaks: the surface is compared on its own.",
    "skill-removed": "Agents break: delegations that ask for the skill fail.",
    "skill-added": "Nobody breaks: one more skill.",
    "skill-name-changed": "Nobody breaks: a display name; the skill id is the same.",
    "skill-description-changed": "Nobody breaks: the skill is the same; an orchestrator may "
    "route differently.",
    "skill-tags-changed": "Nobody breaks: labels for discovery.",
    "skill-examples-changed": "Nobody breaks: sample requests.",
    "skill-input-mode-removed": "Callers break: messages in the removed media type are refused.",
    "skill-input-mode-added": "Nobody breaks: one more media type is accepted.",
    "skill-output-mode-removed": "Callers break: results no longer come in the removed media type.",
    "skill-output-mode-added": "Nobody breaks: one more media type is produced.",
    "skill-security-requirement-added": "Callers break: calls without the new credentials are "
    "refused.",
    "skill-security-requirement-removed": "Nobody breaks: fewer credentials are asked for.",
    "skill-schema-dialect-changed": "Nobody breaks: the schema is compared on its own.",
    "skill-input-schema-invalid": "Callers break: the input cannot be built from the schema.",
    "skill-output-schema-added": "Nobody breaks: the result is described now.",
    "skill-output-schema-removed": "Callers may break: the result has no contract any more (a "
    "warning, as for MCP tools).",
    "agent-default-input-mode-removed": "Callers break: skills without modes of their own refuse "
    "the removed media type.",
    "agent-default-input-mode-added": "Nobody breaks: one more media type is accepted.",
    "agent-default-output-mode-removed": "Callers break: skills without modes of their own no "
    "longer answer in the removed media type.",
    "agent-default-output-mode-added": "Nobody breaks: one more media type is produced.",
    "agent-url-changed": "Callers may break: those that call the old endpoint (a warning: it may "
    "still answer).",
    "agent-transport-changed": "Callers may break: those that speak only the old transport (a "
    "warning: it may still be offered).",
    "agent-security-requirement-added": "Callers break: calls without the new credentials are "
    "refused.",
    "agent-security-requirement-removed": "Nobody breaks: fewer credentials are asked for.",
    "agent-capability-removed": "Callers that stream or register push webhooks must fall back "
    "to polling (a warning).",
    "agent-capability-added": "Nobody breaks.",
    "agent-capabilities-changed": "Nobody breaks: extensions and other flags.",
    "agent-name-changed": "The watch may point at another agent now (a warning).",
    "agent-version-changed": "Nobody breaks: a version label.",
    "agent-protocol-version-changed": "Nobody breaks: the skills are compared on their own.",
    "agent-description-changed": "Nobody breaks: text about the agent.",
    "agent-metadata-changed": "Nobody breaks: metadata.",
}


# The principle every schema family follows, with the spellings it is applied across
# (issue 41, point 2): written once here so that docs/rules.md states it beside the table.
_PRINCIPLE = [
    "",
    "## Direction by the set of values",
    "",
    "A schema is judged by the set of values it allows, on both sides. A **response** change is",
    "breaking when the new contract allows a value the old one could not produce (readers must",
    "accept more), and safe when the new set is a subset of the old (readers get fewer",
    "values). A **request** change is breaking when the new contract refuses a value the old",
    "one accepted, and safe when it accepts more. Schemas written differently but allowing the",
    "same values are compared in one normal form first, so one meaning gets one verdict:",
    "",
    "- **Nullability, in every spelling**: 3.0 `nullable: true` (also beside a one-member",
    "  `allOf`), Swagger's `x-nullable`, 3.1 `type: [X, 'null']`, and a `oneOf`/`anyOf` with a",
    "  null member (`{type: 'null'}`, `{const: null}`, `{enum: [null]}`). Null is taken out,",
    "  reported as one finding (`became-nullable`, `became-not-nullable`), and what is left",
    "  is compared as usual, so a change below the wrapper is still seen. Example (the issue's",
    "  most frequent pattern): `oneOf: [{type: 'null'}, {$ref: Mandate}]` -> `$ref: Mandate` is",
    "  `response-body-became-not-nullable`, info (null no longer comes); if `Mandate` also lost",
    "  its required `id`, `response-property-removed-required` (breaking) is reported too. The",
    "  reverse on a response is `became-nullable`, breaking (a reader must now accept null);",
    "  on a request, adding null is info (one more value accepted) and removing it breaking",
    "  (a client that sent null is refused). A schema with no constraint at all allows null",
    "  anyway, so `nullable` on it changes nothing; a schema of null alone that gains a type",
    "  is a change of type.",
    "- **Enums written as constants**: a `oneOf`/`anyOf` whose members are all `const` (with",
    "  titles, descriptions or the same `type`) is the `enum` of those values. Example (the",
    "  issue's pattern): `oneOf: [{const: card, title: Card}, {const: sepa, title: SEPA}]`",
    "  gaining `{const: ideal, title: iDEAL}` is `response-property-enum-value-added`, a",
    "  warning, exactly as `enum: [card, sepa]` -> `enum: [card, sepa, ideal]` is (it was",
    "  `one-of-added`, breaking); rewriting one spelling as the other is no change.",
    "- **One-member alternatives**: a `oneOf`/`anyOf` of one member is that member (an `allOf`",
    "  of it beside other keywords) when the other side has no alternatives. Example (Box):",
    "  `partner_item: {oneOf: [$ref: ...Slack]}` -> `{allOf: [$ref: ...Slack]}` is no change",
    "  (it was `response-property-restructured`, breaking).",
]


def render_reasons() -> list[str]:
    """The "why" section of docs/rules.md: per schema family and side, per contract rule."""
    lines = [*_PRINCIPLE]
    lines += [
        "",
        "## Why each severity",
        "",
        "Who breaks, and how: a request is data the consumer sends, a response data it reads.",
        "Subject overrides (a request parameter's default, MCP tool inputs and outputs) are",
        "named in the tables above and in [decisions.md](decisions.md).",
        "",
        "| aspect | request | why | response | why |",
        "|---|---|---|---|---|",
    ]
    for fam in SCHEMA_FAMILIES:
        request, response = FAMILY_REASONS[fam.aspect]
        lines.append(
            f"| `{fam.aspect}` | {fam.severity_for(Direction.REQUEST, '').value} | {request} "
            f"| {fam.severity_for(Direction.RESPONSE, '').value} | {response} |"
        )
    lines += ["", "| rule | severity | why |", "|---|---|---|"]
    for rule in CONTRACT_RULES:
        lines.append(f"| `{rule.id}` | {rule.severity.value} | {CONTRACT_REASONS[rule.id]} |")
    return lines
