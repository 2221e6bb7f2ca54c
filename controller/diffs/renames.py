"""Renames: a callable unit (an MCP tool, an A2A skill) removed and another added in the same
check that are the same unit under a new name.

A rename reads as one removed unit (breaking) and one added (information) with no hint that
they are one; callers and pins by name break all the same, but the fix is "call it by its new
name", not "find a replacement". The pairing is deterministic and conservative:

1. **Spelling**: the two names are equal ignoring case and separators (`tavily-search` and
   `tavily_search`, `getUser` and `get_user`). Their contracts may differ too; the rename
   finding says which parts did.
2. **Content**: otherwise the two units carry an equal contract (the engine's `contract_of`:
   an MCP tool's input schema shape, `schema_shape`; a skill's schemas and modes) and similar
   descriptions (`difflib` ratio of the normalised texts at least `DESCRIPTION_RATIO`). A
   description shorter than `MIN_DESCRIPTION_WORDS` words is no evidence: two short texts
   (`a tool`, `b tool`) agree by chance.

A removed unit with more than one candidate, or an added one claimed by more than one removed
unit, is not paired (ambiguous): it stays a removal and an addition. Spelling pairs are taken
first; content pairs only among the units left.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

# The least `difflib.SequenceMatcher` ratio of two descriptions that reads as "the same text,
# edited": a reworded sentence stays above it, two tools' different purposes fall below.
DESCRIPTION_RATIO = 0.6
MIN_DESCRIPTION_WORDS = 5
# Keywords that document a schema without constraining what it accepts.
_ANNOTATIONS = frozenset({"description", "title", "examples", "$comment", "$schema"})
# Keywords whose value is a map of names to subschemas, and those whose value is data.
_NAMED_SUBSCHEMAS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
_VALUES = frozenset({"enum", "const", "default"})
_SEPARATORS = re.compile(r"[\s_\-.:/]+")

Unit = Mapping[str, Any]


def pair_renames(
    removed: Mapping[str, Unit],
    added: Mapping[str, Unit],
    contract_of: Callable[[Unit], Any],
) -> list[tuple[str, str]]:
    """The (old name, new name) pairs of `removed` and `added` units that are one unit renamed,
    in `removed`'s order; every name is in at most one pair. `contract_of` gives what must be
    equal for a content pair (a JSON value: an input schema's `schema_shape` ...)."""
    pairs = _unique_pairs(removed, added, lambda name, _unit: name_key(name), lambda _b, _a: True)
    paired = {name for pair in pairs for name in pair}
    pairs += _unique_pairs(
        {k: v for k, v in removed.items() if k not in paired},
        {k: v for k, v in added.items() if k not in paired},
        lambda _name, unit: json.dumps(contract_of(unit), sort_keys=True, default=str),
        lambda b, a: is_similar_text(b.get("description"), a.get("description")),
    )
    order = {name: i for i, name in enumerate(removed)}
    return sorted(pairs, key=lambda pair: order[pair[0]])


def name_key(name: str) -> str:
    """A name compared ignoring case and separators."""
    return _SEPARATORS.sub("", name).lower()


def is_similar_text(before: Any, after: Any) -> bool:
    """Whether two descriptions read as one text edited (each of at least
    `MIN_DESCRIPTION_WORDS` words)."""
    b, a = _words(before), _words(after)
    if min(len(b.split()), len(a.split())) < MIN_DESCRIPTION_WORDS:
        return False
    matcher = difflib.SequenceMatcher(None, b, a, autojunk=False)
    # The cheap upper bounds first: most pairs of texts fail them.
    return (
        matcher.real_quick_ratio() >= DESCRIPTION_RATIO
        and matcher.quick_ratio() >= DESCRIPTION_RATIO
        and matcher.ratio() >= DESCRIPTION_RATIO
    )


def schema_shape(schema: Any) -> Any:
    """A JSON Schema without the keywords that only document it, to compare what it accepts.
    The keys of `properties` (and the other maps of named subschemas) are names, kept as they
    are; `enum`, `const` and `default` values are data, kept whole."""
    if isinstance(schema, list):
        return [schema_shape(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    shape: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _ANNOTATIONS:
            continue
        if key in _VALUES:
            shape[key] = value
        elif key in _NAMED_SUBSCHEMAS and isinstance(value, dict):
            shape[key] = {name: schema_shape(sub) for name, sub in value.items()}
        else:
            shape[key] = schema_shape(value)
    return shape


def changed_parts(before: Unit, after: Unit, parts: Mapping[str, str]) -> str:
    """`; also changed: description, input schema` for the `parts` (key -> words) whose values
    differ between the two units, or "" when none does."""
    changed = [words for key, words in parts.items() if before.get(key) != after.get(key)]
    return f"; also changed: {', '.join(changed)}" if changed else ""


def _unique_pairs(
    removed: Mapping[str, Unit],
    added: Mapping[str, Unit],
    key: Callable[[str, Unit], str],
    matches: Callable[[Unit, Unit], bool],
) -> list[tuple[str, str]]:
    """Pairs of units with an equal `key(name, unit)` that `matches`, each the only candidate of
    the other."""
    by_key: dict[str, list[str]] = {}
    for new, unit in added.items():
        by_key.setdefault(key(new, unit), []).append(new)
    candidates = {
        old: [new for new in by_key.get(key(old, unit), []) if matches(unit, added[new])]
        for old, unit in removed.items()
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
