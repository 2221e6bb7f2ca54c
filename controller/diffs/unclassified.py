"""Never "no change" when two OpenAPI documents differ in substance.

When the rules report nothing, `first_difference` looks for a difference the rules do not
cover and the engine reports it as `unclassified-difference` (a warning naming its path).
Documentation (descriptions, summaries, titles, examples, external docs, the `info` object
and the tag list), JSON Schemas (the schema differ compared them: an equivalent form is no
difference) and what the engine treats as the same operation (a renamed path parameter, object
key order) are not differences here. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Keywords that only document: a change there is not a contract change.
DOCUMENTATION = frozenset(
    {
        "description",
        "summary",
        "title",
        "example",
        "examples",
        "externalDocs",
        "info",
        "tags",
        # A security scheme's token format "is primarily for documentation purposes" (OAS).
        "bearerFormat",
    }
)
# JSON Schemas are the schema differ's: when it reported nothing, what differs there is an
# equivalent form (a reference inlined, `oneOf` members reordered), not an unread difference.
SCHEMAS = frozenset({"schema", "schemas", "definitions"})
_PARAM = re.compile(r"\{[^}/]*\}")


def first_difference(base: dict[str, Any], revision: dict[str, Any]) -> str | None:
    """The JSON pointer (in the revision) of the first substantive difference, or None."""
    return _first(_comparable(base), _comparable(revision), "", SCHEMAS)


def values_at(base: dict[str, Any], revision: dict[str, Any], pointer: str) -> tuple[Any, Any]:
    """The values at a pointer `first_difference` or `unwatched_differences` returned, in
    each document (None where there is none)."""
    return _at(_comparable(base), pointer), _at(_comparable(revision), pointer)


def _at(document: Any, pointer: str) -> Any:
    node = document
    for raw in pointer.split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict):
            node = node.get(token)
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


def _comparable(document: dict[str, Any]) -> dict[str, Any]:
    """The engine's notion of "the same": paths keyed by their template with parameter names
    erased, parameters keyed by name (path parameters by position, their names erased),
    security requirements in any order."""
    out = {**document}
    if isinstance(document.get("security"), list):
        out["security"] = _alternatives(document["security"])
    paths = document.get("paths")
    if isinstance(paths, dict):
        same: dict[str, Any] = {}
        for raw, item in paths.items():
            key = _PARAM.sub("{}", str(raw).rstrip("/") or "/")
            same[key] = _comparable_item(item) if isinstance(item, dict) else item
        out["paths"] = same
    return out


def _comparable_item(item: dict[str, Any]) -> dict[str, Any]:
    out = {**item}
    if isinstance(item.get("parameters"), list):
        out["parameters"] = _by_name(item["parameters"])
    for method, operation in item.items():
        if not isinstance(operation, dict) or method not in _METHODS:
            continue
        changed = {**operation}
        if isinstance(operation.get("parameters"), list):
            changed["parameters"] = _by_name(operation["parameters"])
        if isinstance(operation.get("security"), list):
            changed["security"] = _alternatives(operation["security"])
        out[method] = changed
    return out


def _by_name(parameters: list[Any]) -> dict[str, Any]:
    """Parameters by name (order means nothing); path parameters by position, unnamed."""
    names = [p.get("name") for p in parameters if isinstance(p, dict)]
    keyed: dict[str, Any] = {}
    position = 0
    for index, p in enumerate(parameters):
        if not isinstance(p, dict):
            keyed[str(index)] = p
        elif p.get("in") == "path":
            keyed[f"path:{position}"] = {k: v for k, v in p.items() if k != "name"}
            position += 1
        else:
            name = str(p.get("name"))
            keyed[name if names.count(p.get("name")) == 1 else f"{p.get('in')}:{name}"] = p
    return keyed


def _alternatives(security: list[Any]) -> list[Any]:
    """Security requirements in a canonical order, their scopes sorted."""
    canonical = [
        {k: sorted(map(str, v)) if isinstance(v, list) else v for k, v in r.items()}
        if isinstance(r, dict)
        else r
        for r in security
    ]
    return sorted(canonical, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _first(
    base: Any, revision: Any, pointer: str, skipped: frozenset[str], strict: bool = False
) -> str | None:
    if isinstance(base, dict) and isinstance(revision, dict):
        for key in sorted(set(base) | set(revision), key=str):
            if key in DOCUMENTATION or key in skipped:
                continue
            here = f"{pointer}/{_escape(str(key))}"
            left, right = base.get(key), revision.get(key)
            if strict and (key not in base or key not in revision):
                return here
            if key not in base or key not in revision:
                # An absent container is an empty one: what it held is compared item by item.
                present = left if key in base else right
                if not isinstance(present, dict | list):
                    return here
                empty = type(present)()
                left, right = (left, empty) if key in base else (empty, right)
            found = _first(left, right, here, skipped, strict)
            if found is not None:
                return found
        return None
    if isinstance(base, list) and isinstance(revision, list):
        for index, (left, right) in enumerate(zip(base, revision, strict=False)):
            found = _first(left, right, f"{pointer}/{index}", skipped, strict)
            if found is not None:
                return found
        if len(base) != len(revision):
            return f"{pointer}/{min(len(base), len(revision))}"
        return None
    same = base == revision and type(base) is type(revision)
    return None if same else pointer or "/"


def _escape(segment: str) -> str:
    return segment.replace("~", "~0").replace("/", "~1")


# Places no rule looks at yet: operation callbacks, response links, reusable callbacks and
# links, and OpenAPI 3.1 webhooks. A difference there is always reported (not only when the
# rest of the document is silent).
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def unwatched_differences(base: dict[str, Any], revision: dict[str, Any]) -> list[str]:
    """The first difference inside each place no rule covers, as JSON pointers."""
    found: list[str] = []
    for pointer, left, right in _unwatched(_comparable(base), _comparable(revision)):
        # No schema rule reads these, and an entry there is one whether it documents or not.
        where = _first(left, right, pointer, frozenset(), strict=True)
        if where is not None:
            found.append(where)
    return found


def _unwatched(base: dict[str, Any], revision: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    # A webhook added or removed has its own rule (`openapi._webhooks`); its contents do not.
    bhooks, rhooks = _object(base.get("webhooks")), _object(revision.get("webhooks"))
    places: list[tuple[str, Any, Any]] = [
        (f"/webhooks/{_escape(str(name))}", bhooks[name], rhooks[name])
        for name in sorted(set(bhooks) & set(rhooks), key=str)
    ]
    bcomp, rcomp = _object(base.get("components")), _object(revision.get("components"))
    for kind in ("callbacks", "links"):
        places.append((f"/components/{kind}", bcomp.get(kind), rcomp.get(kind)))
    bpaths, rpaths = _object(base.get("paths")), _object(revision.get("paths"))
    for path in sorted(set(bpaths) & set(rpaths), key=str):
        bitem, ritem = _object(bpaths[path]), _object(rpaths[path])
        for method in _METHODS:
            bop, rop = _object(bitem.get(method)), _object(ritem.get(method))
            if not bop or not rop:
                continue
            here = f"/paths/{_escape(str(path))}/{method}"
            places.append((f"{here}/callbacks", bop.get("callbacks"), rop.get("callbacks")))
            bres, rres = _object(bop.get("responses")), _object(rop.get("responses"))
            for status in sorted(set(bres) & set(rres), key=str):
                places.append(
                    (
                        f"{here}/responses/{_escape(str(status))}/links",
                        _object(bres[status]).get("links"),
                        _object(rres[status]).get("links"),
                    )
                )
    return [(p, b, r) for p, b, r in places if b is not None or r is not None]


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
