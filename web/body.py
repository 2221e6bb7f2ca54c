"""The one reader of JSON request bodies, and the explanation of a body or query refused.

Every route that takes a JSON body (through the route registry, the run gate's lane, or a
webhook that must see the raw bytes first) parses it here, with pydantic's JSON parser
(jiter): it is not recursive in Python, refuses input nesting deeper than its limit of 200
with an error instead of exhausting the stack, refuses NaN and Infinity, lone surrogates and
bytes that are not UTF-8. Any failure is a `ValidationFailed` (400, `invalid_json` or
`validation_error` with a JSON pointer per problem), never an exception that reaches the
error handler as a 500. The size limit is enforced before this, by the server front and by
Flask's `MAX_CONTENT_LENGTH` (413).
"""

from __future__ import annotations

from typing import Any, TypeVar

import pydantic_core
from flask import Request
from pydantic import BaseModel, ValidationError
from werkzeug.exceptions import RequestEntityTooLarge

from controller.errors import ValidationFailed
from controller.model.problems import validated

MAX_NESTING = 200
"""jiter's fixed recursion limit: deeper bodies are refused as invalid JSON."""

M = TypeVar("M", bound=BaseModel)


def request_bytes(request: Request) -> bytes:
    """The whole body of `request`, or 413 when it exceeds `MAX_CONTENT_LENGTH`.

    A body without a Content-Length (chunked) is read up to one byte past the limit: werkzeug
    would cut it at the limit without a word, and the cut JSON would read as invalid."""
    limit = request.max_content_length
    if request.content_length is None and limit is not None:
        if not request.environ.get("wsgi.input_terminated"):
            return b""  # no length and no terminated stream: WSGI has no body to give
        raw: bytes = request.environ["wsgi.input"].read(limit + 1)
        if len(raw) > limit:
            raise RequestEntityTooLarge()
        return raw
    return request.get_data(cache=True)


def read_json(raw: bytes) -> Any:
    """The JSON value of a body (`{}` when it is empty or blank), or `ValidationFailed`."""
    if not raw.strip():
        return {}
    try:
        return pydantic_core.from_json(raw, allow_inf_nan=False)
    except ValueError as exc:
        raise ValidationFailed(_invalid(str(exc)), code="invalid_json") from None


def parse_body(model: type[M], raw: bytes) -> M:
    """The body as `model`: one pass in pydantic's parser when it fits; otherwise the body is
    read as JSON and validated again only to explain what is wrong, and where."""
    if raw.strip():
        try:
            return model.model_validate_json(raw)
        except ValidationError:
            pass
    return validate(model, read_json(raw), "body")


def validate(model: type[M], data: Any, where: str) -> M:
    """`data` as `model`, or `ValidationFailed` with one JSON pointer and message per place."""
    return validated(model, data, ValidationFailed, f"invalid request {where}")


def _invalid(reason: str) -> str:
    if "recursion limit" in reason:
        return f"the request body is not valid JSON: it nests deeper than {MAX_NESTING} levels"
    return f"the request body is not valid JSON: {reason}"
