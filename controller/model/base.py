"""Base classes for the API-facing pydantic models: camelCase on the wire, snake_case in code.

Also the scalar types of request bodies. pydantic's lax mode reads `0` and `"yes"` as booleans,
`"5"` and `true` as integers, and `1700000000` as a date-time; the published schema allows none
of these, so a client validating against `/openapi.json` and a client that is not would see
different APIs. Bodies use these types instead, which take exactly the JSON the schema names.
(Queries keep pydantic's lax types: every query value arrives as text.)
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated

from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    WithJsonSchema,
)
from pydantic.alias_generators import to_camel


class ApiModel(BaseModel):
    """A response or shared model: fields serialise with camelCase aliases."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class RequestModel(BaseModel):
    """A request body or query: camelCase names, unknown fields refused."""

    # No whitespace stripping: what the published schema accepts is exactly what is stored.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


def _json_number(value: object) -> object:
    # bool is an int in Python, not a number in JSON. Floats stay: JSON Schema's `integer`
    # includes 5.0, and pydantic still refuses 5.5 for an int.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a JSON number, not a string or a boolean")
    return value


_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def _date_time_text(value: object) -> object:
    # pydantic also reads numbers and numeric text as Unix seconds, and dates without a time.
    if isinstance(value, datetime) or (isinstance(value, str) and _RFC3339.match(value)):
        return value
    raise ValueError("must be an RFC 3339 date-time with an offset, e.g. 2026-01-02T03:04:05Z")


JsonNumber = BeforeValidator(_json_number)
"""Refuses text and booleans where a number goes. In an `Annotated[...]` with constraints, put it
after them (`Annotated[int, Field(ge=1), JsonNumber]`): constraints written after a validator
are still checked but leave the published schema (`ge` instead of `minimum`)."""

BodyBool = Annotated[bool, Strict()]
"""`true` or `false`, nothing else."""

BodyInt = Annotated[int, JsonNumber]
"""A JSON integer (5 or 5.0), not `"5"` or `true`."""

BodyFloat = Annotated[float, JsonNumber]
"""A JSON number, not `"1.5"` or `true`."""

BodyDateTime = Annotated[AwareDatetime, BeforeValidator(_date_time_text)]
"""An RFC 3339 date-time with an offset, not a number of seconds."""

# A 64-bit id (the store keeps a BIGINT). As digits, at most 18 of them: every such text is
# within the bound, so the published pattern alone says exactly what is accepted.
NUMERIC_ID_MAX = 2**63 - 1
NUMERIC_ID_TEXT = r"^[1-9][0-9]{0,17}$"
_NUMERIC_ID_DIGITS = re.compile(r"[1-9][0-9]{0,17}")


def _integer_or_digits(value: object) -> object:
    if isinstance(value, str) and _NUMERIC_ID_DIGITS.fullmatch(value):
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(
            "must be a positive integer, or its decimal digits as a string (at most 18)"
        )
    return value


BodyNumericId = Annotated[
    int,
    Field(ge=1, le=NUMERIC_ID_MAX),
    BeforeValidator(_integer_or_digits),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "integer", "minimum": 1, "maximum": NUMERIC_ID_MAX},
                {"type": "string", "pattern": NUMERIC_ID_TEXT},
            ]
        }
    ),
]
"""A numeric id that SPEC.md types as a string of digits: `"4242"` or `4242` (not `true`,
`"0042"` or `4242.5`), an `int` in code."""


def utc_iso(value: datetime) -> str:
    """An instant as every JSON answer writes it: ISO 8601 in UTC with `Z`, as pydantic
    serialises the response models (a naive value from the store is UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
