"""Base classes for the API-facing pydantic models: camelCase on the wire, snake_case in code."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class ApiModel(BaseModel):
    """A response or shared model: fields serialise with camelCase aliases."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class RequestModel(BaseModel):
    """A request body or query: camelCase names, unknown fields refused."""

    # No whitespace stripping: what the published schema accepts is exactly what is stored.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")
