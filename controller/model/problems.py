"""Validation problems as every answer states them: one JSON pointer and one message per place.

A request body or query is validated once, by its model, in the shell (`web.body`): what the
published schema refuses is 400. Some values are put together by a service from more than
the request (a template's tags with the request's, a watch made from a discovered URL): the
request matched its schema, so what the model of the result refuses is 422, naming the
request's field that brought the value (`compose`; a caller that knows better where a value
came from names that place instead). Both explain a pydantic `ValidationError` the same way,
here, so a model's refusal never escapes as an exception that nobody translated (a 500).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from controller.errors import RequestError, Unprocessable

M = TypeVar("M", bound=BaseModel)


def problems_of(exc: ValidationError, data: Any) -> list[dict[str, str]]:
    """`[{path, message}]` of a pydantic error about `data`, one message per place (the first
    union member's)."""
    details: list[dict[str, str]] = []
    seen: set[str] = set()
    for err in exc.errors(include_url=False, include_input=False):
        path = json_path(data, err["loc"], missing=err["type"] == "missing")
        if path not in seen:
            seen.add(path)
            details.append({"path": path, "message": err["msg"].removeprefix("Value error, ")})
    return details


def summary_of(details: list[dict[str, str]]) -> str:
    """The first problems on one line, for an error's message."""
    return "; ".join(f"{d['path']}: {d['message']}" for d in details[:5])


def validated(model: type[M], data: Any, error: type[RequestError], context: str) -> M:
    """`data` as `model`, or `error` saying `context`, then the first problems, with a pointer
    and message per problem in its details."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        details = problems_of(exc, data)
        raise error(f"{context}: {summary_of(details)}", details=details) from None


def compose(model: type[M], data: dict[str, Any], *, what: str = "the request") -> M:
    """`data` as `model`, or 422 `Unprocessable` with a pointer and message per problem (the
    pointers of `data`, which callers keep the same as the request's where they can)."""
    return validated(model, data, Unprocessable, f"{what} cannot be made")


def json_path(data: Any, loc: tuple[int | str, ...], *, missing: bool) -> str:
    """The JSON pointer of an error in the input, without pydantic's union-member tags."""
    parts: list[str] = []
    current = data
    for index, item in enumerate(loc):
        if isinstance(current, dict) and item in current:
            current = current[item]
        elif isinstance(current, list) and isinstance(item, int) and 0 <= item < len(current):
            current = current[item]
        elif not (missing and index == len(loc) - 1) and not isinstance(current, dict | list):
            break
        elif not (missing and index == len(loc) - 1):
            continue  # a union member or validator tag, not a place in the input
        parts.append(str(item).replace("~", "~0").replace("/", "~1"))
    return "/" + "/".join(parts)
