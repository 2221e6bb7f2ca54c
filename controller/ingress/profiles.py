"""Consumer profiles: what a consumer accepts, as a JSON Schema plus how to find the object to
check (an envelope) and how strict to be. Pure: no I/O.

A profile (CONTRACT.md, "Errors of the runtime-ingress validator"):

    {id, version, schema, profileKind?, envelope?, requiredPolicy?, normalization?,
     compatibility?, watchUrl?, watchId?}

`schema` is JSON Schema 2020-12 with local `$ref`s only. `check_profile` refuses a profile the
validator cannot use with `ProfileInvalid` (400 `profile_invalid`) naming the reason; keys it
does not know are ignored, as the hosted product does.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StringConstraints, ValidationError

from controller.errors import RequestError

MAX_DEPTH = 32
MAX_ROOT_PROPERTIES = 256
MAX_ALIASES = 20
MAX_PROFILE_BYTES = 64 * 1024
PROFILE_KINDS = ("ingress", "llm_structured_output", "tool_call_envelope")
PRESETS = ("mcp", "openai_functions", "raw")
PROFILE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$"
MAX_VERSION = 2**31 - 1  # the store keeps a profile's version in a 32-bit integer column


# What the API publishes of a profile (the checks below go further: a schema that compiles,
# nesting, local refs).
PROFILE_SCHEMA: dict[str, Any] = {
    "required": ["id", "version", "schema"],
    "properties": {
        "id": {"type": "string", "pattern": PROFILE_ID_PATTERN},
        "version": {"type": "integer", "minimum": 1, "maximum": MAX_VERSION},
        "schema": {"type": "object", "description": "JSON Schema 2020-12, local $refs only"},
        "profileKind": {"enum": list(PROFILE_KINDS)},
        "envelope": {
            "type": "object",
            "properties": {
                "preset": {"enum": list(PRESETS)},
                "extractPath": {"type": "string", "minLength": 1, "maxLength": 500},
            },
            "required": ["preset"],
        },
        "requiredPolicy": {"enum": ["allProperties", "schemaOnly"]},
        "normalization": {
            "type": "object",
            "properties": {
                "aliases": {
                    "type": "array",
                    "maxItems": MAX_ALIASES,
                    "items": {
                        "type": "object",
                        "properties": {
                            "from": {"type": "string", "minLength": 1, "maxLength": 200},
                            "to": {"type": "string", "minLength": 1, "maxLength": 200},
                        },
                        "required": ["from", "to"],
                    },
                }
            },
        },
        "watchUrl": {"type": "string"},
        "watchId": {"type": "string"},
    },
}


class ProfileInvalid(RequestError):
    code = "profile_invalid"
    status = 400


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


class ConsumerProfile(_Model):
    """A checked consumer profile."""

    id: Annotated[str, StringConstraints(pattern=PROFILE_ID_PATTERN)]
    version: StrictInt = Field(ge=1, le=MAX_VERSION)
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
    """`raw` as a usable profile, or `ProfileInvalid` naming what is wrong."""
    if not isinstance(raw, dict):
        raise ProfileInvalid("the profile must be a JSON object")
    if not raw.get("id"):
        raise ProfileInvalid("the profile has no id")
    version = raw.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= MAX_VERSION:
        raise ProfileInvalid(f"the profile's version must be an integer from 1 to {MAX_VERSION}")
    if not isinstance(raw.get("schema"), dict):
        raise ProfileInvalid("the profile's schema must be a JSON object")
    try:
        profile = ConsumerProfile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = "/".join(str(p) for p in first["loc"])
        raise ProfileInvalid(f"the profile is invalid at {where}: {first['msg']}") from None
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
