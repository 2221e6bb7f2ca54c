"""Objects applied from a git source: how the API shows them and why it refuses to write them.

Git is the source of truth for what a source applied (templates, watch sets, watches,
agents); the API reads them with `managedBy` and answers 409 to any write.
"""

from __future__ import annotations

from typing import Protocol

from controller.errors import Conflict
from controller.model.watch import ManagedBy


class Managed(Protocol):
    @property
    def managed_source(self) -> str | None: ...
    @property
    def managed_path(self) -> str | None: ...
    @property
    def managed_revision(self) -> str | None: ...


def managed_by(row: Managed) -> ManagedBy | None:
    if row.managed_source is None:
        return None
    return ManagedBy(
        source=row.managed_source, path=row.managed_path, revision=row.managed_revision
    )


def ensure_unmanaged(row: Managed, kind: str, name: str) -> None:
    if row.managed_source is not None:
        raise Conflict(
            f"{kind} {name!r} is managed by source {row.managed_source!r}"
            f" ({row.managed_path or '.driftgate'}); change it in git instead",
            code="managed_by_source",
        )
