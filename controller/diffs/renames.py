"""Renames: a callable unit (an MCP tool, an A2A skill) removed and another added in the same
check that are the same unit under a new name.

A rename reads as one removed unit (breaking) and one added (information) with no hint that
they are one; callers and pins by name break all the same, but the fix is "call it by its new
name", not "find a replacement". The pairing is deterministic and conservative:

1. **Spelling**: the two names are equal ignoring case and separators (`tavily-search` and
   `tavily_search`, `getUser` and `get_user`). Their contracts may differ too; the rename
   finding says which parts did.
2. **Content**: otherwise the two units carry an equal contract (the engine's `same_contract`:
   an equal input schema with annotations left out, for a skill equal modes too) and similar
   descriptions (`difflib` ratio of the normalised texts at least `DESCRIPTION_RATIO`). A
   description shorter than `MIN_DESCRIPTION_WORDS` words is no evidence: two short texts
   (`a tool`, `b tool`) agree by chance.

A removed unit with more than one candidate, or an added one claimed by more than one removed
unit, is not paired (ambiguous): it stays a removal and an addition. Spelling pairs are taken
first; content pairs only among the units left.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from typing import Any

# The least `difflib.SequenceMatcher` ratio of two descriptions that reads as "the same text,
# edited": a reworded sentence stays above it, two tools' different purposes fall below.
DESCRIPTION_RATIO = 0.6
MIN_DESCRIPTION_WORDS = 5
# Keywords that document a schema without constraining what it accepts.
_ANNOTATIONS = frozenset({"description", "title", "examples", "$comment", "$schema"})
_SEPARATORS = re.compile(r"[\s_\-.:/]+")

Unit = Mapping[str, Any]


def pair_renames(
    removed: Mapping[str, Unit],
    added: Mapping[str, Unit],
    same_contract: Callable[[Unit, Unit], bool],
) -> list[tuple[str, str]]:
    """The (old name, new name) pairs of `removed` and `added` units that are one unit renamed,
    in `removed`'s order; every name is in at most one pair."""
    pairs = _unique_pairs(removed, added, lambda old, new, _b, _a: name_key(old) == name_key(new))
    left_removed = {k: v for k, v in removed.items() if k not in {o for o, _ in pairs}}
    left_added = {k: v for k, v in added.items() if k not in {n for _, n in pairs}}
    pairs += _unique_pairs(
        left_removed,
        left_added,
        lambda _old, _new, b, a: (
            same_contract(b, a) and is_similar_text(b.get("description"), a.get("description"))
        ),
    )
    order = list(removed)
    return sorted(pairs, key=lambda pair: order.index(pair[0]))


def name_key(name: str) -> str:
    """A name compared ignoring case and separators."""
    return _SEPARATORS.sub("", name).lower()


def is_similar_text(before: Any, after: Any) -> bool:
    """Whether two descriptions read as one text edited (each of at least
    `MIN_DESCRIPTION_WORDS` words)."""
    b, a = _words(before), _words(after)
    if min(len(b.split()), len(a.split())) < MIN_DESCRIPTION_WORDS:
        return False
    return difflib.SequenceMatcher(None, b, a, autojunk=False).ratio() >= DESCRIPTION_RATIO


def schema_shape(schema: Any) -> Any:
    """A JSON Schema without the keywords that only document it, to compare what it accepts."""
    if isinstance(schema, dict):
        return {k: schema_shape(v) for k, v in schema.items() if k not in _ANNOTATIONS}
    if isinstance(schema, list):
        return [schema_shape(v) for v in schema]
    return schema


def changed_parts(before: Unit, after: Unit, parts: Mapping[str, str]) -> str:
    """`; also changed: description, input schema` for the `parts` (key -> words) whose values
    differ between the two units, or "" when none does."""
    changed = [words for key, words in parts.items() if before.get(key) != after.get(key)]
    return f"; also changed: {', '.join(changed)}" if changed else ""


def _unique_pairs(
    removed: Mapping[str, Unit],
    added: Mapping[str, Unit],
    matches: Callable[[str, str, Unit, Unit], bool],
) -> list[tuple[str, str]]:
    candidates = {
        old: [new for new in added if matches(old, new, removed[old], added[new])]
        for old in removed
    }
    claims: dict[str, int] = {}
    for news in candidates.values():
        for new in news:
            claims[new] = claims.get(new, 0) + 1
    return [
        (old, news[0])
        for old, news in candidates.items()
        if len(news) == 1 and claims[news[0]] == 1
    ]


def _words(text: Any) -> str:
    return " ".join(text.split()).lower() if isinstance(text, str) else ""
