"""Free-form JSON values: what the API and the `.driftgate/` files accept where any JSON goes.

A fuse trip's `metadata` or a `rest` watch's request `body` is stored as JSON and served back
on every read. Anything accepted must survive that round trip on SQLite and Postgres and
through every serializer on the way out, so a value is refused at input when it nests deeper
than `MAX_DEPTH` containers, holds a number JSON cannot carry (NaN, Infinity, or a float that
overflowed to it), or text Postgres cannot store (NUL characters, lone surrogates).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Union

from pydantic import GetJsonSchemaHandler, PlainSerializer, PlainValidator, StringConstraints
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema
from typing_extensions import TypeAliasType

MAX_DEPTH = 64
"""Containers (objects and arrays) one free-form value may nest."""


def json_value_problem(value: Any) -> tuple[str, str] | None:
    """The JSON pointer (relative to `value`) and reason of the first part the store could not
    keep, or None when all of it can be stored and served back."""
    if _keepable(value):
        return None  # the common case, without building a pointer for every member
    stack: list[tuple[str, Any, int]] = [("", value, 0)]
    while stack:
        path, item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            if depth >= MAX_DEPTH:
                return path, f"nests deeper than {MAX_DEPTH} levels of objects and arrays"
            if isinstance(item, dict):
                for key, child in item.items():
                    member = f"{path}/{_pointer(str(key))}"
                    problem = _text_problem(str(key), "keys")
                    if problem is not None:
                        return member, problem
                    stack.append((member, child, depth + 1))
            else:
                stack.extend((f"{path}/{i}", child, depth + 1) for i, child in enumerate(item))
        elif isinstance(item, str):
            problem = _text_problem(item, "strings")
            if problem is not None:
                return path, problem
        elif isinstance(item, float) and not math.isfinite(item):
            return path, "numbers must be finite"
    return None


def check_json_value(value: Any) -> Any:
    """Return `value` unchanged, or raise ValueError saying where and why it cannot be kept."""
    found = json_value_problem(value)
    if found is not None:
        path, problem = found
        raise ValueError(f"{problem} (at {path})" if path else problem)
    return value


_NO_NUL = "^[^\\u0000]*$"
_Text = Annotated[str, StringConstraints(pattern=_NO_NUL)]


class _KeysWithoutNul:
    """Publishes an object whose every key is text without NUL (`propertyNames`), where
    pydantic would give `patternProperties` and leave other keys allowed."""

    def __get_pydantic_json_schema__(
        self, core: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler.resolve_ref_schema(handler(core))
        ((pattern, members),) = schema.pop("patternProperties").items()
        schema["propertyNames"] = {"pattern": pattern}
        schema["additionalProperties"] = members
        return schema


_Published = TypeAliasType(  # type: ignore[misc]
    "JsonValue",
    "Union[_Text, int, float, bool, None, list[_Published], "
    "Annotated[dict[_Text, _Published], _KeysWithoutNul()]]",
)
"""The published schema of a free-form value, recursive: text (values and keys) without NUL
at any depth. Only the schema: values are checked by `check_json_value`, in one pass."""

JsonValue = Annotated[
    Any,
    PlainValidator(check_json_value, json_schema_input_type=_Published),
    PlainSerializer(lambda value: value, return_type=_Published),
]
"""Any JSON value that can be stored and served back."""

JsonObject = Annotated[dict[_Text, JsonValue], _KeysWithoutNul()]
"""A JSON object that can be stored and served back: keys and values as `JsonValue`'s."""


def _keepable(value: Any) -> bool:
    """Whether `json_value_problem` finds nothing, found in one quick pass."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if "\x00" in item or not (item.isascii() or _utf8(item)):
                return False
        elif isinstance(item, dict):
            if depth >= MAX_DEPTH:
                return False
            for key, child in item.items():
                text = str(key)
                if "\x00" in text or not (text.isascii() or _utf8(text)):
                    return False
                stack.append((child, depth + 1))
        elif isinstance(item, list | tuple):
            if depth >= MAX_DEPTH:
                return False
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, float) and not math.isfinite(item):
            return False
    return True


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _text_problem(text: str, what: str) -> str | None:
    if "\x00" in text:
        return f"{what} must not contain NUL characters"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return f"{what} must not contain lone surrogates"
    return None


def _pointer(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
