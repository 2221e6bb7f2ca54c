"""`$ref` resolution over parsed documents, local and (through a caller's callback) external.

References are followed lazily, one step at a time, and never inlined, so documents whose
schemas refer to themselves (Stripe's expandable fields) cost nothing extra. External
documents are fetched by a `Resolver` the caller passes (`uri -> parsed document`), which keeps
the engines free of I/O.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
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

    __slots__ = ("root", "uri", "_store")

    def __init__(self, root: Any, uri: str = "", store: DocumentStore | None = None) -> None:
        self.root = root
        self.uri = uri
        self._store = store

    def resolve(self, ref: str) -> tuple[str, Any, Document]:
        """Follow one `$ref`; return (a key unique per target, the target, its document)."""
        if ref.startswith("#"):
            try:
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
