"""Never silent: one field of a real document changed, and the diff says something.

A hypothesis property test walks a document from its operations the way a client reaches
things (following `$ref`s), changes one field (a number, a string, a flag, or an entry
deleted) and asserts that the diff is not empty unless the field only documents (issue 32,
section 1). Documents: the fixtures in `tests/diffs/fixtures/`, and, when present beside the
clone, the conformance corpora (`../shared/conformance`) and the large real pairs
(`../shared/bench/openapi`). Seeded and bounded: hypothesis runs derandomized.
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.diffs import diff_openapi, load_document
from controller.diffs.refs import resolve_pointer
from controller.diffs.unclassified import DOCUMENTATION

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.conformance import DEFAULT_CORPUS  # noqa: E402
from bench.diff_bench import DEFAULT_DIR as BENCH_DIR  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
PEERS = DEFAULT_CORPUS / "peers"
OASDIFF = DEFAULT_CORPUS / "openapi" / "specs"
# Keys whose values only document, beyond the engine's own list.
_DOCS = DOCUMENTATION | {"$comment"}
_REF_VALUES = frozenset({"$ref", "mapping", "operationRef"})
_MAX_STEPS = 40
# Where a walk may start besides `paths`: what applies to every operation.
_STARTS = (
    ["security"],
    ["servers"],
    ["components", "securitySchemes"],
    ["securityDefinitions"],
    ["host"],
    ["basePath"],
    ["webhooks"],
)


def _load(path: Path) -> dict[str, Any]:
    return load_document(path.read_bytes(), path.name, kind="openapi")  # type: ignore[no-any-return]


@cache
def _fixture_docs() -> tuple[dict[str, Any], ...]:
    return tuple(_load(p) for p in sorted(FIXTURES.iterdir()))


@cache
def _corpus_docs(folder: Path, limit: int) -> tuple[dict[str, Any], ...]:
    """Documents of a corpus folder (the larger ones first: they hold more to mutate)."""
    files = sorted(
        (p for p in folder.rglob("*") if p.suffix in (".yaml", ".yml", ".json")),
        key=lambda p: (-p.stat().st_size, str(p)),
    )
    docs: list[dict[str, Any]] = []
    for path in files:
        if path.name in ("expected.json", "cases.json", "rules.json"):
            continue
        try:
            doc = _load(path)
        except Exception:  # noqa: BLE001 - corpora hold deliberately broken documents
            continue
        if isinstance(doc.get("paths"), dict) and doc["paths"]:
            docs.append(doc)
        if len(docs) >= limit:
            break
    return tuple(docs)


Mutation = tuple[dict[str, Any], list[Any], list[Any], str]


def _mutate(data: st.DataObject, doc: dict[str, Any]) -> Mutation | None:
    """Walk from `paths` as a client reaches things and change one field; return the new
    document, where and what changed, or None when the walk ends on documentation only."""
    starts = [["paths"]] * 4 + [
        start for start in _STARTS if isinstance(_at(doc, start), dict | list | str)
    ]
    where: list[Any] = list(data.draw(st.sampled_from(starts)))
    node: Any = _at(doc, where)
    trail: list[Any] = list(where)  # every key walked through, references included
    if isinstance(node, str):
        return _apply(doc, where, node + "x"), where, trail, f"{_pointer(where)} changed"
    for _ in range(_MAX_STEPS):
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if not ref.startswith("#/"):
                return None
            node = resolve_pointer(doc, ref)
            where = [_unescape(s) for s in ref[2:].split("/")]
            continue
        keys: list[Any]
        if isinstance(node, dict):
            keys = sorted(
                (k for k in node if not _documentation(k) and k not in _REF_VALUES), key=str
            )
        elif isinstance(node, list):
            keys = list(range(len(node)))
        else:
            return None
        if not keys:
            return None
        key = data.draw(st.sampled_from(keys))
        child = node[key]
        here = [*where, key]
        trail.append(key)
        if isinstance(child, dict | list) and child:
            if data.draw(st.integers(0, 5)) == 0 and not (
                isinstance(child, dict) and "$ref" in child
            ):
                return _apply(doc, here, _DELETE), here, trail, f"deleted {_pointer(here)}"
            node, where = child, here
            continue
        changed = _changed(child)
        if changed is _SKIP:
            return None
        if changed is _DELETE:
            return None
        if isinstance(node, dict) and not isinstance(child, bool) and data.draw(st.booleans()):
            return _apply(doc, here, _DELETE), here, trail, f"deleted {_pointer(here)}"
        return (
            _apply(doc, here, changed),
            here,
            trail,
            f"{_pointer(here)}: {child!r} -> {changed!r}",
        )
    return None


_SKIP, _DELETE = object(), object()


def _changed(value: Any) -> Any:
    """Another value for a field: a flag flipped, a number moved, a string extended; empty
    containers are left alone (an empty list or object is the same as none)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if value is None or value == [] or value == {}:
        return _SKIP
    return _DELETE


def _apply(doc: dict[str, Any], where: list[Any], value: Any) -> dict[str, Any]:
    """A copy of `doc` with the field at `where` set (or deleted), copying only the
    containers on the way: the rest is shared, so large documents cost nothing."""
    root = dict(doc)
    node: Any = root
    for key in where[:-1]:
        child = node[key]
        child = dict(child) if isinstance(child, dict) else list(child)
        node[key] = child
        node = child
    last = where[-1]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value
    return root


def _documentation(key: Any) -> bool:
    text = str(key)
    return text in _DOCS or text.startswith("x-")


def _unescape(segment: str) -> str:
    return segment.replace("~1", "/").replace("~0", "~")


def _pointer(where: list[Any]) -> str:
    return "/" + "/".join(str(s).replace("~", "~0").replace("/", "~1") for s in where)


def _no_effect(
    doc: dict[str, Any], mutated: dict[str, Any], where: list[Any], trail: list[Any]
) -> bool:
    """Changes a client cannot observe, on purpose not reported (docs/diff.md): an
    operation's `security` deleted where it repeated the global one, a path-level parameter
    that every operation overrides, a readOnly property of a request or a writeOnly one of
    a response."""
    if len(where) == 4 and where[0] == "paths" and where[3] == "security":
        if where[3] not in mutated["paths"][where[1]][where[2]]:
            return doc["paths"][where[1]][where[2]].get("security") == doc.get("security")
    if len(where) >= 4 and where[0] == "paths" and where[2] == "parameters":
        item = mutated["paths"][where[1]]
        param = item["parameters"][where[3]] if where[3] < len(item["parameters"]) else None
        if isinstance(param, dict) and "$ref" not in param:
            key = (param.get("in"), param.get("name"))
            operations = [o for m, o in item.items() if m in _METHODS and isinstance(o, dict)]
            if operations and all(
                any(
                    isinstance(p, dict) and (p.get("in"), p.get("name")) == key
                    for p in o.get("parameters") or []
                )
                for o in operations
            ):
                return True
    hidden = "readOnly" if "requestBody" in trail or "parameters" in trail else "writeOnly"
    if "callbacks" in trail or "responses" not in trail and hidden == "writeOnly":
        return False
    for i, key in enumerate(where[:-1]):
        if key == "properties":
            schema = _at(doc, where[: i + 2])
            if isinstance(schema, dict) and schema.get(hidden) is True:
                return True
    return False


_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})


def _at(doc: Any, where: list[Any]) -> Any:
    node = doc
    for key in where:
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def _check(data: st.DataObject, docs: tuple[dict[str, Any], ...]) -> None:
    doc = data.draw(st.sampled_from(docs))
    found = _mutate(data, doc)
    if found is None:
        return
    mutated, where, trail, what = found
    if _no_effect(doc, mutated, where, trail):
        return
    changes = diff_openapi(doc, mutated)
    assert changes, f"no change reported for {what}"


RUN = settings(
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


@settings(RUN, max_examples=300)
@given(st.data())
def test_one_field_changed_in_the_fixtures_is_never_silent(data: st.DataObject) -> None:
    _check(data, _fixture_docs())


@pytest.mark.skipif(not PEERS.exists(), reason=f"peers' corpus not present at {PEERS}")
@settings(RUN, max_examples=150)
@given(st.data())
def test_one_field_changed_in_the_peers_corpus_is_never_silent(data: st.DataObject) -> None:
    _check(data, _corpus_docs(PEERS, 60))


@pytest.mark.skipif(not OASDIFF.exists(), reason=f"oasdiff corpus not present at {OASDIFF}")
@settings(RUN, max_examples=150)
@given(st.data())
def test_one_field_changed_in_the_oasdiff_corpus_is_never_silent(data: st.DataObject) -> None:
    _check(data, _corpus_docs(OASDIFF, 60))


@pytest.mark.skipif(
    not (BENCH_DIR / "github-2022-07-18.json").exists(),
    reason=f"large real pairs not present at {BENCH_DIR}",
)
@settings(RUN, max_examples=8)
@given(st.data())
def test_one_field_changed_in_a_large_real_document_is_never_silent(
    data: st.DataObject,
) -> None:
    _check(data, _large_docs())


@cache
def _large_docs() -> tuple[dict[str, Any], ...]:
    return (
        _load(BENCH_DIR / "github-2022-07-18.json"),
        _load(BENCH_DIR / "stripe-2022-04-12.json"),
    )


@pytest.mark.parametrize("odd", [True, 3, {"x": 1}])
def test_a_type_that_is_not_a_json_schema_type_is_a_change_not_a_crash(odd: object) -> None:
    """A vendor's schema with `type: true` is read as a type of its own: a change to a real
    type is reported (the check records it), never an exception that fails the diff."""
    from controller.diffs.jsonschema import diff_schemas

    findings = diff_schemas({"type": odd}, {"type": "string"}, "response")
    assert findings, odd
    assert diff_schemas({"type": odd}, {"type": odd}, "response") == []
