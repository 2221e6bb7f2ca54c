"""A choice among names a registry holds, as a field of an API model.

`Literal["webhook", "slack"]` hand-lists the names and goes stale when a registry grows, and a
`Literal` built at run time is not a type mypy can check. `Annotated[str, OneOf(names)]` is a
`str` in code and, to pydantic, exactly what `Literal[*names]` is: the same validation, the same
error (`literal_error`), the same published schema (`{"enum": [...], "type": "string"}`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema


@dataclass(frozen=True, init=False)
class OneOf:
    """One of `names`, in their order (the published `enum` keeps it)."""

    names: tuple[str, ...]

    def __init__(self, names: Iterable[str]) -> None:
        object.__setattr__(self, "names", tuple(names))
        if not self.names:
            raise ValueError("a choice needs at least one name")

    def __get_pydantic_core_schema__(
        self, _source: Any, _handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        # What pydantic builds for a `Literal` of these names.
        return core_schema.literal_schema(list(self.names))
