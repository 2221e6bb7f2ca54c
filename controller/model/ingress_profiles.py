"""Consumer profiles: what a consumer accepts, as a JSON Schema plus how to find the object to
check (an envelope) and how strict to be. Pure: no I/O.

A profile (CONTRACT.md, "Errors of the runtime-ingress validator"):

    {id, version, schema, profileKind?, envelope?, requiredPolicy?, normalization?,
     compatibility?, watchUrl?, watchId?}

`schema` is JSON Schema 2020-12 with local `$ref`s only. A profile is checked in two steps,
as docs/api.md's rule between 400 and 422 asks: its shape against `profile_schema` (the one
published in /openapi.json and config-schema/, enforced as it is published; 400 with a JSON
pointer per problem), then whether the validator can use it (`profile_of`: 422
`profile_invalid` naming the reason). Keys it does not know are kept and ignored, as the
hosted product does; like every stored JSON value they hold no NUL (`JsonValue`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, Literal

import jsonschema_rs
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    StringConstraints,
    ValidationError,
    field_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, InitErrorDetails, PydanticCustomError

from controller.errors import RequestError
from controller.model.base import JsonNumber
from controller.model.jsonvalue import JsonObject, json_value_problem

MAX_DEPTH = 32
MAX_ROOT_PROPERTIES = 256
MAX_ALIASES = 20
MAX_PROFILE_BYTES = 64 * 1024
PROFILE_KINDS = ("ingress", "llm_structured_output", "tool_call_envelope")
PRESETS = ("mcp", "openai_functions", "raw")
PROFILE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$"
MAX_VERSION = 2**31 - 1  # the store keeps a profile's version in a 32-bit integer column


_TEXT = r"^[^\x00-\x1f\x7f]*$"  # no control characters: stored as sent, never NUL


def profile_schema(any_value: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of a profile, enforced at input and published: `any_value` stands
    wherever any JSON value goes (the profile's own JSON Schema, keys no one declared), the
    recursive no-NUL `JsonValue` where it is published and `{}` where it is enforced (there
    `check_json_value` states the same rule in one pass). What no schema can state (a schema
    that compiles, nesting, refs that stay inside) is checked by `profile_of`."""
    no_nul = {"pattern": "^[^\\u0000]*$"}

    def text(max_length: int, min_length: int = 0) -> dict[str, Any]:
        bounds = {"minLength": min_length} if min_length else {}
        return {"type": "string", **bounds, "maxLength": max_length, "pattern": _TEXT}

    def obj(**schema: Any) -> dict[str, Any]:
        return {
            "type": "object",
            "propertyNames": no_nul,
            "additionalProperties": any_value,
            **schema,
        }

    return obj(
        required=["id", "version", "schema"],
        properties={
            "id": {"type": "string", "pattern": PROFILE_ID_PATTERN},
            "version": {"type": "integer", "minimum": 1, "maximum": MAX_VERSION},
            "schema": obj(
                description="JSON Schema 2020-12, local $refs only",
                properties={"properties": obj(maxProperties=MAX_ROOT_PROPERTIES)},
            ),
            "profileKind": {"enum": list(PROFILE_KINDS)},
            "envelope": obj(
                properties={"preset": {"enum": list(PRESETS)}, "extractPath": text(500, 1)},
                required=["preset"],
                # The raw preset names where the object is.
                **{
                    "if": {"properties": {"preset": {"const": "raw"}}},
                    "then": {"required": ["extractPath"]},
                },
            ),
            "requiredPolicy": {"enum": ["allProperties", "schemaOnly"]},
            "normalization": obj(
                properties={
                    "aliases": {
                        "oneOf": [
                            {
                                "type": "array",
                                "maxItems": MAX_ALIASES,
                                "items": obj(
                                    properties={"from": text(200, 1), "to": text(200, 1)},
                                    required=["from", "to"],
                                ),
                            },
                            # The hosted product's form: a map of `from` to `to`.
                            {
                                "type": "object",
                                "maxProperties": MAX_ALIASES,
                                "propertyNames": text(200, 1),
                                "additionalProperties": text(200, 1),
                            },
                        ]
                    }
                }
            ),
            "watchUrl": text(2048),
            "watchId": text(200),
        },
    )


PROFILE_SCHEMA = profile_schema({})
"""What a profile must be, as enforced (`ProfileDocument`, `check_profile`)."""
# jsonschema-rs says whether a profile fits (an inline profile is checked on every call of
# POST /api/validate: 8 us here, against 700 us for jsonschema); jsonschema explains why not.
_FITS = jsonschema_rs.validator_for(PROFILE_SCHEMA)
_SHAPE = Draft202012Validator(PROFILE_SCHEMA)


class ProfileInvalid(RequestError):
    """A profile that matches the published schema but cannot be used: 422 (docs/api.md)."""

    code = "profile_invalid"
    status = 422


class ProfileMalformed(ProfileInvalid):
    """A profile the published schema refuses: 400, with a JSON pointer per problem. A body
    refuses it while it is parsed (`ProfileDocument`); files and the CLI meet it here."""

    status = 400


def shape_problems(raw: Any) -> list[dict[str, str]]:
    """`[{path, message}]` of what the profile schema refuses in `raw` (empty when none)."""
    found = json_value_problem(raw)
    if found is not None:
        path, problem = found
        return [{"path": path or "/", "message": problem}]
    return _schema_problems(raw)


def _schema_problems(raw: Any) -> list[dict[str, str]]:
    if _FITS.is_valid(raw):
        return []
    problems: dict[str, str] = {}
    for error in sorted(_SHAPE.iter_errors(raw), key=lambda e: list(map(str, e.absolute_path))):
        at = "".join(f"/{_pointer(str(p))}" for p in error.absolute_path)
        if error.validator == "required" and isinstance(error.instance, dict):
            for name in error.validator_value:
                if name not in error.instance:
                    problems.setdefault(f"{at}/{_pointer(name)}", "required")
            continue
        problems.setdefault(at or "/", _message(error.validator, error.validator_value))
    found = [{"path": path, "message": message} for path, message in problems.items()]
    return found or [{"path": "/", "message": "does not match the profile schema"}]


_MESSAGES = {
    "type": "must be of type {}",
    "enum": "must be one of {}",
    "const": "must be {}",
    "pattern": "must match the pattern {}",
    "minimum": "must be at least {}",
    "maximum": "must be at most {}",
    "minLength": "must be at least {} characters long",
    "maxLength": "must be at most {} characters long",
    "maxItems": "must hold at most {} items",
    "maxProperties": "must hold at most {} properties",
}


def _message(keyword: str, value: Any) -> str:
    """What a schema keyword asks, in words; never the value it refused (it may be long)."""
    shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    return _MESSAGES.get(keyword, f"does not satisfy {keyword}").format(shown)


def _shaped(raw: dict[str, Any]) -> dict[str, Any]:
    problems = _schema_problems(raw)  # its values passed `JsonValue` already
    if problems:
        raise ValidationError.from_exception_data(
            "profile",
            [
                InitErrorDetails(
                    type=PydanticCustomError("profile_shape", "{reason}", {"reason": p["message"]}),
                    loc=tuple(_unpointer(part) for part in p["path"].split("/")[1:] if part),
                    input=raw,
                )
                for p in problems
            ],
        )
    return raw


class _PublishedProfile:
    """Publishes a profile with the recursive no-NUL `JsonValue` wherever any value goes."""

    def __get_pydantic_json_schema__(
        self, core: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        generated = handler.resolve_ref_schema(handler(core))
        return profile_schema(generated["additionalProperties"])


ProfileDocument = Annotated[JsonObject, AfterValidator(_shaped), _PublishedProfile()]
"""A consumer profile as a request carries it: refused (400, each place named) unless the
published schema accepts it, and kept as sent."""


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")


class Envelope(_Model):
    preset: str
    extract_path: Annotated[str, StringConstraints(min_length=1, max_length=500)] | None = Field(
        default=None, alias="extractPath"
    )


class Alias(_Model):
    from_: Annotated[str, StringConstraints(min_length=1, max_length=200)] = Field(alias="from")
    to: Annotated[str, StringConstraints(min_length=1, max_length=200)]


class Normalization(_Model):
    aliases: list[Alias] = Field(default_factory=list)

    @field_validator("aliases", mode="before")
    @classmethod
    def _from_map(cls, value: Any) -> Any:
        """The hosted form `{from: to}` is the list `[{from, to}]` in the map's order."""
        if isinstance(value, dict):
            return [{"from": key, "to": target} for key, target in value.items()]
        return value


class ConsumerProfile(_Model):
    """A checked consumer profile."""

    id: Annotated[str, StringConstraints(pattern=PROFILE_ID_PATTERN)]
    version: Annotated[int, Field(ge=1, le=MAX_VERSION), JsonNumber]  # 1.0 is an integer too
    schema_: dict[str, Any] = Field(alias="schema")
    profile_kind: str = Field(default="ingress", alias="profileKind")
    envelope: Envelope | None = None
    required_policy: Literal["allProperties", "schemaOnly"] | None = Field(
        default=None, alias="requiredPolicy"
    )
    normalization: Normalization | None = None
    compatibility: Any = None
    watch_url: str | None = Field(default=None, alias="watchUrl")
    watch_id: str | None = Field(default=None, alias="watchId")

    def as_json(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)


def content_hash(profile: dict[str, Any]) -> str:
    """A stable hash of a profile's content (key order does not matter)."""
    text = json.dumps(profile, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def check_profile(raw: Any) -> ConsumerProfile:
    """`raw` (a file's, the CLI's) as a usable profile: `ProfileMalformed` (400) naming each
    place the profile schema refuses, else as `profile_of`."""
    problems = shape_problems(raw)
    if problems:
        listed = "; ".join(f"{p['path']}: {p['message']}" for p in problems[:5])
        raise ProfileMalformed(f"the profile does not match its schema: {listed}", details=problems)
    return profile_of(raw)


def profile_of(raw: dict[str, Any]) -> ConsumerProfile:
    """A profile the schema accepts (a `ProfileDocument`, or a stored one) as a usable one, or
    `ProfileInvalid` (422) saying why it cannot be used: no schema can state that nesting
    stays within 32 levels or that refs stay inside (and a schema that does not compile is
    found when it is compiled, `controller.ingress.service`)."""
    try:
        profile = ConsumerProfile.model_validate(raw)
    except ValidationError as exc:  # a row stored under older rules
        first = exc.errors(include_url=False, include_input=False)[0]
        where = "/".join(str(p) for p in first["loc"])
        raise ProfileInvalid(f"the profile is invalid at /{where}: {first['msg']}") from None
    if profile.profile_kind not in PROFILE_KINDS:
        raise ProfileInvalid(
            f"unknown profileKind {profile.profile_kind!r} (one of: {', '.join(PROFILE_KINDS)})"
        )
    envelope = profile.envelope
    if envelope is not None:
        if envelope.preset not in PRESETS:
            raise ProfileInvalid(
                f"unknown envelope preset {envelope.preset!r} (one of: {', '.join(PRESETS)})"
            )
        if envelope.preset == "raw" and not envelope.extract_path:
            raise ProfileInvalid("the raw envelope preset needs extractPath")
    aliases = profile.normalization.aliases if profile.normalization else []
    if len(aliases) > MAX_ALIASES:
        raise ProfileInvalid(f"at most {MAX_ALIASES} aliases, not {len(aliases)}")
    schema = profile.schema_
    if _depth(schema) > MAX_DEPTH:
        raise ProfileInvalid(f"the schema nests deeper than {MAX_DEPTH} levels")
    properties = schema.get("properties")
    if isinstance(properties, dict) and len(properties) > MAX_ROOT_PROPERTIES:
        raise ProfileInvalid(f"the schema has more than {MAX_ROOT_PROPERTIES} root properties")
    remote = _remote_ref(schema)
    if remote is not None:
        raise ProfileInvalid(f"the schema refers outside itself ($ref {remote!r}): local refs only")
    return profile


def _depth(node: Any) -> int:
    """How deep JSON objects and arrays nest (a scalar is 0), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(node, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in value.values())
        elif isinstance(value, list):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in value)
    return deepest


def _remote_ref(node: Any) -> str | None:
    stack = [node]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                return ref
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return None


def _pointer(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _unpointer(part: str) -> str | int:
    key = part.replace("~1", "/").replace("~0", "~")
    return int(key) if key.isdigit() else key
