"""Ids as people type them: a whole id, or the first characters of one (`3f2a9c1e` for
`3f2a9c1e-7d4b-...`), as git takes a commit's. A prefix names the one id that starts with
it; a prefix that several ids start with names none of them, and the error lists them so that
the next try can be longer. Pure: the candidates come from the store or from the API."""

from __future__ import annotations

import re
from collections.abc import Iterable

from controller.errors import Conflict

MIN_PREFIX = 4
SHOWN_CANDIDATES = 10
ID_PREFIX_PATTERN = r"^[0-9a-fA-F-]{4,36}$"
_PREFIX = re.compile(ID_PREFIX_PATTERN)
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def is_whole_id(ref: str) -> bool:
    """Whether `ref` is a whole id as driftgate makes them (a UUID, lowercase)."""
    return bool(_UUID.match(ref))


def is_id_prefix(ref: str) -> bool:
    """Whether `ref` can be the start of an id: 4 to 36 hexadecimal digits and dashes."""
    return bool(_PREFIX.match(ref)) and not is_whole_id(ref)


def normalized(prefix: str) -> str:
    return prefix.lower()


def pick(kind: str, prefix: str, candidates: Iterable[tuple[str, str]]) -> str | None:
    """The id among `candidates` (id, what people know it by) that starts with `prefix`; None
    when none does or `prefix` cannot start an id; `Conflict` (`ambiguous_id`, listing them)
    when several do. `kind` is the plural the message uses ("watches", "drift events")."""
    if not _PREFIX.match(prefix):
        return None
    start = normalized(prefix)
    found = sorted({(i, label) for i, label in candidates if i.startswith(start)})
    if len(found) <= 1:
        return found[0][0] if found else None
    raise ambiguous(kind, prefix, found)


def ambiguous(kind: str, prefix: str, found: list[tuple[str, str]], more: bool = False) -> Conflict:
    """The error of a prefix that several ids start with (the first ten of them; `more`:
    `found` was cut short, the count is not known)."""
    shown = [f"{i} ({label})" if label else i for i, label in found[:SHOWN_CANDIDATES]]
    count = f"more than {SHOWN_CANDIDATES}" if more else str(len(found))
    return Conflict(
        f"the id prefix {prefix!r} names {count} {kind}: {', '.join(shown)}; type more of the id",
        code="ambiguous_id",
        details=[{"id": i, "label": label} for i, label in found[:SHOWN_CANDIDATES]],
    )
