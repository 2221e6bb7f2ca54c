"""`$ref` resolution over parsed documents, local and (through a caller's callback) external.

References are followed lazily, one step at a time, and never inlined, so documents whose
schemas refer to themselves (Stripe's expandable fields) cost nothing extra. External
documents are fetched by a `Resolver` the caller passes (`uri -> parsed document`), which keeps
the engines free of I/O.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import unquote, urljoin

from controller.diffs.errors import ContractParseError

Resolver = Callable[[str], Any]


def pointer_segments(pointer: str) -> list[str]:
    """The segments of a JSON pointer (`/a/b~1c`, or a fragment `#/a/b~1c` after an optional
    document), unescaped (RFC 6901)."""
    # A plain pointer starts with `/` and may hold `#` in a key; anything else is a reference.
    body = pointer if pointer.startswith("/") else pointer.partition("#")[2]
    if not body.startswith("/"):
        return []
    return [s.replace("~1", "/").replace("~0", "~") for s in body[1:].split("/")]


def resolve_pointer(doc: Any, ref: str) -> Any:
    """Return the node at a local reference (`#/a/b`); KeyError when it does not exist."""
    if ref in ("#", ""):
        return doc
    if not ref.startswith("#/"):
        raise KeyError(ref)
    node = doc
    for raw in ref[2:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if "%" in token:
            token = unquote(token)
        if isinstance(node, dict):
            if token in node:
                node = node[token]
            elif token.isdigit() and int(token) in node:  # YAML integer keys (status codes)
                node = node[int(token)]
            else:
                raise KeyError(ref)
        elif isinstance(node, list):
            try:
                node = node[int(token)]
            except (ValueError, IndexError):
                raise KeyError(ref) from None
        else:
            raise KeyError(ref)
    return node


class Document:
    """A parsed document with its URI; resolves references relative to itself."""

    __slots__ = ("root", "uri", "_store", "_anchors")

    def __init__(self, root: Any, uri: str = "", store: DocumentStore | None = None) -> None:
        self.root = root
        self.uri = uri
        self._store = store
        self._anchors: dict[str, Any] | None = None

    def resolve(self, ref: str) -> tuple[str, Any, Document]:
        """Follow one `$ref`; return (a key unique per target, the target, its document).
        A fragment that is not a pointer (`#name`) names a `$anchor` (or `$dynamicAnchor`)."""
        if ref.startswith("#"):
            try:
                if ref != "#" and not ref.startswith("#/"):
                    return f"{self.uri}{ref}", self._anchor(ref[1:]), self
                return f"{self.uri}{ref}", resolve_pointer(self.root, ref), self
            except KeyError:
                raise ContractParseError(
                    f"$ref {ref!r} points to nothing", where=self.uri or None
                ) from None
        if self._store is None:
            raise ContractParseError(
                f"external $ref {ref!r} needs a resolver (pass resolver=...)",
                where=self.uri or None,
            )
        doc_part, _, fragment = ref.partition("#")
        other = self._store.get(_join(self.uri, doc_part))
        return other.resolve("#" + fragment)

    def _anchor(self, name: str) -> Any:
        """The schema that declares `$anchor` (or `$dynamicAnchor`) `name`; KeyError if none."""
        if self._anchors is None:
            found: dict[str, Any] = {}
            stack: list[Any] = [self.root]
            while stack:
                node = stack.pop()
                if isinstance(node, dict):
                    for key in ("$anchor", "$dynamicAnchor"):
                        value = node.get(key)
                        if isinstance(value, str):
                            found.setdefault(value, node)
                    stack.extend(v for k, v in node.items() if not _extension(str(k)))
                elif isinstance(node, list):
                    stack.extend(node)
            self._anchors = found
        return self._anchors[name]


class DocumentStore:
    """External documents loaded through the caller's resolver, cached for one diff."""

    def __init__(self, resolver: Resolver | None) -> None:
        self._resolver = resolver
        self._docs: dict[str, Document] = {}

    def get(self, uri: str) -> Document:
        """Return the document at `uri`, asking the resolver once."""
        if uri not in self._docs:
            if self._resolver is None:
                raise ContractParseError(f"external $ref to {uri!r} needs a resolver")
            self._docs[uri] = Document(self._resolver(uri), uri, self)
        return self._docs[uri]


def _join(base_uri: str, relative: str) -> str:
    if "://" in relative or relative.startswith("/") or not base_uri:
        return relative
    if "://" in base_uri:
        return urljoin(base_uri, relative)
    return posixpath.normpath(posixpath.join(posixpath.dirname(base_uri), relative))


# -- Reference Objects of an OpenAPI document ------------------------------------------------
#
# A `$ref` key is a Reference Object only where the OpenAPI / JSON Schema structure expects
# one; the same key inside an `example`, an `x-` extension, a `default` or an `enum` value
# is data (Okta, Spotify publish such documents). So the walk goes by kind of object, each
# kind naming the members that hold further structure and what kind they hold; every other
# member (data, extensions, keywords without subschemas) is not entered.

_SCHEMA = "schema"
_SCHEMA_MAP = "schema-map"
_SCHEMA_LIST = "schema-list"
_SCHEMA_OR_LIST = "schema-or-list"
_DEPENDENCIES = "dependencies"

# Swagger 2.0, OpenAPI 3.0 and 3.1 (JSON Schema 2020-12) keywords that hold subschemas.
_SCHEMA_MEMBERS: dict[str, str] = {
    "properties": _SCHEMA_MAP,
    "patternProperties": _SCHEMA_MAP,
    "$defs": _SCHEMA_MAP,
    "definitions": _SCHEMA_MAP,
    "dependentSchemas": _SCHEMA_MAP,
    "dependencies": _DEPENDENCIES,
    "allOf": _SCHEMA_LIST,
    "anyOf": _SCHEMA_LIST,
    "oneOf": _SCHEMA_LIST,
    "prefixItems": _SCHEMA_LIST,
    "items": _SCHEMA_OR_LIST,  # a list in draft 4 tuples (Slack's Swagger 2.0 unions)
    "additionalItems": _SCHEMA,
    "additionalProperties": _SCHEMA,
    "unevaluatedItems": _SCHEMA,
    "unevaluatedProperties": _SCHEMA,
    "propertyNames": _SCHEMA,
    "contains": _SCHEMA,
    "not": _SCHEMA,
    "if": _SCHEMA,
    "then": _SCHEMA,
    "else": _SCHEMA,
    "contentSchema": _SCHEMA,
}

_OPERATIONS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

# Kind of OpenAPI object -> {member: kind of what it holds}. `map:K` is a map of names to
# K (extensions skipped), `list:K` a list of K. Every kind but the map/list wrappers may be a
# Reference Object itself.
_OBJECT_MEMBERS: dict[str, dict[str, str]] = {
    "document": {
        "paths": "map:path-item",
        "webhooks": "map:path-item",
        "components": "components",
        # Swagger 2.0
        "definitions": "map:schema",
        "parameters": "map:parameter",
        "responses": "map:response",
    },
    "components": {
        "schemas": "map:schema",
        "responses": "map:response",
        "parameters": "map:parameter",
        "examples": "map:example",
        "requestBodies": "map:request-body",
        "headers": "map:header",
        "securitySchemes": "map:leaf",
        "links": "map:leaf",
        "callbacks": "map:callback",
        "pathItems": "map:path-item",
    },
    "path-item": {
        **{method: "operation" for method in _OPERATIONS},
        "parameters": "list:parameter",
    },
    "operation": {
        "parameters": "list:parameter",
        "requestBody": "request-body",
        "responses": "map:response",
        "callbacks": "map:callback",
    },
    "parameter": {
        "schema": "schema",
        "items": "schema",  # Swagger 2.0 non-body parameters
        "content": "map:media-type",
        "examples": "map:example",
    },
    "header": {
        "schema": "schema",
        "items": "schema",
        "content": "map:media-type",
        "examples": "map:example",
    },
    "request-body": {"content": "map:media-type"},
    "media-type": {
        "schema": "schema",
        "examples": "map:example",
        "encoding": "map:encoding",
    },
    "encoding": {"headers": "map:header"},
    "response": {
        "schema": "schema",  # Swagger 2.0
        "headers": "map:header",
        "content": "map:media-type",
        "links": "map:leaf",
    },
    "callback": {},  # a map of expressions to path items, walked below
    "example": {},  # its `value` is data
    "leaf": {},  # security schemes, links: a `$ref`, nothing below that refers
}


def reference_objects(doc: Any) -> Iterator[tuple[list[str | int], Any]]:
    """Every Reference Object of an OpenAPI / Swagger document: the trail of keys to the
    object holding `$ref`, and the `$ref` value as parsed (a caller refuses a non-string)."""
    stack: list[tuple[Any, str, list[str | int]]] = [(doc, "document", [])]
    while stack:
        node, kind, trail = stack.pop()
        if kind.startswith(("map:", "list:")):
            wrapper, _, inner = kind.partition(":")
            if wrapper == "map" and isinstance(node, dict):
                stack.extend(
                    (value, inner, [*trail, key])
                    for key, value in node.items()
                    if not _extension(key)
                )
            elif wrapper == "list" and isinstance(node, list):
                stack.extend((value, inner, [*trail, i]) for i, value in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue  # a boolean schema, or a malformed member the engines report
        if "$ref" in node and kind != "document":
            yield trail, node["$ref"]
        if kind == _SCHEMA:
            stack.extend(_schema_members(node, trail))
            continue
        if kind == "callback":
            stack.extend(
                (value, "path-item", [*trail, key])
                for key, value in node.items()
                if key != "$ref" and not _extension(key)
            )
            continue
        for member, inner in _OBJECT_MEMBERS[kind].items():
            if member in node:
                stack.append((node[member], inner, [*trail, member]))


def _schema_members(
    schema: dict[str, Any], trail: list[str | int]
) -> Iterator[tuple[Any, str, list[str | int]]]:
    for member, how in _SCHEMA_MEMBERS.items():
        if member not in schema:
            continue
        value = schema[member]
        at = [*trail, member]
        if how == _SCHEMA or (how == _SCHEMA_OR_LIST and not isinstance(value, list)):
            yield value, _SCHEMA, at
        elif how in (_SCHEMA_LIST, _SCHEMA_OR_LIST) and isinstance(value, list):
            yield from ((item, _SCHEMA, [*at, i]) for i, item in enumerate(value))
        elif how == _SCHEMA_MAP and isinstance(value, dict):
            yield from ((item, _SCHEMA, [*at, key]) for key, item in value.items())
        elif how == _DEPENDENCIES and isinstance(value, dict):
            # draft 4-7: a subschema, or a list of property names (data)
            yield from (
                (item, _SCHEMA, [*at, key]) for key, item in value.items() if isinstance(item, dict)
            )


def _extension(key: Any) -> bool:
    return isinstance(key, str) and key.startswith("x-")


def pointer_of(trail: list[str | int]) -> str:
    """The JSON pointer fragment (`#/a/b~1c`) of a trail of keys."""
    return "#" + "".join("/" + str(key).replace("~", "~0").replace("/", "~1") for key in trail)
