"""The one shape of driftgate's registries (job kinds, delivery channels, policy actions):
named entries, added once each, looked up by name, iterated in registration order. Each
registry adds what its callers need on top (a fallback channel, the kinds to claim, the
actions that block)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Generic, Protocol, TypeVar


class Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=Named)


class Registry(Generic[T]):
    """Entries by name; `what` names the kind of entry in errors ("job kind")."""

    what = "entry"

    def __init__(self, entries: Iterable[T] = ()) -> None:
        self._entries: dict[str, T] = {}
        for entry in entries:
            self.register(entry)

    def register(self, entry: T) -> T:
        """Add an entry; a name registered twice is a programming error."""
        if entry.name in self._entries:
            raise ValueError(f"{self.what} {entry.name!r} is already registered")
        self._entries[entry.name] = entry
        self._changed()
        return entry

    def get(self, name: str) -> T | None:
        return self._entries.get(name)

    def __iter__(self) -> Iterator[T]:
        return iter(self._entries.values())

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def _changed(self) -> None:
        """Called after every change, for registries that keep a derived view."""
