"""JSON Schema diff: the shared core of every engine.

`SchemaDiffer` walks a baseline and a revised schema side by side and yields `Finding`s: an
aspect of the rule catalog (`type-changed`, `removed-required` ...) at a path relative to the
schema root. It never inlines `$ref`s: a pair of references is compared once, the result is
memoised per (base ref, revision ref), and a pair met again while it is being compared (a
cycle) contributes nothing more. References whose targets and transitive references are
textually unchanged are skipped without walking them. Direction (request or response) decides
membership aspects and readOnly / writeOnly handling; everything else is classified later by
the catalog.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from controller.diffs.errors import ContractParseError
from controller.diffs.refs import Document, resolve_pointer
from controller.diffs.rules import Direction, W, aspect_severity, breaks

_LOCAL_REF = re.compile(r'"\$ref":\s*"(#[^"]*)"')
# A reference into another document: its target can change while this text stays equal.
EXTERNAL_REF = re.compile(r'"\$ref":\s*"(?!#)')
_COMPONENT_REF = re.compile(r'"\$ref":\s*"(#/(?:components/schemas|definitions)/[^"]*)"')
_ANY_STRING_PATTERNS = frozenset({".*", "^.*$", "^.*", ".*$", "(.*)", "^(.*)$"})
_ANNOTATIONS = frozenset(
    {
        "description",
        "title",
        "example",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "externalDocs",
        "$comment",
        "x-stability-level",
        "x-sunset",
    }
)

_MAX_FOLDS = 8
# Below a property never sent (never read) on one side, what decides nothing any more: its
# inner access keywords and which of its inner properties are required (the property's own
# access change says whether a client must send, or can read, it at all).
_ACCESS_ASPECT = re.compile(
    r"became-(not-)?(read|write)-only|added-required|became-required|became-optional"
    r"|removed-required"
)
# The aspect of an edge marker below a property read-only (write-only) on both sides.
_HIDDEN = "\x00hidden"


def _hidden(findings: list[Finding]) -> list[Finding]:
    """Findings from below a property that is read-only (in a request) or write-only (in a
    response) on a side: so is everything inside it there, and access keywords or required
    lists changed within it decide nothing (`_ACCESS_ASPECT`); type and value changes stay
    (typed models still change). Edge markers are marked, so `_expand` drops them there
    too."""
    out = []
    for f in findings:
        if f.edge is not None:
            out.append(Finding(_HIDDEN, f.path, edge=f.edge))
        elif not _ACCESS_ASPECT.match(f.aspect):
            out.append(f)
    return out


# The schema that allows anything, for a subschema keyword left out. One shared object (never
# changed): the cycle guard of one-sided references knows nodes by identity.
_ANY: dict[str, Any] = {}
# Numeric keyword -> (family stem, True for an upper bound).
STABILITY_LEVELS = ("draft", "alpha", "beta", "stable")
_BOUNDS: tuple[tuple[str, str, bool], ...] = (
    ("maximum", "max", True),
    ("minimum", "min", False),
    ("exclusiveMaximum", "exclusive-max", True),
    ("exclusiveMinimum", "exclusive-min", False),
    ("maxLength", "max-length", True),
    ("minLength", "min-length", False),
    ("maxItems", "max-items", True),
    ("minItems", "min-items", False),
    ("maxProperties", "max-properties", True),
    ("minProperties", "min-properties", False),
    ("maxContains", "max-contains", True),
    ("minContains", "min-contains", False),
)
# Keywords holding one subschema that restricts data when present.
_SUBSCHEMA_KEYWORDS: tuple[tuple[str, str], ...] = (
    ("contains", "contains"),
    ("propertyNames", "property-names"),
    ("contentSchema", "content-schema"),
    ("if", "if"),
    ("then", "then"),
    ("else", "else"),
    ("not", "not"),
)


@dataclass(frozen=True, slots=True)
class Finding:
    """One raw difference: a catalog aspect at a path relative to the compared schema."""

    aspect: str
    path: tuple[str, ...] = ()
    before: Any = None
    after: Any = None
    name: str | None = None
    # Set on the internal marker that stands for "compare this pair of references here".
    edge: tuple[str, str] | None = None
    # Where the difference lives when it is inside a referenced schema: the revision-side
    # target of the innermost reference and the path within it (`#/components/schemas/x/...`).
    # Every operation that reaches that schema reports the same origin: one cause.
    origin: str | None = None

    def under(self, *segments: str) -> Finding:
        """Return this finding moved below `segments`."""
        return Finding(
            self.aspect,
            segments + self.path,
            self.before,
            self.after,
            self.name,
            self.edge,
            self.origin,
        )


def _sole_all_of(schema: dict[str, Any]) -> Any:
    """The one member of an `allOf` that stands alone (annotations and extensions aside),
    else None."""
    members = schema.get("allOf")
    if not isinstance(members, list) or len(members) != 1:
        return None
    if any(
        key != "allOf" and key not in _ANNOTATIONS and not key.startswith("x-") for key in schema
    ):
        return None
    return members[0]


_MARKUP = re.compile(r"<[^<>]*>")
_NEWLY_REQUIRED = frozenset(
    {"became-required", "became-required-with-default", "undeclared-became-required"}
)
_NO_LONGER_REQUIRED = frozenset({"became-optional", "undeclared-became-optional"})


def _cleaned(value: Any) -> Any:
    """A string value without HTML tags and surrounding whitespace (other values as they
    are): what a value leaked from documentation markup meant on the wire."""
    return _MARKUP.sub("", value).strip() if isinstance(value, str) else value


def _value_changes(before: list[Any], after: list[Any], aspect: str, out: list[Finding]) -> None:
    """`<aspect>-removed` and `<aspect>-added` for the values of two lists (enums). A value
    that only loses HTML markup leaked into it (Okta's `<x-lifecycle class="ea">
    </x-lifecycle> DEVICE_SIGNAL_COLLECTION` -> `DEVICE_SIGNAL_COLLECTION`) is one
    `<aspect>-corrected`: the marked-up text was never a value a server took."""
    bkeys = {_key(v): v for v in before}
    rkeys = {_key(v): v for v in after}
    gone = [v for k, v in bkeys.items() if k not in rkeys]
    new = [v for k, v in rkeys.items() if k not in bkeys]
    fixed_old: set[str] = set()
    fixed_new: set[str] = set()
    if aspect == "enum-value":
        for v in gone:
            clean = _cleaned(v)
            if clean != v and _key(clean) in rkeys:
                fixed_old.add(_key(v))
                fixed_new.add(_key(clean))
                out.append(Finding(f"{aspect}-corrected", (), v, clean, _text(clean)))
    for v in gone:
        if _key(v) not in fixed_old:
            out.append(Finding(f"{aspect}-removed", (), v, None, _text(v)))
    for v in new:
        if _key(v) not in fixed_new:
            out.append(Finding(f"{aspect}-added", (), None, v, _text(v)))


@lru_cache(maxsize=65536)
def pointer_suffix(path: tuple[str, ...]) -> str:
    """A schema path as a JSON pointer suffix (`/properties/a~1b`)."""
    return "".join("/" + segment.replace("~", "~0").replace("/", "~1") for segment in path)


def diff_schemas(
    base: Any,
    revision: Any,
    direction: Direction | str,
    *,
    base_root: Any = None,
    revision_root: Any = None,
    report_descriptions: bool = False,
) -> list[Finding]:
    """Diff two JSON Schemas in a direction; `*_root` resolve local `$ref`s (default: self)."""
    differ = SchemaDiffer(
        Document(base if base_root is None else base_root),
        Document(revision if revision_root is None else revision_root),
        Direction(direction),
        report_descriptions=report_descriptions,
    )
    return differ.diff(base, revision)


@dataclass(frozen=True, slots=True)
class SchemaPair:
    """Two schemas compared with each other, each with the document its references resolve
    in: what every comparing step of `SchemaDiffer` takes instead of four parameters."""

    base: dict[str, Any]
    base_doc: Document
    revision: dict[str, Any]
    revision_doc: Document


class SchemaDiffer:
    """Compares schemas of two documents in one direction, memoising reference pairs."""

    def __init__(
        self,
        base_doc: Document,
        revision_doc: Document,
        direction: Direction,
        *,
        report_descriptions: bool = False,
        closed_schema_breaking: bool = True,
        stability_threshold: str = "draft",
        unchanged_refs: UnchangedRefs | None = None,
        ref_siblings: tuple[bool, bool] = (True, True),
    ) -> None:
        self.base_doc = base_doc
        # Per side: whether keywords beside a `$ref` constrain (JSON Schema 2019+, OpenAPI
        # 3.1) or are ignored (OpenAPI 3.0 and Swagger 2.0 Reference Objects).
        self.ref_siblings = ref_siblings
        self.revision_doc = revision_doc
        self.direction = direction
        self.report_descriptions = report_descriptions
        # MCP servers built with zod advertise additionalProperties:false but strip unknown
        # keys instead of rejecting them, so a removed input there is not a rejected call.
        self.closed_schema_breaking = closed_schema_breaking
        self.stability_threshold = stability_threshold
        self.unchanged = unchanged_refs or UnchangedRefs(base_doc.root, revision_doc.root)
        self._memo: dict[tuple[str, str], list[Finding]] = {}
        self._pending: dict[tuple[str, str], tuple[Any, Document, Any, Document]] = {}
        self._active: set[tuple[object, object]] = set()
        self._computing: set[tuple[str, str]] = set()
        self._sibling_forms: dict[int, tuple[Any, Any]] = {}
        self._normal_forms: dict[tuple[int, bool], tuple[Any, Any, bool | None]] = {}
        self._sole_forms: dict[int, tuple[Any, Any]] = {}
        self._merged_forms: dict[int, tuple[Any, Any]] = {}
        self._distributed_forms: dict[int, tuple[Any, list[Any] | None]] = {}
        self._parts: dict[int, set[int]] = {}
        self._folds = 0  # one-member `allOf` folds in progress (bounded: a member may fold)
        self._subtypes: dict[int, dict[str, list[str]]] = {}
        self._names: dict[int, dict[int, str]] = {}

    def diff(self, base: Any, revision: Any) -> list[Finding]:
        """Return the findings between two schemas of this differ's documents.

        Each pair of references is reported once, at the shortest path that reaches it, so a
        component met through many paths (or through a cycle) does not multiply findings.
        """
        return self._expand(self._diff(base, self.base_doc, revision, self.revision_doc))

    def _expand(self, items: list[Finding]) -> list[Finding]:
        out: list[Finding] = []
        seen: set[tuple[tuple[str, str], bool]] = set()
        queue: deque[tuple[tuple[str, ...], list[Finding], str | None, bool]] = deque(
            [((), items, None, False)]
        )
        while queue:
            prefix, batch, target, hidden = queue.popleft()
            # A schema reached as an `allOf` part is its parent, not the polymorphic base
            # that stands for its subtypes.
            part = len(prefix) >= 2 and prefix[-2] == "allOf"
            for f in batch:
                if part and f.path[:1] == ("x-subtypes",):
                    continue
                if f.edge is None:
                    if hidden and _ACCESS_ASPECT.match(f.aspect):
                        continue
                    # A finding expanded already (taken apart by a caller) keeps its origin.
                    origin = f.origin or (
                        target + pointer_suffix(f.path) if target is not None else None
                    )
                    out.append(
                        Finding(f.aspect, prefix + f.path, f.before, f.after, f.name, None, origin)
                    )
                    continue
                # Below a property hidden on both sides (`_hidden`), access keywords do not
                # count: the same pair of references is walked apart from where they do.
                inner = hidden or f.aspect == _HIDDEN
                if (f.edge, inner) not in seen:
                    seen.add((f.edge, inner))
                    queue.append(
                        (prefix + f.path, self._pair_items(f.edge), self._local(f.edge[1]), inner)
                    )
        return out

    def _local(self, key: str) -> str:
        """A reference key as an origin: `#/...` inside the revised document itself."""
        uri = self.revision_doc.uri
        return key[len(uri) :] if uri and key.startswith(uri + "#") else key

    def _pair_items(self, pair: tuple[str, str]) -> list[Finding]:
        cached = self._memo.get(pair)
        if cached is None:
            if pair in self._computing:
                # Met again while deciding whether two schemas are equivalent (a cycle): what
                # it adds is being compared already, so it adds nothing here.
                return []
            b, bdoc, r, rdoc = self._pending.pop(pair)
            self._computing.add(pair)
            try:
                cached = self._memo[pair] = self._diff(b, bdoc, r, rdoc)
            finally:
                self._computing.discard(pair)
        return cached

    # -- references -------------------------------------------------------------------------

    def _diff(self, b: Any, bdoc: Document, r: Any, rdoc: Document) -> list[Finding]:
        if b is False or r is False:
            # The false schema allows no value: against anything else the whole set changed.
            if b is r:
                return []
            return [Finding("became-false" if r is False else "no-longer-false")]
        b = self._with_siblings(b) if self.ref_siblings[0] else _bare_ref(b)
        r = self._with_siblings(r) if self.ref_siblings[1] else _bare_ref(r)
        (nb, bnull), (nr, rnull) = (
            self._normal(b, not self.ref_siblings[0]),
            self._normal(r, not self.ref_siblings[1]),
        )
        if _is_null_schema(b) or _is_null_schema(r):
            # A schema of null alone against another is a change of types, told as such.
            nb, nr, bnull, rnull = b, r, None, None
        if bnull is not None or rnull is not None:
            return self._diff_nullable(nb, bdoc, bnull, nr, rdoc, rnull)
        # A `oneOf`/`anyOf` of one member is that member, against a schema without
        # alternatives; against alternatives, members are compared one by one as before.
        if (
            type(nb) is dict
            and type(nr) is dict
            and (_alternatives(nb) is None) != (_alternatives(nr) is None)
        ):
            nb, nr = self._sole(nb), self._sole(nr)
        if nb is not b or nr is not r:
            return self._diff(nb, bdoc, nr, rdoc)
        bref = _ref_of(b)
        rref = _ref_of(r)
        if bref is None and rref is None:
            return self._compare(b, bdoc, r, rdoc)
        bkey = rkey = None
        if bref is not None:
            bkey, b, bdoc = bdoc.resolve(bref)
        if rref is not None:
            rkey, r, rdoc = rdoc.resolve(rref)
        if bkey is not None and rkey is not None:
            # Never inline: a pair of references becomes an edge, compared once on demand.
            pair = (bkey, rkey)
            # Both ends in the root documents at the same pointer, and that component and
            # everything it reaches unchanged: nothing to walk. (Compared by document, not by
            # key: the keys carry each document's URI, which differ when the CLI names files.)
            if (
                bdoc is self.base_doc
                and rdoc is self.revision_doc
                and bref == rref
                and self.unchanged.is_unchanged(bref or "")
            ):
                return []
            if pair not in self._memo and pair not in self._pending:
                self._pending[pair] = (b, bdoc, r, rdoc)
            return [Finding("", (), edge=pair)]
        token = (bkey if bkey is not None else id(b), rkey if rkey is not None else id(r))
        if token in self._active:
            return []
        self._active.add(token)
        try:
            return self._diff(b, bdoc, r, rdoc)
        finally:
            self._active.discard(token)

    def _with_siblings(self, node: Any) -> Any:
        """`_with_siblings(node)`, the same object each time for the same node: the cycle
        guard of one-sided references knows nodes by identity."""
        if type(node) is not dict or len(node) == 1 or "$ref" not in node:
            return node
        kept = self._sibling_forms.get(id(node))
        if kept is None or kept[0] is not node:
            kept = self._sibling_forms[id(node)] = (node, _with_siblings(node))
        return kept[1]

    def _resolved(self, node: Any, doc: Document) -> Any:
        return self._resolved_in(node, doc)[0]

    def _normal(self, node: Any, legacy: bool = False) -> tuple[Any, bool | None]:
        """`normal_form(node)`, the same object each time for the same node (the cycle guard
        of one-sided references knows nodes by identity). `legacy`: the node is read as
        OpenAPI 3.0 / Swagger 2.0 (`legacy_items`)."""
        if type(node) is not dict or "$ref" in node:
            return node, None
        kept = self._normal_forms.get((id(node), legacy))
        if kept is None or kept[0] is not node:
            form = normal_form(legacy_items(node) if legacy else node)
            kept = self._normal_forms[(id(node), legacy)] = (node, *form)
        return kept[1], kept[2]

    def _sole(self, node: dict[str, Any]) -> Any:
        """`_sole_member(node)` (or `node`), the same object each time for the same node."""
        kept = self._sole_forms.get(id(node))
        if kept is None or kept[0] is not node:
            kept = self._sole_forms[id(node)] = (node, _sole_member(node))
        return node if kept[1] is None else kept[1]

    def _diff_nullable(
        self, b: Any, bdoc: Document, bnull: bool | None, r: Any, rdoc: Document, rnull: bool | None
    ) -> list[Finding]:
        """Compare two schemas of which at least one spelled out whether null is allowed: the
        null is one finding (by the set of values: null added or removed), and the schemas
        without it are compared as usual, so nothing below a dropped wrapper goes unseen."""
        bn = bnull if bnull is not None else self._admits_null(b, bdoc)
        rn = rnull if rnull is not None else self._admits_null(r, rdoc)
        out: list[Finding] = []
        # Without any constraint a schema allows null anyway (3.0's `nullable` needs a type).
        if bn != rn and (self._constrains(b, bdoc) or self._constrains(r, rdoc)):
            out.append(Finding("became-nullable" if rn else "became-not-nullable"))
        return out + self._diff(b, bdoc, r, rdoc)

    def _admits_null(self, node: Any, doc: Document) -> bool:
        """Whether a schema without its own null spelling allows null through a reference."""
        target, _ = self._resolved_in(node, doc)
        return bool(normal_form(target)[1]) if type(target) is dict else False

    def _constrains(self, node: Any, doc: Document) -> bool:
        target, _ = self._resolved_in(node, doc)
        return type(target) is dict and any(
            k not in _ANNOTATIONS and not k.startswith("x-") for k in target
        )

    # -- one schema pair --------------------------------------------------------------------

    def _compare(self, b: Any, bdoc: Document, r: Any, rdoc: Document) -> list[Finding]:
        b = _as_schema(b)
        r = _as_schema(r)
        # `allOf` with one member and nothing else is that member: wrapping a reference in it
        # (a common refactor) is no change.
        bsole, rsole = _sole_all_of(b), _sole_all_of(r)
        if bsole is not None or rsole is not None:
            return self._diff(
                b if bsole is None else bsole, bdoc, r if rsole is None else rsole, rdoc
            )
        # A one-member `allOf` beside keywords its member does not set (`default`,
        # `nullable` ...) is the member with those keywords: compared by what it means
        # when the other side is written without the `allOf`.
        if ("allOf" in b) != ("allOf" in r) and self._folds < _MAX_FOLDS:
            fb, fbdoc = self._folded(b, bdoc)
            fr, frdoc = self._folded(r, rdoc)
            if fb is not b or fr is not r:
                self._folds += 1
                try:
                    return self._compare(fb, fbdoc, fr, frdoc)
                finally:
                    self._folds -= 1
        out: list[Finding] = []
        pair = SchemaPair(b, bdoc, r, rdoc)
        if _all_of_shape(b) != _all_of_shape(r):
            merged = self._compare_merged(pair)
            if merged is not None:
                return merged
        if self._compare_wrapping(pair, out):
            return out
        if not self._compare_types(pair, out):
            return out  # incompatible types: one finding says it all
        self._compare_scalars(b, r, out)
        self._compare_values(b, r, out)
        self._compare_properties(pair, out)
        self._compare_subschemas(pair, out)
        self._compare_composition(pair, out)
        self._compare_discriminator(pair, out)
        self._compare_unread(b, r, out)
        return out

    def _folded(self, schema: dict[str, Any], doc: Document) -> tuple[dict[str, Any], Document]:
        """`schema` as its one `allOf` member with the sibling keywords added, when the member
        (in the same document) sets none of them otherwise; else `schema` itself."""
        members = schema.get("allOf")
        if not isinstance(members, list) or len(members) != 1:
            return schema, doc
        node, mdoc = self._resolved_in(members[0], doc)
        if not isinstance(node, dict) or mdoc.uri != doc.uri or _is_annotation_only(node):
            return schema, doc
        siblings = {k: v for k, v in schema.items() if k != "allOf"}
        for key, value in siblings.items():
            if key in node and key not in _ANNOTATIONS and not _same(node[key], value):
                return schema, doc
        return {**node, **siblings}, mdoc

    def _descend(
        self, pair: SchemaPair, base: Any, revision: Any, out: list[Finding], *path: str
    ) -> None:
        """Compare two subschemas of `pair` and report their findings under `path`."""
        for f in self._diff(base, pair.base_doc, revision, pair.revision_doc):
            out.append(f.under(*path))

    def _compare_merged(self, pair: SchemaPair) -> list[Finding] | None:
        """Compare a schema with one made of `allOf` parts (split into parts, or parts joined
        back) by what they describe once the parts are merged, when every part merges
        cleanly: member by member there is nothing to pair the plain schema with.

        An equivalent refactor is then no change at all (annotation-only parts added or
        removed stay as info findings); otherwise the findings are those of the merged
        schemas (a property that became required, ...). Two `allOf` lists keep the
        member-by-member comparison, as the field's reference does by default, unless parts
        were both dropped and added (replaced): then there is nothing to pair the new parts
        with either, and the merged schemas say what changed. None: not handled here.
        """
        b, bdoc, r, rdoc = pair.base, pair.base_doc, pair.revision, pair.revision_doc
        if ("allOf" in b) == ("allOf" in r):
            if "allOf" not in b:
                return None
            _, removed, added = self._match(pair, _list(b.get("allOf")), _list(r.get("allOf")))
            if not removed or not added:
                return None
        fb, fr = self._merged_form(b, bdoc), self._merged_form(r, rdoc)
        if fb is None or fr is None:
            return None
        # A merge consumes the parts' references, so a schema that reaches itself through a
        # part meets this same merged pair again: it adds nothing more.
        token = (id(fb), id(fr))
        if token in self._active:
            return []
        self._active.add(token)
        try:
            findings = self._compare(fb, bdoc, fr, rdoc)
        finally:
            self._active.discard(token)
        notes: list[Finding] = []
        bnotes = [_key(m) for m in self._annotation_parts(b, bdoc)]
        rnotes = [_key(m) for m in self._annotation_parts(r, rdoc)]
        for i, key in enumerate(bnotes):
            if key not in rnotes:
                notes.append(Finding("all-of-removed-annotation-only", (), f"#{i}", None, f"#{i}"))
        for j, key in enumerate(rnotes):
            if key not in bnotes:
                notes.append(Finding("all-of-added-annotation-only", (), None, f"#{j}", f"#{j}"))
        return findings + notes

    def _merged_form(self, schema: dict[str, Any], doc: Document) -> dict[str, Any] | None:
        """`_merged(schema)`, the same object each time for the same node (the cycle guard of
        one-sided references knows nodes by identity)."""
        kept = self._merged_forms.get(id(schema))
        if kept is None or kept[0] is not schema:
            kept = self._merged_forms[id(schema)] = (schema, self._merged(schema, doc))
        return kept[1]

    def _merged(
        self, schema: dict[str, Any], doc: Document, depth: int = 0
    ) -> dict[str, Any] | None:
        """`schema` with its `allOf` parts merged into it (`conjunction`): what a value must
        satisfy, written as one schema. None when the parts do not merge into one simple
        schema (see `conjunction`), a part comes from another document, or nests too deep."""
        parts = schema.get("allOf")
        if not isinstance(parts, list):
            return schema
        if depth > 8:
            return None
        nodes: list[dict[str, Any]] = [{k: v for k, v in schema.items() if k != "allOf"}]
        for part in parts:
            node, pdoc = self._resolved_in(part, doc)
            if node is True or node == {}:
                continue
            if pdoc.uri != doc.uri or not isinstance(node, dict):
                return None
            node = self._merged(node, pdoc, depth + 1)
            if node is None:
                return None
            nodes.append(node)
        return conjunction(nodes)

    def _annotation_parts(self, schema: dict[str, Any], doc: Document) -> list[Any]:
        return [
            node
            for part in _list(schema.get("allOf"))
            if _is_annotation_only(node := self._resolved(part, doc))
        ]

    def _resolved_in(self, node: Any, doc: Document) -> tuple[Any, Document]:
        seen = 0
        while (ref := _ref_of(node)) is not None and seen < 64:
            _, node, doc = doc.resolve(ref)
            seen += 1
        return node, doc

    def _compare_wrapping(self, pair: SchemaPair, out: list[Finding]) -> bool:
        """Handle a plain schema turning into oneOf/anyOf alternatives, or back.

        Comparing such a pair keyword by keyword would report every property as removed;
        instead the pair is one finding: types widened or narrowed when all alternatives are
        bare types, `wrapped-in-one-of`, `wrapped-in-any-of` when the old shape is kept as
        an alternative, else `restructured`.
        """
        b, bdoc, r, rdoc = pair.base, pair.base_doc, pair.revision, pair.revision_doc
        b_alts, r_alts = self._alternatives_of(b, bdoc), self._alternatives_of(r, rdoc)
        if (b_alts is None) == (r_alts is None):
            return False
        plain, plain_doc, alts, alts_doc = (
            (b, bdoc, r_alts, rdoc) if r_alts is not None else (r, rdoc, b_alts, bdoc)
        )
        assert alts is not None
        if not _is_plain(plain):
            return False
        resolved = [_as_schema(self._resolved(a, alts_doc)) for a in alts]
        if _is_scalar(plain) and all(_is_scalar(a) for a in resolved):
            union = frozenset().union(*(_types(a)[0] or frozenset() for a in resolved))
            own = _types(plain)[0] or frozenset()
            bt, rt = (own, union) if r_alts is not None else (union, own)
            self._compare_folded(plain, resolved, r_alts is not None, out)
            if bt == rt:
                return True
            aspect = type_change_aspect(bt, rt, _accepts, multi=True)
            out.append(Finding(aspect, (), _type_text(bt), _type_text(rt)))
            return True
        wrapping = r_alts is not None
        keyword = "oneOf" if (r if wrapping else b).get("oneOf") else "anyOf"
        # Each alternative against the plain schema, old to new.
        each = [
            self._expand(
                self._diff(plain, plain_doc, a, alts_doc)
                if wrapping
                else self._diff(a, alts_doc, plain, plain_doc)
            )
            for a in alts
        ]
        if self._judge_by_values(wrapping, keyword, alts, alts_doc, each, out):
            return True
        kept = any(not found for found in each)
        if wrapping and keyword == "oneOf":
            aspect = "wrapped-in-one-of-original-preserved" if kept else "wrapped-in-one-of"
            out.append(Finding(aspect, (), None, len(alts)))
        elif wrapping and kept:
            out.append(Finding("wrapped-in-any-of", (), None, len(alts)))
        else:
            out.append(
                Finding(
                    "restructured",
                    (),
                    keyword if not wrapping else None,
                    keyword if wrapping else None,
                )
            )
        return True

    def _alternatives_of(self, schema: dict[str, Any], doc: Document) -> list[Any] | None:
        """`_wrapper(schema)`, or the alternatives of a `oneOf`/`anyOf` beside a `type` that
        they imply anyway (`type: object` over object alternatives), else None."""
        alts = _wrapper(schema)
        if alts is not None:
            return alts
        if "type" in schema:
            untyped = {k: v for k, v in schema.items() if k != "type"}
            alts = _wrapper(untyped)
            if alts is not None:
                implied = self._implied_types(untyped, doc)
                own = _types(schema)[0]
                if implied and own is not None and all(_accepts(own, t) for t in implied):
                    return alts
        return self._distributed(schema, doc)

    def _distributed(self, schema: dict[str, Any], doc: Document) -> list[Any] | None:
        """An object written as shared properties beside `oneOf`/`anyOf` alternatives (Okta's
        JWKs: `allOf [Base]` and `oneOf [Rsa, EC]`) as the alternatives it allows: each the
        shared part merged with one alternative (`conjunction`). None when the schema is not
        of that shape or a part does not merge. The same list each time for the same node."""
        kept = self._distributed_forms.get(id(schema))
        if kept is not None and kept[0] is schema:
            return kept[1]
        result: list[Any] | None = None
        keyword = _alternatives(schema)
        if keyword is not None and "properties" in schema and "discriminator" not in schema:
            shared = {k: v for k, v in schema.items() if k not in ("oneOf", "anyOf")}
            result = []
            for member in _list(schema.get(keyword)):
                node, mdoc = self._resolved_in(member, doc)
                node = self._merged(node, mdoc) if type(node) is dict else None
                if node is None or mdoc.uri != doc.uri or _alternatives(node) is not None:
                    result = None
                    break
                merged = conjunction([shared, node])
                if merged is None:
                    result = None
                    break
                result.append(merged)
        self._distributed_forms[id(schema)] = (schema, result)
        return result

    def _judge_by_values(
        self,
        wrapping: bool,
        keyword: str,
        alts: list[Any],
        alts_doc: Document,
        each: list[list[Finding]],
        out: list[Finding],
    ) -> bool:
        """Judge a schema written as alternatives (or folded back from them) by the set of
        values on this differ's side, when the alternatives decide it:

        - every alternative must hold for the side to be safe when the union is the new
          contract read by a client (a response: any alternative may come back) or the old
          one written by it (a request folded into one schema: every old alternative must
          still be accepted);
        - one alternative is enough when the union is the new request contract (the old
          values all fit one alternative; with `oneOf` only if no value matches two) or the
          old response contract (every new value was possible as one alternative).

        Safe: one `rewritten-as-alternatives` / `alternatives-folded` info finding. Not safe
        where every alternative counts: the breaking findings of the alternatives that break,
        each once, so a property really removed underneath is named. Else False: the caller
        reports the restructuring as one finding."""
        request = self.direction is Direction.REQUEST
        every = request != wrapping  # request fold, response wrap
        clean = [not any(breaks(f.aspect, self.direction) for f in found) for found in each]
        if every:
            safe = all(clean)
        else:
            exclusive_ok = keyword == "anyOf" or not request or self._disjoint(alts, alts_doc)
            safe = any(clean) and exclusive_ok
        if safe:
            aspect = "rewritten-as-alternatives" if wrapping else "alternatives-folded"
            count = len(alts)
            out.append(
                Finding(aspect, (), None if wrapping else count, count if wrapping else None)
            )
            if every:  # what needs a look (a warning) in any alternative still says so
                self._each_once(each, lambda f: aspect_severity(f.aspect, self.direction) is W, out)
            return True
        if not every:
            return False
        return self._each_once(each, lambda f: breaks(f.aspect, self.direction), out)

    @staticmethod
    def _each_once(
        each: list[list[Finding]], keep: Callable[[Finding], bool], out: list[Finding]
    ) -> bool:
        """Add the findings of `each` that `keep` selects, each once; True when any."""
        seen: set[tuple[str, tuple[str, ...], str]] = set()
        for found in each:
            for f in found:
                mark = (f.aspect, f.path, _key(f.before) + _key(f.after))
                if keep(f) and mark not in seen:
                    seen.add(mark)
                    out.append(f)
        return bool(seen)

    def _compare_folded(
        self,
        plain: dict[str, Any],
        alternatives: list[dict[str, Any]],
        wrapping: bool,
        out: list[Finding],
    ) -> None:
        """Alternatives of scalar types folded into one type list (or unfolded from one): each
        alternative is compared with the constraints the list keeps for its types, so a
        `format` or a bound lost (or gained) in the fold is reported, once."""
        own = _types(plain)[0] or frozenset()
        found: list[Finding] = []
        for alt in alternatives:
            types = (_types(alt)[0] or frozenset()) & own
            if not types:
                continue  # a type added or removed: the type finding says it
            mine, theirs = _for_types(alt, types), _for_types(plain, types)
            scalars: list[Finding] = []
            if wrapping:
                self._compare_scalars(theirs, mine, scalars)
            else:
                self._compare_scalars(mine, theirs, scalars)
            for f in scalars:
                if f not in found:
                    found.append(f)
        out.extend(found)

    def _compare_types(self, pair: SchemaPair, out: list[Finding]) -> bool:
        b, r = pair.base, pair.revision
        bt, bnull = _types(b)
        rt, rnull = _types(r)
        compatible = True
        # A `type` written out where the alternatives or parts already implied it (or
        # dropped where they still do) changes no value: `oneOf` of objects with and without
        # `type: object`.
        if bt is None and rt is not None:
            implied = self._implied_types(b, pair.base_doc)
            if implied and all(_accepts(rt, t) for t in implied):
                out.append(Finding("type-made-explicit", (), _type_text(implied), _type_text(rt)))
                bt = rt
        elif rt is None and bt is not None:
            implied = self._implied_types(r, pair.revision_doc)
            if implied and all(_accepts(bt, t) for t in implied):
                out.append(Finding("type-left-implied", (), _type_text(bt), _type_text(implied)))
                rt = bt
        if bt != rt:
            before = _type_text(bt)
            after = _type_text(rt)
            if bt is None:
                out.append(Finding("type-specialized", (), before, after))
            elif rt is None:
                out.append(Finding("type-generalized", (), before, after))
            else:
                aspect = type_change_aspect(bt, rt, _accepts, multi=len(bt) > 1 or len(rt) > 1)
                if aspect == "type-changed":
                    compatible = bool(bt & rt) or _structural(bt) == _structural(rt)
                out.append(Finding(aspect, (), before, after))
        if bnull != rnull and not (bt is None and rt is None):
            out.append(Finding("became-nullable" if rnull else "became-not-nullable"))
        return compatible

    def _implied_types(self, schema: Any, doc: Document, depth: int = 0) -> frozenset[str] | None:
        """The JSON types a schema's values can have, from its `type` or else from its
        `properties` / `items`, or what its alternatives (`oneOf`/`anyOf`: any of theirs),
        parts (`allOf`: common to all) or listed values (`enum`, `const`) allow; None when
        any type may pass."""
        node, ndoc = self._resolved_in(schema, doc)
        if type(node) is not dict or depth > 8:
            return None
        own = _types(node)[0]
        if own is not None:
            return own
        # What every generator makes of a schema that lists properties (or items) without a
        # type: an object (an array). JSON Schema would let other types through; no client
        # written against the document sends or expects them.
        if _dict(node.get("properties")) or _dict(node.get("patternProperties")):
            return frozenset({"object"})
        extra = node.get("additionalProperties")
        if extra is False or (isinstance(extra, dict) and extra):
            return frozenset({"object"})
        if isinstance(node.get("items"), dict) and not _alternatives(node):
            return frozenset({"array"})
        values = node.get("enum") if isinstance(node.get("enum"), list) else None
        if "const" in node:
            values = [node["const"]]
        if values is not None:
            return frozenset(_json_type(v) for v in values if v is not None)
        keyword = _alternatives(node)
        if keyword is not None:
            found: set[str] = set()
            for member in _list(node.get(keyword)):
                if _is_null_schema(member):
                    continue
                types = self._implied_types(member, ndoc, depth + 1)
                if types is None:
                    return None
                found |= types
            return frozenset(found) if found else None
        common: frozenset[str] | None = None
        for part in _list(node.get("allOf")):
            types = self._implied_types(part, ndoc, depth + 1)
            if types is not None:
                common = types if common is None else _type_meet(common, types)
        return common

    def _compare_scalars(self, b: dict[str, Any], r: dict[str, Any], out: list[Finding]) -> None:
        bx, rx = b.get("xml"), r.get("xml")
        if bx != rx:
            out.append(Finding("xml-changed", (), bx, rx))
        bf, rf = b.get("format"), r.get("format")
        if bf != rf:
            if bf is None or (bf not in KNOWN_FORMATS and rf in KNOWN_FORMATS):
                # An unknown format checks nothing: a known one in its place is a new check.
                out.append(Finding("format-added", (), bf, rf))
            elif rf is None or (rf not in KNOWN_FORMATS and bf in KNOWN_FORMATS):
                out.append(Finding("format-removed", (), bf, rf))
            else:
                out.append(Finding(_format_aspect(bf, rf), (), bf, rf))
        for upper in (True, False):
            _compare_numeric_bound(b, r, upper, out)
        for keyword, stem, upper in _BOUNDS:
            if keyword in _NUMERIC_BOUND_KEYWORDS:
                continue
            bv, rv = _number(b.get(keyword)), _number(r.get(keyword))
            if bv == rv:
                continue
            if bv is None:
                out.append(Finding(f"{stem}-set", (), None, rv))
            elif rv is None:
                out.append(Finding(f"{stem}-unset", (), bv, None))
            elif upper:
                out.append(Finding(f"{stem}-{'decreased' if rv < bv else 'increased'}", (), bv, rv))
            else:
                out.append(Finding(f"{stem}-{'increased' if rv > bv else 'decreased'}", (), bv, rv))
        _compare_multiple_of(b, r, out)
        bu, ru = bool(b.get("uniqueItems")), bool(r.get("uniqueItems"))
        if bu != ru:
            out.append(Finding("unique-items-set" if ru else "unique-items-unset"))
        bp, rp = b.get("pattern") or None, r.get("pattern") or None
        if bp != rp:
            if bp is None:
                out.append(Finding("pattern-added", (), None, rp))
            elif rp is None:
                out.append(Finding("pattern-removed", (), bp, None))
            elif rp in _ANY_STRING_PATTERNS:
                out.append(Finding("pattern-generalized", (), bp, rp))
            else:
                out.append(Finding("pattern-changed", (), bp, rp))
        _certainly_refused(b, r, out)
        if "default" in b or "default" in r:
            if "default" not in b:
                out.append(Finding("default-value-added", (), None, r["default"]))
            elif "default" not in r:
                out.append(Finding("default-value-removed", (), b["default"], None))
            elif not _same(b["default"], r["default"]):
                out.append(Finding("default-value-changed", (), b["default"], r["default"]))
        for keyword, aspect in (
            ("contentMediaType", "content-media-type-changed"),
            ("contentEncoding", "content-encoding-changed"),
        ):
            if b.get(keyword) != r.get(keyword):
                out.append(Finding(aspect, (), b.get(keyword), r.get(keyword)))
        bd, rd = bool(b.get("deprecated")), bool(r.get("deprecated"))
        if bd != rd:
            aspect = "reactivated"
            if rd:
                sunset = r.get("x-sunset")
                aspect = "deprecated" if sunset is None else "deprecated-with-sunset"
                if sunset is not None and parse_date(sunset) is None:
                    aspect = "deprecated-sunset-invalid"
            out.append(Finding(aspect, (), None, r.get("x-sunset")))
        self._compare_stability(b, r, out)
        if self.report_descriptions and b.get("description") != r.get("description"):
            out.append(
                Finding("description-changed", (), b.get("description"), r.get("description"))
            )

    def _compare_stability(self, b: dict[str, Any], r: dict[str, Any], out: list[Finding]) -> None:
        bl, rl = b.get("x-stability-level"), r.get("x-stability-level")
        if bl == rl:
            return
        if rl is not None and rl not in STABILITY_LEVELS:
            out.append(Finding("stability-invalid", (), bl, rl))
            return
        if bl is not None and bl not in STABILITY_LEVELS:
            return
        rank_b = STABILITY_LEVELS.index(bl or "stable")
        rank_r = STABILITY_LEVELS.index(rl or "stable")
        if rank_b < STABILITY_LEVELS.index(self.stability_threshold):
            return  # below the level the caller cares about
        if rank_r < rank_b:
            out.append(Finding("stability-decreased", (), bl, rl))
        elif rank_r > rank_b:
            out.append(Finding("stability-increased", (), bl, rl))

    def _compare_values(self, b: dict[str, Any], r: dict[str, Any], out: list[Finding]) -> None:
        """`const` and `enum`: a constant written as a one-value enum (or back) is the same
        set of values, so a switch between the two compares the sets."""
        self._compare_extensible_enums(b, r, out)
        bvalues, rvalues = _value_set(b), _value_set(r)
        if (
            bvalues is not None
            and rvalues is not None
            and ("const" in b) != ("const" in r)
            and ("enum" in b) != ("enum" in r)
        ):
            _value_changes(bvalues, rvalues, "enum-value", out)
            return
        if "const" in b or "const" in r:
            if "const" not in b:
                out.append(Finding("const-added", (), None, r["const"]))
            elif "const" not in r:
                out.append(Finding("const-removed", (), b["const"], None))
            elif not _same(b["const"], r["const"]):
                out.append(Finding("const-changed", (), b["const"], r["const"]))
        be, re_ = b.get("enum"), r.get("enum")
        if be is None and re_ is None:
            return
        if not isinstance(be, list) or not isinstance(re_, list):
            if isinstance(re_, list) and be is None:
                out.append(Finding("became-enum", (), None, re_))
            elif isinstance(be, list) and re_ is None:
                out.append(Finding("enum-removed", (), be, None))
            return
        _value_changes(be, re_, "enum-value", out)

    def _compare_extensible_enums(
        self, b: dict[str, Any], r: dict[str, Any], out: list[Finding]
    ) -> None:
        """`x-extensible-enum` (Zalando's guidelines): an open list of known values; readers
        must expect others, so only a value writers may no longer send matters."""
        be, re_ = b.get("x-extensible-enum"), r.get("x-extensible-enum")
        if not isinstance(be, list) or not isinstance(re_, list):
            return
        _value_changes(be, re_, "x-extensible-enum-value", out)

    def _compare_properties(self, pair: SchemaPair, out: list[Finding]) -> None:
        b, bdoc, r, rdoc = pair.base, pair.base_doc, pair.revision, pair.revision_doc
        bprops = b.get("properties")
        rprops = r.get("properties")
        breq = _required(b)
        rreq = _required(r)
        if isinstance(bprops, dict) or isinstance(rprops, dict):
            bprops = bprops if isinstance(bprops, dict) else {}
            rprops = rprops if isinstance(rprops, dict) else {}
            request = self.direction is Direction.REQUEST
            closed = self.closed_schema_breaking and r.get("additionalProperties") is False
            for name, bsub in bprops.items():
                if name in rprops:
                    continue
                bs = _as_schema(self._resolved(bsub, bdoc))
                if self._irrelevant(bs):
                    continue
                if request:
                    aspect = "removed-closed-schema" if closed else "removed"
                else:
                    aspect = "removed-required" if name in breq else "removed"
                out.append(Finding(aspect, ("properties", name), name=name))
            for name, rsub in rprops.items():
                if name in bprops:
                    continue
                rs = _as_schema(self._resolved(rsub, rdoc))
                if self._irrelevant(rs):
                    continue
                if name in rreq:
                    aspect = "added-required"
                    if request and "default" in rs:
                        aspect = "added-required-with-default"
                else:
                    aspect = "added-optional"
                out.append(Finding(aspect, ("properties", name), name=name))
                bextra = b.get("additionalProperties")
                if isinstance(bextra, dict) and bextra:
                    # The key was covered by the old schema for undocumented keys: what a
                    # client sent or read under it is compared with what it holds now.
                    self._descend(pair, bextra, rsub, out, "properties", name)
            for name, bsub in bprops.items():
                if name not in rprops:
                    continue
                rsub = rprops[name]
                bs = _as_schema(self._resolved(bsub, bdoc))
                rs = _as_schema(self._resolved(rsub, rdoc))
                if self._unseen(bs, bdoc) or self._unseen(rs, rdoc):
                    # Read-only (write-only) on a side: so is everything inside it there, and
                    # access keywords moved around within it change nothing (the property's
                    # own access change is reported on it).
                    inner: list[Finding] = []
                    self._descend(pair, bsub, rsub, inner, "properties", name)
                    out.extend(_hidden(inner))
                else:
                    self._descend(pair, bsub, rsub, out, "properties", name)
                if self._irrelevant(bs) == self._irrelevant(rs):
                    self._compare_required(name, name in breq, name in rreq, rsub, rdoc, out)
                self._compare_access(name, name in breq or name in rreq, bs, rs, out)
        # `required` may name properties defined elsewhere (allOf siblings, parents).
        props_b = _dict(b.get("properties"))
        props_r = _dict(r.get("properties"))
        for name in sorted((breq ^ rreq) - set(props_b) - set(props_r)):
            if name in breq and self._dispatches_on(r, rdoc, name):
                continue  # the discriminator's property: every value carries it anyway
            if not (
                "allOf" in b or "allOf" in r or self._is_part(b, bdoc) or self._is_part(r, rdoc)
            ):
                # Defined nowhere: no client has a field for it. A reader cannot have relied
                # on it; a sender is now asked for something it cannot know how to send.
                aspect = (
                    "undeclared-became-required" if name in rreq else "undeclared-became-optional"
                )
                out.append(Finding(aspect, ("properties", name), name=name))
                continue
            self._compare_required(name, name in breq, name in rreq, None, rdoc, out)
        self._compare_additional(pair, out)

    def _is_part(self, schema: dict[str, Any], doc: Document) -> bool:
        """Whether `schema` is an `allOf` member somewhere in `doc` (its siblings may define
        what its `required` names)."""
        parts = self._parts.get(id(doc.root))
        if parts is None:
            parts = self._parts[id(doc.root)] = _all_of_members(doc)
        return id(schema) in parts

    def _dispatches_on(self, schema: Any, doc: Document, name: str, depth: int = 0) -> bool:
        """Whether `name` is the discriminator property of `schema` or of one of its `allOf`
        parts (a subtype inherits its parent's discriminator)."""
        node, ndoc = self._resolved_in(schema, doc)
        if type(node) is not dict or depth > 6:
            return False
        if _dict(node.get("discriminator")).get("propertyName") == name:
            return True
        return any(self._dispatches_on(p, ndoc, name, depth + 1) for p in _list(node.get("allOf")))

    def _compare_access(
        self,
        name: str,
        required: bool,
        bs: dict[str, Any],
        rs: dict[str, Any],
        out: list[Finding],
    ) -> None:
        """`readOnly` / `writeOnly` of a property that stayed: readOnly values are never sent,
        writeOnly values never returned, so a change matters to one side only (the catalog
        classifies each per direction). `required` of a property whose visibility changed is
        said by these findings, not by `became-required`/`became-optional`."""
        suffix = "" if required else "-optional"
        for keyword, stem in (("readOnly", "read-only"), ("writeOnly", "write-only")):
            was, now = bool(bs.get(keyword)), bool(rs.get(keyword))
            if was != now:
                aspect = f"became-{stem}" if now else f"became-not-{stem}"
                out.append(Finding(aspect + suffix, ("properties", name), was, now, name))

    def _compare_required(
        self, name: str, was: bool, now: bool, rsub: Any, rdoc: Document, out: list[Finding]
    ) -> None:
        if was == now:
            return
        rs = _as_schema(self._resolved(rsub, rdoc)) if rsub is not None else {}
        if self._irrelevant(rs):
            return
        if now:
            aspect = "became-required"
            if self.direction is Direction.REQUEST and "default" in rs:
                aspect = "became-required-with-default"
        else:
            aspect = "became-optional"
        out.append(Finding(aspect, ("properties", name), name=name))

    def _unseen(self, schema: Any, doc: Document, depth: int = 0) -> bool:
        """`_irrelevant` where the access keyword may also sit in an `allOf` part (a part
        applies to the whole value)."""
        node, ndoc = self._resolved_in(schema, doc)
        if type(node) is not dict or depth > 8:
            return False
        if self._irrelevant(node):
            return True
        return any(self._unseen(part, ndoc, depth + 1) for part in _list(node.get("allOf")))

    def _irrelevant(self, schema: dict[str, Any]) -> bool:
        # readOnly fields are never sent, writeOnly fields never read.
        if self.direction is Direction.REQUEST:
            return bool(schema.get("readOnly"))
        return bool(schema.get("writeOnly"))

    def _compare_additional(self, pair: SchemaPair, out: list[Finding]) -> None:
        ba, ra = pair.base.get("additionalProperties"), pair.revision.get("additionalProperties")
        if ra is False and ba is not False:
            out.append(Finding("additional-properties-forbidden", (), ba, False))
        elif ba is False and ra is not False:
            out.append(Finding("additional-properties-allowed", (), False, ra))
        elif isinstance(ba, dict) and isinstance(ra, dict):
            self._descend(pair, ba, ra, out, "additionalProperties")
        elif isinstance(ba, dict) and ba:
            # A schema for undocumented keys dropped (absent or `true`: anything goes). Only
            # code that reads keys it does not know by name sees a value of any shape.
            out.append(Finding("additional-properties-unconstrained", (), ba, ra))
        elif isinstance(ra, dict) and ra:
            out.append(Finding("additional-properties-constrained", (), ba, ra))

    def _compare_subschemas(self, pair: SchemaPair, out: list[Finding]) -> None:
        b, r = pair.base, pair.revision
        bi, ri = b.get("items"), r.get("items")
        if not (isinstance(bi, list) or isinstance(ri, list)):
            bs, rs = _subschema(bi), _subschema(ri)
            if bs is not _ANY or rs is not _ANY:
                self._descend(pair, bs, rs, out, "items")
        bpi, rpi = b.get("prefixItems"), r.get("prefixItems")
        if bpi is None and isinstance(rpi, list):
            out.append(Finding("prefix-items-added"))
        elif isinstance(bpi, list) and rpi is None:
            out.append(Finding("prefix-items-removed"))
        elif isinstance(bpi, list) and isinstance(rpi, list):
            self._compare_prefix_items(pair, bpi, rpi, out)
        for keyword, stem in (
            ("unevaluatedItems", "unevaluated-items"),
            ("unevaluatedProperties", "unevaluated-properties"),
        ):
            # `true` allows anything, the same as leaving the keyword out.
            bu, ru = _subschema(b.get(keyword)), _subschema(r.get(keyword))
            if bu is _ANY and ru is not _ANY:
                out.append(Finding(f"{stem}-added", (), None, r[keyword]))
            elif bu is not _ANY and ru is _ANY:
                out.append(Finding(f"{stem}-removed", (), b[keyword], None))
            elif bu is not _ANY:
                self._descend(pair, bu, ru, out, keyword)
        for keyword, stem in _SUBSCHEMA_KEYWORDS:
            if keyword not in b and keyword not in r:
                continue
            if keyword not in b:
                out.append(Finding(f"{stem}-added"))
            elif keyword not in r:
                out.append(Finding(f"{stem}-removed"))
            elif keyword != "not":
                self._descend(pair, b[keyword], r[keyword], out, keyword)
            elif self._expand(self._diff(b["not"], pair.base_doc, r["not"], pair.revision_doc)):
                bx, rx = _excluded(b["not"]), _excluded(r["not"])
                if bx is not None and rx is not None:
                    # Values listed under `not`: decidable, value by value.
                    bkeys, rkeys = {_key(v) for v in bx}, {_key(v) for v in rx}
                    for v in rx:
                        if _key(v) not in bkeys:
                            out.append(Finding("not-value-added", ("not",), None, v, _text(v)))
                    for v in bx:
                        if _key(v) not in rkeys:
                            out.append(Finding("not-value-removed", ("not",), v, None, _text(v)))
                else:
                    # What is excluded changed in a way not decided here: one finding, naming
                    # the construct (its inner findings would read inverted).
                    out.append(Finding("not-changed", (), b["not"], r["not"]))
        self._compare_maps(pair, "patternProperties", "pattern-property", out)
        self._compare_maps(pair, "dependentSchemas", "dependent-schema", out)
        bdr = b.get("dependentRequired")
        rdr = r.get("dependentRequired")
        if isinstance(bdr, dict) or isinstance(rdr, dict):
            bdr = bdr if isinstance(bdr, dict) else {}
            rdr = rdr if isinstance(rdr, dict) else {}
            for name in bdr.keys() - rdr.keys():
                out.append(Finding("dependent-required-removed", (), bdr[name], None, name))
            for name in rdr.keys() - bdr.keys():
                out.append(Finding("dependent-required-added", (), None, rdr[name], name))
            for name in bdr.keys() & rdr.keys():
                if sorted(map(str, bdr[name])) != sorted(map(str, rdr[name])):
                    out.append(
                        Finding("dependent-required-changed", (), bdr[name], rdr[name], name)
                    )

    def _compare_prefix_items(
        self, pair: SchemaPair, bpi: list[Any], rpi: list[Any], out: list[Finding]
    ) -> None:
        """Compare `prefixItems` position by position. A position one side does not list is
        governed there by `items` (anything when absent), or allows nothing when `maxItems`
        ends the array before it: so an entry added or removed is judged by the values it
        now allows at its position, on each side's direction."""
        for i in range(max(len(bpi), len(rpi))):
            where = ("prefixItems", str(i))
            if i >= len(bpi):
                out.append(Finding("prefix-item-added", where, None, i))
            elif i >= len(rpi):
                out.append(Finding("prefix-item-removed", where, i, None))
            bs = bpi[i] if i < len(bpi) else _beyond_prefix(pair.base, i)
            rs = rpi[i] if i < len(rpi) else _beyond_prefix(pair.revision, i)
            self._descend(pair, bs, rs, out, *where)

    def _compare_maps(self, pair: SchemaPair, keyword: str, stem: str, out: list[Finding]) -> None:
        bm, rm = pair.base.get(keyword), pair.revision.get(keyword)
        if not isinstance(bm, dict) and not isinstance(rm, dict):
            return
        bm = bm if isinstance(bm, dict) else {}
        rm = rm if isinstance(rm, dict) else {}
        for name in bm:
            if name not in rm:
                out.append(Finding(f"{stem}-removed", (), name, None, name))
        for name in rm:
            if name not in bm:
                out.append(Finding(f"{stem}-added", (), None, name, name))
            else:
                self._descend(pair, bm[name], rm[name], out, keyword, name)

    def _compare_composition(self, pair: SchemaPair, out: list[Finding]) -> None:
        switched = _switched(pair.base, pair.revision)
        if switched is not None:
            self._compare_switched(pair, *switched, out)
        for keyword, stem in (("oneOf", "one-of"), ("anyOf", "any-of"), ("allOf", "all-of")):
            if switched is not None and keyword in switched:
                continue
            bl = _list(pair.base.get(keyword))
            rl = _list(pair.revision.get(keyword))
            if not bl and not rl:
                continue
            matched, removed, added = self._match(pair, bl, rl)
            for i in removed:
                aspect = f"{stem}-removed"
                if keyword == "allOf" and _is_annotation_only(self._resolved(bl[i], pair.base_doc)):
                    aspect = "all-of-removed-annotation-only"
                out.append(Finding(aspect, (), _label(bl[i], i), None, _label(bl[i], i)))
            for j in added:
                aspect = f"{stem}-added"
                if keyword == "allOf" and _is_annotation_only(
                    self._resolved(rl[j], pair.revision_doc)
                ):
                    aspect = "all-of-added-annotation-only"
                out.append(Finding(aspect, (), None, _label(rl[j], j), _label(rl[j], j)))
            if keyword == "allOf" and matched:
                self._compare_parts(pair, bl, rl, matched, out)
                continue
            open_types = self._open_scalars(rl, pair.revision_doc)
            request = self.direction is Direction.REQUEST
            for i, j in matched:
                if not request or not (open_types or added):
                    self._descend(pair, bl[i], rl[j], out, keyword, str(j))
                    continue
                # A value an alternative stopped listing is still sent fine when another
                # alternative takes it: one that takes any value of its type (`oneOf [RoleType
                # enum, {type: string}]`), or a new alternative that takes the old object
                # with that value (Adyen's `alma` left PaymentDetails for AlmaDetails).
                others = [t for k, t in open_types.items() if k != j]
                for f in self._expand(self._diff(bl[i], pair.base_doc, rl[j], pair.revision_doc)):
                    if f.aspect == "enum-value-removed" and (
                        (not f.path and any(_accepts(t, _json_type(f.before)) for t in others))
                        or self._moved_to(bl[i], pair.base_doc, f, [rl[k] for k in added], pair)
                    ):
                        continue
                    out.append(f.under(keyword, str(j)))

    def _moved_to(
        self, old: Any, doc: Document, finding: Finding, new: list[Any], pair: SchemaPair
    ) -> bool:
        """Whether a new alternative accepts every value the old alternative accepted with
        the property `finding` names set to the value it lost (compared as a request: no
        breaking finding)."""
        if len(finding.path) != 2 or finding.path[0] != "properties" or not new:
            return False
        node = self._resolved(old, doc)
        if type(node) is not dict:
            return False
        name = finding.path[1]
        props = _dict(node.get("properties"))
        if name not in props:
            return False
        narrowed = {
            **node,
            "properties": {
                **props,
                name: {**_as_schema(self._resolved(props[name], doc)), "enum": [finding.before]},
            },
        }
        return any(
            not any(
                breaks(f.aspect, self.direction)
                for f in self._expand(self._diff(narrowed, doc, member, pair.revision_doc))
            )
            for member in new
        )

    def _compare_parts(
        self,
        pair: SchemaPair,
        bl: list[Any],
        rl: list[Any],
        matched: list[tuple[int, int]],
        out: list[Finding],
    ) -> None:
        """Matched `allOf` parts, member by member. A value satisfies every part, so a name
        one part newly requires that the old parts (or the schema) required already, or one
        part stops requiring while the new parts still do, changes nothing: such findings of
        a part written in place are dropped (a part behind a reference is compared once for
        every place that reaches it, and keeps its findings)."""
        before = self._all_required(pair.base, bl, pair.base_doc)
        after = self._all_required(pair.revision, rl, pair.revision_doc)
        for i, j in matched:
            found: list[Finding] = []
            self._descend(pair, bl[i], rl[j], found, "allOf", str(j))
            for f in found:
                name = f.path[3] if len(f.path) == 4 and f.path[2] == "properties" else None
                if name is not None and f.edge is None:
                    if f.aspect in _NEWLY_REQUIRED and name in before:
                        continue
                    if f.aspect in _NO_LONGER_REQUIRED and name in after:
                        continue
                out.append(f)

    def _all_required(self, schema: dict[str, Any], parts: list[Any], doc: Document) -> set[str]:
        """The names a schema with `allOf` parts requires, its own and its parts'."""
        names = _required(schema)
        for part in parts:
            node = self._resolved(part, doc)
            if type(node) is dict:
                names |= _required(node)
        return names

    def _open_scalars(self, members: list[Any], doc: Document) -> dict[int, frozenset[str]]:
        """Index -> type set of the members that take any value of their scalar types (no
        enum, const, pattern, format or bound): empty when there is none."""
        found: dict[int, frozenset[str]] = {}
        for index, member in enumerate(members):
            node = _as_schema(self._resolved(member, doc))
            types = _types(node)[0]
            if (
                types
                and _is_scalar(node)
                and not (set(node) & ({"enum", "const"} | _ALL_SCALAR_KEYWORDS))
            ):
                found[index] = types
        return found

    def _match(
        self, pair: SchemaPair, bl: list[Any], rl: list[Any]
    ) -> tuple[list[tuple[int, int]], list[int], list[int]]:
        """Pair the members of two `oneOf`/`anyOf`/`allOf` lists: by reference, text and
        title first, then members left over on both sides by meaning (a member replaced by a
        reference to an identical schema, a schema renamed with its references following)."""
        matched, removed, added = _match_alternatives(bl, rl)
        if not removed or not added:
            return matched, removed, added
        for i in list(removed):
            for j in added:
                if self.equivalent(bl[i], pair.base_doc, rl[j], pair.revision_doc):
                    matched.append((i, j))
                    removed.remove(i)
                    added.remove(j)
                    break
        return matched, removed, added

    def equivalent(self, b: Any, bdoc: Document, r: Any, rdoc: Document) -> bool:
        """True when two schemas describe the same values (no finding between them)."""
        return not self._expand(self._diff(b, bdoc, r, rdoc))

    def _compare_switched(self, pair: SchemaPair, old: str, new: str, out: list[Finding]) -> None:
        """`anyOf` became `oneOf` or back. Over alternatives no value can match twice (their
        types or a required constant tag tell them apart) the two mean the same: only the
        members that changed are reported; otherwise the switch itself is a finding."""
        bl, rl = _list(pair.base.get(old)), _list(pair.revision.get(new))
        stems = {"oneOf": "one-of", "anyOf": "any-of"}
        if not self._disjoint(rl, pair.revision_doc):
            aspect = "any-of-became-one-of" if new == "oneOf" else "one-of-became-any-of"
            out.append(Finding(aspect, (), old, new))
        matched, removed, added = self._match(pair, bl, rl)
        for i in removed:
            label = _label(bl[i], i)
            out.append(Finding(f"{stems[old]}-removed", (), label, None, label))
        for j in added:
            label = _label(rl[j], j)
            out.append(Finding(f"{stems[new]}-added", (), None, label, label))
        for i, j in matched:
            self._descend(pair, bl[i], rl[j], out, new, str(j))

    def _disjoint(self, alternatives: list[Any], doc: Document) -> bool:
        """True when no value can match two of `alternatives`: their types do not overlap,
        or each requires one property with its own constant value."""
        resolved = [_as_schema(self._resolved(a, doc)) for a in alternatives]
        types = [_types(s)[0] for s in resolved]
        if all(t is not None for t in types):
            seen: set[str] = set()
            disjoint = True
            for t in types:
                assert t is not None
                widened = set(t) | ({"integer"} if "number" in t else set())
                widened |= {"number"} if "integer" in t else set()
                if seen & widened:
                    disjoint = False
                    break
                seen |= widened
            if disjoint:
                return True
        return _tagged(resolved)

    def _compare_discriminator(self, pair: SchemaPair, out: list[Finding]) -> None:
        b, r = pair.base, pair.revision
        bd, rd = _discriminator(b), _discriminator(r)
        if bd is None and rd is None:
            return
        if bd is None:
            out.append(Finding("discriminator-added", (), None, r.get("discriminator")))
        elif rd is None:
            out.append(Finding("discriminator-removed", (), b.get("discriminator"), None))
        else:
            if bd.get("propertyName") != rd.get("propertyName"):
                out.append(
                    Finding(
                        "discriminator-property-name-changed",
                        (),
                        bd.get("propertyName"),
                        rd.get("propertyName"),
                    )
                )
            self._compare_mapping(pair, _dict(bd.get("mapping")), _dict(rd.get("mapping")), out)
        self._compare_subtypes(pair, out)

    def _compare_mapping(
        self, pair: SchemaPair, bm: dict[str, Any], rm: dict[str, Any], out: list[Finding]
    ) -> None:
        removed = [k for k in bm if k not in rm]
        added = [k for k in rm if k not in bm]
        changed = [
            k
            for k in bm
            if k in rm
            and bm[k] != rm[k]
            and not self._same_target(pair, _mapping_ref(bm[k]), _mapping_ref(rm[k]))
        ]
        if added:
            out.append(Finding("discriminator-mapping-added", (), None, added, ", ".join(added)))
        if removed:
            out.append(
                Finding("discriminator-mapping-deleted", (), removed, None, ", ".join(removed))
            )
        if changed:
            out.append(Finding("discriminator-mapping-changed", (), None, None, ", ".join(changed)))

    def _same_target(self, pair: SchemaPair, bref: str, rref: str) -> bool:
        """True when a mapping target was renamed: the old schema is gone from the revision
        and the new one means the same."""
        try:
            pair.revision_doc.resolve(bref)
            return False  # the old target still exists: another schema was chosen
        except ContractParseError:
            pass
        try:
            return self.equivalent({"$ref": bref}, pair.base_doc, {"$ref": rref}, pair.revision_doc)
        except ContractParseError:
            return False

    def _compare_subtypes(self, pair: SchemaPair, out: list[Finding]) -> None:
        """Subtypes named only by a discriminator: the schemas whose `allOf` refers to this
        one (Swagger 2.0 polymorphism, or OpenAPI 3 without `oneOf`). They are values of
        this schema too, so they are compared by name, under `x-subtypes/<name>`."""
        b, r = pair.base, pair.revision
        if any(k in s for s in (b, r) for k in ("oneOf", "anyOf")):
            return
        bsubs = self._subtypes_of(b, pair.base_doc)
        rsubs = self._subtypes_of(r, pair.revision_doc)
        # A subtype renamed under the same discriminator value is the same subtype.
        renamed = _renamed_by_tag(b, r, set(bsubs) - set(rsubs), set(rsubs) - set(bsubs))
        for name in bsubs:
            if name not in rsubs and name not in renamed:
                out.append(Finding("subtype-removed", (), name, None, name))
        for name, rref in rsubs.items():
            if name in renamed.values():
                continue
            if name not in bsubs:
                out.append(Finding("subtype-added", (), None, name, name))
                continue
            bref = bsubs[name]
            self._descend(pair, {"$ref": bref}, {"$ref": rref}, out, "x-subtypes", name)
        for old, new in renamed.items():
            self._descend(pair, {"$ref": bsubs[old]}, {"$ref": rsubs[new]}, out, "x-subtypes", new)

    def _subtypes_of(self, schema: dict[str, Any], doc: Document) -> dict[str, str]:
        """Component name -> reference, for the components of `doc` whose `allOf` refers to
        `schema` (itself a component with a discriminator)."""
        if _discriminator(schema) is None:
            return {}
        names = self._names.get(id(doc.root))
        if names is None:
            names = self._names[id(doc.root)] = {
                id(node): ref for ref, node in _components(doc.root).items()
            }
        own = names.get(id(schema))
        if own is None:
            return {}
        index = self._subtypes.get(id(doc.root))
        if index is None:
            index = self._subtypes[id(doc.root)] = _subtype_index(doc.root)
        return {ref.rsplit("/", 1)[-1]: ref for ref in index.get(own, [])}

    def _compare_unread(self, b: dict[str, Any], r: dict[str, Any], out: list[Finding]) -> None:
        """Keywords no comparison reads (`dependencies`, `additionalItems`, a list under
        `items` ...): when their values differ, an unclassified finding with both values,
        never silence. Documentation and vendor extensions (`x-`) are left out."""
        if b.keys() == r.keys() and all(
            _same(b[k], r[k]) for k in b.keys() - _READ | ({"items"} & b.keys())
        ):
            return
        for key in sorted(set(b) | set(r)):
            listed = isinstance(b.get(key), list) or isinstance(r.get(key), list)
            if (key in _READ and not (key == "items" and listed)) or key.startswith("x-"):
                continue
            if key in _ANNOTATIONS or (key in b and key in r and _same(b[key], r[key])):
                continue
            before = {key: b[key]} if key in b else None
            after = {key: r[key]} if key in r else None
            out.append(Finding("unclassified-difference", (key,), before, after, key))


class UnchangedRefs:
    """Knows which component schemas are unchanged, including everything they refer to.

    A component is unchanged when its text is equal in both documents and every component it
    refers to (transitively) is unchanged too; computed once per pair of documents.
    """

    def __init__(self, base_root: Any, revision_root: Any) -> None:
        self._base = base_root
        self._revision = revision_root
        self._dirty: set[str] | None = None

    def is_unchanged(self, ref: str) -> bool:
        """Return True when the component at `ref` and its references did not change."""
        if not ref.startswith(("#/components/schemas/", "#/definitions/")):
            return False
        if self._dirty is None:
            self._dirty = self._compute_dirty()
        return ref not in self._dirty

    def _compute_dirty(self) -> set[str]:
        base = _components(self._base)
        revision = _components(self._revision)
        dirty: set[str] = set()
        referrers: dict[str, set[str]] = {}
        # A schema with a discriminator also stands for its subtypes (the components whose
        # `allOf` names it): a changed subtype changes what the parent allows.
        for root, components in ((self._base, base), (self._revision, revision)):
            for parent, children in _subtype_index(root).items():
                if _discriminator(_dict(components.get(parent))) is not None:
                    for child in children:
                        referrers.setdefault(child, set()).add(parent)
        for ref in base.keys() | revision.keys():
            if ref not in base or ref not in revision or base[ref] != revision[ref]:
                dirty.add(ref)
                continue
            text = json.dumps(revision[ref], default=str)
            if EXTERNAL_REF.search(text):
                dirty.add(ref)
                continue
            for target in set(_COMPONENT_REF.findall(text)):
                referrers.setdefault(target, set()).add(ref)
        # Everything that refers (transitively) to a changed component is changed too.
        stack = list(dirty)
        while stack:
            ref = stack.pop()
            for parent in referrers.get(ref, ()):
                if parent not in dirty:
                    dirty.add(parent)
                    stack.append(parent)
        return dirty

    def subtree_unchanged(self, base: Any, revision: Any) -> bool:
        """Return True when two subtrees are equal and everything they refer to is unchanged."""
        if base != revision:
            return False
        return self._refs_unchanged(revision, set())

    def _refs_unchanged(self, node: Any, seen: set[str]) -> bool:
        text = json.dumps(node, default=str)
        if EXTERNAL_REF.search(text):
            return False
        for ref in set(_LOCAL_REF.findall(text)):
            if ref in seen:
                continue
            seen.add(ref)
            if ref.startswith(("#/components/schemas/", "#/definitions/")):
                if not self.is_unchanged(ref):
                    return False
                continue
            try:
                old = resolve_pointer(self._base, ref)
                new = resolve_pointer(self._revision, ref)
            except KeyError:
                return False
            if old != new or not self._refs_unchanged(new, seen):
                return False
        return True


def parse_date(value: Any) -> dt.date | None:
    """An `x-sunset` value as a date (ISO 8601, time ignored), None when it is not one."""
    if value is None:
        return None
    if isinstance(value, dt.date):
        return value
    text = str(value).strip()
    try:
        return dt.date.fromisoformat(text[:10]) if len(text) >= 10 else None
    except ValueError:
        return None


# -- helpers -------------------------------------------------------------------------------


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# What an `allOf` part may hold for the parts to merge into one schema.
def conjunction(nodes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One schema that allows exactly what every schema of `nodes` allows (the first is the
    schema that held the `allOf`, the rest its parts), or None when that is not a simple
    merge. Properties are united (one defined in two parts is the `allOf` of both), required
    lists joined, type lists and enums intersected; other keywords must agree or be set once.
    `additionalProperties` false or a schema may sit in the one part that defines
    properties (elsewhere it would refuse the others' properties); `true` is no constraint.
    Annotations and extensions of the parts, and a part's `discriminator` (it speaks of the
    part's own subtypes), describe no value and are dropped. 3.0's `nullable` holds when the
    outer schema says so or every part with a type does."""
    first = nodes[0]
    out: dict[str, Any] = {
        k: v for k, v in first.items() if k in _ANNOTATIONS or k.startswith("x-")
    }
    properties: dict[str, Any] = {}
    required: list[str] = []
    closed: list[tuple[int, Any]] = []
    with_properties: set[int] = set()
    typed_nullable: list[bool] = []
    for i, node in enumerate(nodes):
        for key, value in node.items():
            if key in _ANNOTATIONS or key.startswith("x-") or key == "nullable":
                continue
            if key == "discriminator" and i > 0:
                continue
            if key == "type":
                types = _type_intersection(out.get("type"), value)
                if types is None:
                    return None
                out["type"] = types
            elif key == "properties" and isinstance(value, dict):
                if value:
                    with_properties.add(i)
                for name, sub in value.items():
                    if name in properties and not _same(properties[name], sub):
                        # Defined in two parts: a value must satisfy both definitions.
                        sub = {"allOf": [properties[name], sub]}
                    properties[name] = sub
            elif key == "required" and isinstance(value, list):
                required += [n for n in value if n not in required]
            elif key == "additionalProperties":
                if value is not True and value != {}:
                    closed.append((i, value))
            elif key == "enum" and isinstance(value, list) and isinstance(out.get("enum"), list):
                keys = {_key(v) for v in value}
                out["enum"] = [v for v in out["enum"] if _key(v) in keys]
            elif key in out and not _same(out[key], value):
                return None
            else:
                out[key] = value
        if "type" in node and i > 0:
            typed_nullable.append(node.get("nullable") is True)
    if closed:
        if len(closed) > 1 or with_properties - {closed[0][0]}:
            return None
        out["additionalProperties"] = closed[0][1]
    if first.get("nullable") is True or (typed_nullable and all(typed_nullable)):
        out["nullable"] = True
    if properties:
        out["properties"] = properties
    if required:
        out["required"] = required
    return out


def _type_intersection(a: Any, b: Any) -> Any:
    """The `type` both `a` and `b` allow (either may be absent, a name or a list), or None
    when they share none."""
    if a is None:
        return b
    names_a = set(a) if isinstance(a, list) else {a}
    names_b = set(b) if isinstance(b, list) else {b}
    both = names_a & names_b
    if "number" in names_a and "integer" in names_b or "number" in names_b and "integer" in names_a:
        both.add("integer")
    if not both:
        return None
    ordered = [t for t in (a if isinstance(a, list) else [a]) if t in both] + sorted(
        both - set(a if isinstance(a, list) else [a])
    )
    return ordered[0] if len(ordered) == 1 else ordered


def _all_of_shape(schema: dict[str, Any]) -> tuple[str | None, ...] | None:
    """The `allOf` parts by reference (None for an inline part); None without `allOf`."""
    parts = schema.get("allOf")
    if not isinstance(parts, list):
        return None
    return tuple(_ref_of(p) for p in parts)


def _switched(b: dict[str, Any], r: dict[str, Any]) -> tuple[str, str] | None:
    """(old, new) when a schema's `anyOf` became `oneOf` or the reverse, else None."""
    for old, new in (("anyOf", "oneOf"), ("oneOf", "anyOf")):
        if (
            isinstance(b.get(old), list)
            and new not in b
            and isinstance(r.get(new), list)
            and old not in r
        ):
            return old, new
    return None


def _tagged(alternatives: list[dict[str, Any]]) -> bool:
    """True when one property is required by every alternative with a distinct constant."""
    if len(alternatives) < 2:
        return True
    first = alternatives[0]
    for name in _required(first):
        values = []
        for alt in alternatives:
            sub = _dict(_dict(alt.get("properties")).get(name))
            enum = sub.get("enum")
            if name not in _required(alt):
                break
            if "const" in sub:
                values.append(_key(sub["const"]))
            elif isinstance(enum, list) and len(enum) == 1:
                values.append(_key(enum[0]))
            else:
                break
        else:
            if len(set(values)) == len(values):
                return True
    return False


def _divides(step: float, value: float) -> bool:
    """True when `value` is a whole multiple of `step` (both positive multipleOf values)."""
    if step <= 0 or value <= 0:
        return False
    ratio = value / step
    return abs(ratio - round(ratio)) < 1e-9


def _ref_of(node: Any) -> str | None:
    """A schema's reference: `$ref`, or a `$dynamicRef` resolved where it points in the same
    document (its dynamic scope is not followed: the static reading of 2020-12)."""
    if type(node) is dict:
        ref = node.get("$ref")
        if type(ref) is str:
            return ref
        ref = node.get("$dynamicRef")
        if type(ref) is str:
            return ref
    return None


def _subschema(node: Any) -> Any:
    """A subschema keyword's value, with "absent" and `true` (both allow anything) as `_ANY`."""
    return _ANY if node is None or node is True or node == {} else node


def _beyond_prefix(schema: dict[str, Any], index: int) -> Any:
    """What an array schema allows at a position past its `prefixItems`: nothing when
    `maxItems` ends the array before it, else its `items` (2020-12), else anything."""
    most = _number(schema.get("maxItems"))
    if most is not None and most <= index:
        return False
    items = schema.get("items")
    return _ANY if isinstance(items, list) else _subschema(items)


def _as_schema(node: Any) -> dict[str, Any]:
    if node is True or node is None:
        return {}
    if node is False:
        return {"not": {}}
    if isinstance(node, dict):
        return node
    return {}


def _types(schema: dict[str, Any]) -> tuple[frozenset[str] | None, bool]:
    raw = schema.get("type")
    nullable = bool(schema.get("nullable") or schema.get("x-nullable"))
    if raw is None:
        return None, nullable
    if isinstance(raw, str):
        names = [raw]
    elif isinstance(raw, list):
        names = [str(t) for t in raw if t is not None]
    else:
        # Not a JSON Schema type (`true`, `3`): a name of its own, so a change to or from it
        # is reported as a change of type instead of failing the whole diff.
        names = [repr(raw)]
    if "null" in names:
        nullable = True
        names = [n for n in names if n != "null"]
    if not names:
        return None, nullable
    return frozenset(names), nullable


def _json_type(value: Any) -> str:
    """The JSON Schema type of a JSON value."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "null"


def _type_meet(a: frozenset[str], b: frozenset[str]) -> frozenset[str]:
    """The types both `a` and `b` allow (an integer is a number)."""
    return frozenset(t for t in a | b if _accepts(a, t) and _accepts(b, t))


def type_change_aspect(
    before: frozenset[str],
    after: frozenset[str],
    accepts: Callable[[frozenset[str], str], bool],
    *,
    multi: bool,
    equivalent: str | None = None,
) -> str:
    """The aspect of a value's types changing from `before` to `after`: widened when the new
    types accept every old one (`accepts(types, t)`), narrowed when the old ones accept every
    new one, else changed; `multi` for lists of types. `equivalent` names the aspect when each
    side accepts the other (otherwise widened)."""
    widened = all(accepts(after, t) for t in before)
    narrowed = all(accepts(before, t) for t in after)
    if widened and narrowed and equivalent is not None:
        return equivalent
    if widened:
        return "list-of-types-widened" if multi else "type-generalized"
    if narrowed:
        return "list-of-types-narrowed" if multi else "type-specialized"
    return "type-changed"


def _accepts(types: frozenset[str], t: str) -> bool:
    return t in types or (t == "integer" and "number" in types)


def _structural(types: frozenset[str]) -> frozenset[str]:
    return frozenset(t for t in types if t in ("object", "array"))


def _type_text(types: frozenset[str] | None) -> str:
    if types is None:
        return "any"
    return "|".join(sorted(types))


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def _required(schema: dict[str, Any]) -> set[str]:
    req = schema.get("required")
    if isinstance(req, list):
        return {str(x) for x in req}
    return set()


def _key(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return json.dumps(value, sort_keys=True, default=str)


def _same(a: Any, b: Any) -> bool:
    return a == b and type(a) is type(b) or _key(a) == _key(b)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _label(node: Any, index: int) -> str:
    ref = _ref_of(node)
    if ref:
        return ref.rsplit("/", 1)[-1]
    if isinstance(node, dict) and node.get("title"):
        return str(node["title"])
    return f"#{index}"


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _match_alternatives(
    bl: list[Any], rl: list[Any]
) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """Pair oneOf/anyOf/allOf members: same `$ref`, then equal text, then same title/type."""
    pairs: list[tuple[int, int]] = []
    free_b = list(range(len(bl)))
    free_r = list(range(len(rl)))

    def take(match: Any) -> None:
        for i in list(free_b):
            for j in free_r:
                if match(bl[i], rl[j]):
                    pairs.append((i, j))
                    free_b.remove(i)
                    free_r.remove(j)
                    break

    take(lambda x, y: _ref_of(x) is not None and _ref_of(x) == _ref_of(y))
    take(lambda x, y: _ref_of(x) is None and _ref_of(y) is None and x == y)
    take(lambda x, y: _identity(x) is not None and _identity(x) == _identity(y))
    if len(free_b) == len(free_r):
        take(lambda x, y: _ref_of(x) is None and _ref_of(y) is None)
    return pairs, free_b, free_r


def _identity(node: Any) -> str | None:
    if not isinstance(node, dict) or _ref_of(node) is not None:
        return None
    if node.get("title"):
        return "title:" + str(node["title"])
    return None


def _wrapper(schema: dict[str, Any]) -> list[Any] | None:
    """Return the alternatives of a pure oneOf/anyOf wrapper, else None."""
    if "type" in schema or "properties" in schema or "$ref" in schema:
        return None
    for keyword in ("oneOf", "anyOf"):
        alts = schema.get(keyword)
        if isinstance(alts, list) and alts:
            return alts
    return None


def _is_plain(schema: dict[str, Any]) -> bool:
    return not any(k in schema for k in ("oneOf", "anyOf", "allOf")) and (
        "type" in schema or "properties" in schema
    )


_NUMERIC_FORMATS = frozenset({"int8", "int16", "int32", "int64", "float", "double", "decimal"})
# Keywords that constrain values of one JSON type; `format` applies to several.
_SCALAR_KEYWORDS: dict[str, frozenset[str]] = {
    "string": frozenset({"format", "maxLength", "minLength", "pattern"}),
    "number": frozenset(
        {"format", "maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "multipleOf"}
    ),
    "boolean": frozenset(),
}
_SCALAR_KEYWORDS["integer"] = _SCALAR_KEYWORDS["number"]
_ALL_SCALAR_KEYWORDS = frozenset().union(*_SCALAR_KEYWORDS.values())


def _is_scalar(schema: dict[str, Any]) -> bool:
    """A schema of scalar types with only constraints on their values (a type list's
    alternatives, when folded into one): `type`, `format`, bounds, `pattern`."""
    types = _types(schema)[0]
    return (
        types is not None
        and all(t in _SCALAR_KEYWORDS for t in types)
        and all(
            k in ("type", "nullable") or k in _ALL_SCALAR_KEYWORDS or k in _ANNOTATIONS
            for k in schema
        )
    )


def _for_types(schema: dict[str, Any], types: frozenset[str]) -> dict[str, Any]:
    """The constraints of a scalar schema that apply to values of `types`."""
    kept = frozenset().union(*(_SCALAR_KEYWORDS[t] for t in types))
    out = {k: v for k, v in schema.items() if k in kept}
    # A format names the type it checks (`int32` a number, `uuid` a string); on another type
    # of the list it checks nothing.
    numeric = out.get("format") in _NUMERIC_FORMATS
    if "format" in out and numeric != bool(types & {"number", "integer"}) and len(types) == 1:
        del out["format"]
    return out


def _is_annotation_only(node: Any) -> bool:
    return isinstance(node, dict) and bool(node) and all(k in _ANNOTATIONS for k in node)


# Keywords some comparison reads (the rest is reported as unclassified when it differs).
# Identity and container keywords (`$id`, `$defs` ...) hold no constraint of their own: what
# `$defs` holds is compared where a `$ref` reaches it.
_READ = frozenset(
    {
        "$ref",
        "type",
        "nullable",
        "format",
        "xml",
        "maximum",
        "minimum",
        "exclusiveMaximum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "maxItems",
        "minItems",
        "maxProperties",
        "minProperties",
        "maxContains",
        "minContains",
        "multipleOf",
        "uniqueItems",
        "pattern",
        "default",
        "const",
        "enum",
        "contentMediaType",
        "contentEncoding",
        "properties",
        "required",
        "additionalProperties",
        "readOnly",
        "writeOnly",
        "items",
        "prefixItems",
        "unevaluatedItems",
        "unevaluatedProperties",
        "contains",
        "propertyNames",
        "contentSchema",
        "if",
        "then",
        "else",
        "not",
        "patternProperties",
        "dependentSchemas",
        "dependentRequired",
        "oneOf",
        "anyOf",
        "allOf",
        "discriminator",
        "$id",
        "$schema",
        "$anchor",
        "$dynamicAnchor",
        "$defs",
        "definitions",
        "$vocabulary",
    }
)
_NUMERIC_BOUND_KEYWORDS = frozenset({"maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum"})
# Integer formats by the range of values they hold; float is a subset of double.
_INTEGER_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
}
_FLOAT_RANKS = {"float": 0, "double": 1}
# Formats a validator or generator knows (JSON Schema 2020-12's and the OpenAPI Format
# Registry's); any other `format` is an annotation that checks nothing (JSON Schema 2020-12,
# 7.2: unknown formats are ignored), so `datetime` -> `date-time` adds a check.
KNOWN_FORMATS = frozenset(
    {
        "date-time", "date", "time", "duration", "email", "idn-email", "hostname",
        "idn-hostname", "ipv4", "ipv6", "uri", "uri-reference", "iri", "iri-reference", "uuid",
        "uri-template", "json-pointer", "relative-json-pointer", "regex",
        "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float",
        "double", "decimal", "decimal128", "double-int", "byte", "binary", "base64url",
        "password", "char", "commonmark", "html", "http-date", "media-range", "unixtime",
    }
)  # fmt: skip


def _format_aspect(before: Any, after: Any) -> str:
    """`format-widened` when every value of the old format fits the new one (int32 -> int64,
    float -> double), `format-narrowed` for the reverse, else `format-changed`."""
    if before in _INTEGER_RANGES and after in _INTEGER_RANGES:
        (blo, bhi), (rlo, rhi) = _INTEGER_RANGES[before], _INTEGER_RANGES[after]
        if rlo <= blo and bhi <= rhi:
            return "format-widened"
        if blo <= rlo and rhi <= bhi:
            return "format-narrowed"
    if before in _FLOAT_RANKS and after in _FLOAT_RANKS:
        return "format-widened" if _FLOAT_RANKS[after] > _FLOAT_RANKS[before] else "format-narrowed"
    return "format-changed"


def _effective_bound(schema: dict[str, Any], upper: bool) -> tuple[float, bool] | None:
    """The tightest numeric bound of a schema as (value, exclusive), in either spelling:
    OpenAPI 3.0's `maximum` with a boolean `exclusiveMaximum`, or 3.1's numeric one."""
    inclusive = _number(schema.get("maximum" if upper else "minimum"))
    flag = schema.get("exclusiveMaximum" if upper else "exclusiveMinimum")
    exclusive = _number(flag)
    found: list[tuple[float, bool]] = []
    if inclusive is not None:
        found.append((inclusive, flag is True))
    if exclusive is not None:
        found.append((exclusive, True))
    if not found:
        return None
    if upper:
        return min(found, key=lambda b: (b[0], 0 if b[1] else 1))
    return max(found, key=lambda b: (b[0], 1 if b[1] else 0))


def _compare_numeric_bound(
    b: dict[str, Any], r: dict[str, Any], upper: bool, out: list[Finding]
) -> None:
    """`maximum`/`exclusiveMaximum` (or the minimums): each keyword on its own while both
    sides spell the bound alike, else the effective bounds (a boolean `exclusiveMaximum`
    set on `maximum: 20` tightens it; on a schema without `maximum` it does nothing)."""
    inc, exc = ("maximum", "exclusiveMaximum") if upper else ("minimum", "exclusiveMinimum")
    stem, xstem = ("max", "exclusive-max") if upper else ("min", "exclusive-min")
    bi, bx, ri, rx = b.get(inc), b.get(exc), r.get(inc), r.get(exc)
    if _same(bi, ri) and _same(bx, rx):
        return
    alike = (
        not any(isinstance(v, bool) for v in (bx, rx))
        and (bi is None) == (ri is None)
        and (bx is None) == (rx is None)
    )
    if alike:
        for keyword, kstem in ((inc, stem), (exc, xstem)):
            bv, rv = _number(b.get(keyword)), _number(r.get(keyword))
            if bv == rv:
                continue
            if bv is None:
                out.append(Finding(f"{kstem}-set", (), None, rv))
            elif rv is None:
                out.append(Finding(f"{kstem}-unset", (), bv, None))
            elif (rv < bv) == upper:
                out.append(Finding(f"{kstem}-{'decreased' if upper else 'increased'}", (), bv, rv))
            else:
                out.append(Finding(f"{kstem}-{'increased' if upper else 'decreased'}", (), bv, rv))
        return
    bb, rb = _effective_bound(b, upper), _effective_bound(r, upper)
    if bb == rb:
        if bb is None:  # a flag without the bound it qualifies: nothing changes
            out.append(Finding("keyword-no-effect", (), {exc: bx}, {exc: rx}, exc))
        return
    if bb is None:
        assert rb is not None
        out.append(Finding(f"{xstem if rb[1] else stem}-set", (), None, rb[0]))
        return
    if rb is None:
        out.append(Finding(f"{xstem if bb[1] else stem}-unset", (), bb[0], None))
        return
    kind = xstem if rb[1] else stem
    before, after = (
        (bb[0], rb[0]) if bb[1] == rb[1] else (_bound_text(bb, upper), _bound_text(rb, upper))
    )
    tighter = rb[0] < bb[0] if upper else rb[0] > bb[0]
    if rb[0] == bb[0]:
        tighter = rb[1] and not bb[1]
    if tighter:
        out.append(Finding(f"{kind}-{'decreased' if upper else 'increased'}", (), before, after))
    else:
        out.append(Finding(f"{kind}-{'increased' if upper else 'decreased'}", (), before, after))


# (lower keyword, upper keyword, what they count) for the size bounds.
_SIZES: tuple[tuple[str, str, str], ...] = (
    ("minLength", "maxLength", "length"),
    ("minItems", "maxItems", "item count"),
    ("minProperties", "maxProperties", "property count"),
)


def _certainly_refused(b: dict[str, Any], r: dict[str, Any], out: list[Finding]) -> None:
    """Where a constraint changed, whether it refuses old values for certain, not only
    possibly: `range-disjoint` when no value the old bounds allowed fits the new ones
    (`minimum: 1` -> `exclusiveMaximum: 1`), `known-value-refused` when a value the old
    schema names itself (an enum value, const, default or example that it accepted) fails a
    new bound or pattern. A new `maxLength: 255` alone refuses nothing certain (a warning)."""
    if not any(
        f.aspect.endswith(("-set", "-increased", "-decreased", "-changed", "-added")) for f in out
    ):
        return
    disjoint = _numeric_disjoint(b, r)
    for low, high, what in _SIZES:
        if disjoint:
            break
        bl, bh = _number(b.get(low)) or 0, _number(b.get(high))
        rl, rh = _number(r.get(low)) or 0, _number(r.get(high))
        if (bh is not None and bh < rl) or (rh is not None and rh < bl):
            disjoint = f"{what} {_span(bl, bh)} -> {_span(rl, rh)}"
    if disjoint:
        out.append(Finding("range-disjoint", (), None, disjoint))
        return
    for value in _named_values(b):
        reason = _refusal(r, value) if _refusal(b, value) is None else None
        if reason is not None:
            out.append(Finding("known-value-refused", (), value, reason))
            return


def _numeric_disjoint(b: dict[str, Any], r: dict[str, Any]) -> str | None:
    """A text of both ranges when no number the old bounds allow fits the new ones."""
    blo, bhi = _effective_bound(b, False), _effective_bound(b, True)
    rlo, rhi = _effective_bound(r, False), _effective_bound(r, True)

    def below(hi: tuple[float, bool] | None, lo: tuple[float, bool] | None) -> bool:
        if hi is None or lo is None:
            return False
        return hi[0] < lo[0] or (hi[0] == lo[0] and (hi[1] or lo[1]))

    if below(bhi, rlo) or below(rhi, blo):
        return f"{_range_text(blo, bhi)} -> {_range_text(rlo, rhi)}"
    return None


def _range_text(lo: tuple[float, bool] | None, hi: tuple[float, bool] | None) -> str:
    left = "(-inf" if lo is None else ("(" if lo[1] else "[") + f"{lo[0]:g}"
    right = "+inf)" if hi is None else f"{hi[0]:g}" + (")" if hi[1] else "]")
    return f"{left}, {right}"


def _span(low: float, high: float | None) -> str:
    return f"[{low:g}, {'+inf' if high is None else f'{high:g}'}]"


def _excluded(node: Any) -> list[Any] | None:
    """The values a `not` subschema lists (`{enum: [...]}` or `{const: x}`, a `type` beside
    them aside), or None when it excludes anything else."""
    if type(node) is not dict:
        return None
    keys = {k for k in node if k not in _ANNOTATIONS and not k.startswith("x-")}
    if keys == {"const"} or keys == {"const", "type"}:
        return [node["const"]]
    if (keys == {"enum"} or keys == {"enum", "type"}) and isinstance(node["enum"], list):
        return list(node["enum"])
    return None


def _named_values(schema: dict[str, Any]) -> list[Any]:
    """The values a schema names itself: enum values, const, default, example(s)."""
    values: list[Any] = list(_list(schema.get("enum")))
    for key in ("const", "default", "example"):
        if key in schema:
            values.append(schema[key])
    values += _list(schema.get("examples"))
    return values[:64]


def _refusal(schema: dict[str, Any], value: Any) -> str | None:
    """Why `schema`'s bounds or pattern refuse `value` (None when they do not, or when they
    say nothing about a value of its type)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        lo, hi = _effective_bound(schema, False), _effective_bound(schema, True)
        if lo is not None and (value < lo[0] or (value == lo[0] and lo[1])):
            return f"below the minimum {lo[0]:g}"
        if hi is not None and (value > hi[0] or (value == hi[0] and hi[1])):
            return f"above the maximum {hi[0]:g}"
        return None
    size = len(value) if isinstance(value, (str, list, dict)) else None
    keywords = {str: _SIZES[0], list: _SIZES[1], dict: _SIZES[2]}
    for kind, (low, high, what) in keywords.items():
        if isinstance(value, kind) and size is not None:
            lo, hi = _number(schema.get(low)), _number(schema.get(high))
            if lo is not None and size < lo:
                return f"{what} {size} below {lo:g}"
            if hi is not None and size > hi:
                return f"{what} {size} above {hi:g}"
    pattern = schema.get("pattern")
    if isinstance(value, str) and isinstance(pattern, str):
        try:
            if re.search(pattern, value) is None:
                return f"does not match the pattern {pattern}"
        except re.error:
            return None
    return None


def _bound_text(bound: tuple[float, bool], upper: bool) -> str:
    value, exclusive = bound
    sign = ("<" if exclusive else "<=") if upper else (">" if exclusive else ">=")
    return f"{sign} {json.dumps(value)}"


def _compare_multiple_of(b: dict[str, Any], r: dict[str, Any], out: list[Finding]) -> None:
    bm, rm = _number(b.get("multipleOf")), _number(r.get("multipleOf"))
    if bm == rm:
        return
    if bm is None:
        out.append(Finding("multiple-of-set", (), None, rm))
        return
    if rm is None:
        out.append(Finding("multiple-of-unset", (), bm, None))
        return
    bstep, rstep = bm, rm
    integers = frozenset({"integer"})
    if _types(b)[0] == integers and _types(r)[0] == integers:
        # Over integers only the step's numerator matters: multipleOf 0.01 and 0.1 (and 1)
        # both hold every integer.
        bstep, rstep = _integer_step(bm), _integer_step(rm)
        if bstep == rstep:
            out.append(
                Finding(
                    "keyword-no-effect", (), {"multipleOf": bm}, {"multipleOf": rm}, "multipleOf"
                )
            )
            return
    if _divides(rstep, bstep):
        # every old multiple is a new one: more values are valid
        out.append(Finding("multiple-of-generalized", (), bm, rm))
    elif _divides(bstep, rstep):
        out.append(Finding("multiple-of-specialized", (), bm, rm))
    else:
        out.append(Finding("multiple-of-changed", (), bm, rm))


def _integer_step(step: float) -> float:
    """The step of the integers that are multiples of `step` (the numerator of the fraction)."""
    if step <= 0:
        return step
    try:
        return Fraction(repr(step)).numerator
    except ValueError:
        return step


def _value_set(schema: dict[str, Any]) -> list[Any] | None:
    """The values a schema allows by `const` or `enum`, None when it names none."""
    if "const" in schema:
        return [schema["const"]]
    enum = schema.get("enum")
    return enum if isinstance(enum, list) else None


def _discriminator(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The discriminator as an object (Swagger 2.0 writes only the property name)."""
    found = schema.get("discriminator")
    if isinstance(found, dict):
        return found
    if isinstance(found, str):
        return {"propertyName": found}
    return None


def _mapping_ref(value: Any) -> str:
    """A discriminator mapping value as a reference (a bare name means a component schema)."""
    text = str(value)
    return text if "/" in text or text.startswith("#") else f"#/components/schemas/{text}"


def _components(root: Any) -> dict[str, Any]:
    """Reference -> schema for the component schemas (and Swagger 2.0 definitions)."""
    found: dict[str, Any] = {}
    if not isinstance(root, dict):
        return found
    components = root.get("components")
    schemas = components.get("schemas") if isinstance(components, dict) else None
    if isinstance(schemas, dict):
        for name, node in schemas.items():
            found["#/components/schemas/" + _escape(str(name))] = node
    definitions = root.get("definitions")
    if isinstance(definitions, dict):
        for name, node in definitions.items():
            found["#/definitions/" + _escape(str(name))] = node
    return found


def _all_of_members(doc: Document) -> set[int]:
    """The ids of every schema that is an `allOf` member in `doc` (references followed)."""
    found: set[int] = set()
    stack: list[Any] = [doc.root]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            members = node.get("allOf")
            if isinstance(members, list):
                for member in members:
                    found.add(id(member))
                    ref = _ref_of(member)
                    if ref is not None and ref.startswith("#"):
                        try:
                            found.add(id(resolve_pointer(doc.root, ref)))
                        except (KeyError, IndexError, ValueError, TypeError, ContractParseError):
                            pass
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def _renamed_by_tag(
    b: dict[str, Any], r: dict[str, Any], gone: set[str], new: set[str]
) -> dict[str, str]:
    """Old subtype name -> new name, for subtypes that left and came under the same
    discriminator value (the mapping of each side names them)."""
    if not gone or not new:
        return {}
    bmap = _dict(_dict(b.get("discriminator")).get("mapping"))
    rmap = _dict(_dict(r.get("discriminator")).get("mapping"))
    out: dict[str, str] = {}
    for tag, bref in bmap.items():
        old = _mapping_ref(bref).rsplit("/", 1)[-1]
        now = _mapping_ref(rmap.get(tag, "")).rsplit("/", 1)[-1] if tag in rmap else ""
        if old in gone and now in new and now not in out.values():
            out[old] = now
    return out


def _subtype_index(root: Any) -> dict[str, list[str]]:
    """Parent reference -> the component references whose `allOf` names it."""
    index: dict[str, list[str]] = {}
    for ref, node in _components(root).items():
        if not isinstance(node, dict):
            continue
        for member in _list(node.get("allOf")):
            parent = _ref_of(member)
            if parent is not None and parent.startswith("#/"):
                index.setdefault(parent, []).append(ref)
    return index


def _with_siblings(node: Any) -> Any:
    """A `$ref` with constraints beside it (OpenAPI 3.1, JSON Schema 2019+) is the
    conjunction of both: written as a one-member `allOf` so that the siblings are compared."""
    if type(node) is not dict or len(node) == 1 or type(node.get("$ref")) is not str:
        return node
    siblings = {k: v for k, v in node.items() if k != "$ref"}
    if all(k in _ANNOTATIONS or k.startswith("x-") for k in siblings):
        return node
    return {"allOf": [{"$ref": node["$ref"]}], **siblings}


def legacy_items(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI 3.0 and Swagger 2.0 allow `items` only as one schema, for arrays; a list of
    schemas under `items` in a schema that is not an array is how some vendors (Slack) wrote
    a union, and is read as `anyOf` of those schemas."""
    items = schema.get("items")
    if not isinstance(items, list) or not items or schema.get("type") == "array":
        return schema
    if "anyOf" in schema or "oneOf" in schema:
        return schema
    return {**{k: v for k, v in schema.items() if k != "items"}, "anyOf": items}


def _bare_ref(node: Any) -> Any:
    """A Reference Object of OpenAPI 3.0 / Swagger 2.0: the `$ref` alone (its siblings are
    ignored by the specification, so they change nothing a client sees)."""
    if type(node) is not dict or len(node) == 1 or type(node.get("$ref")) is not str:
        return node
    return {"$ref": node["$ref"]}


# Keys a member of a `oneOf`/`anyOf` of constants may hold beside its `const`.
_CONST_MEMBER_KEYS = _ANNOTATIONS | {"type", "const"}


def normal_form(schema: dict[str, Any]) -> tuple[Any, bool | None]:
    """One spelling for schemas that describe the same set of values, as (schema, null).

    `null` is whether the schema's own null spelling admits null (3.0 `nullable`, Swagger's
    `x-nullable`, 3.1 `type: [.., 'null']`, a `{type: 'null'}` member of `oneOf`/`anyOf`),
    None when it has none; the schema comes back without that spelling. A `oneOf`/`anyOf`
    whose members are all constants is the `enum` of those values, and a `oneOf`/`anyOf` of
    one member is that member (an `allOf` of it beside other keywords).
    """
    null: bool | None = None
    core = schema
    for key in ("nullable", "x-nullable"):
        if key in core:
            core = {k: v for k, v in core.items() if k != key}
            null = bool(schema[key]) or bool(null)
    raw = core.get("type")
    if isinstance(raw, list) and "null" in raw and len(raw) > 1:
        names = [t for t in raw if t != "null"]
        core = {**core, "type": names[0] if len(names) == 1 else names}
        null = True
    for keyword in ("oneOf", "anyOf"):
        members = core.get(keyword)
        if not isinstance(members, list) or not members:
            continue
        rest = [m for m in members if not _is_null_schema(m)]
        if rest and len(rest) < len(members):
            core = {**core, keyword: rest}
            null = True
        core = _const_enum(core, keyword) or core
        break
    return core, null


def _is_null_schema(node: Any) -> bool:
    """A schema that allows only null (`{type: 'null'}`, `{const: null}`, `{enum: [null]}`)."""
    if type(node) is not dict:
        return False
    keys = {k: v for k, v in node.items() if k not in _ANNOTATIONS and not k.startswith("x-")}
    if not keys:
        return False
    allowed = {"type": ("null", ["null"]), "const": (None,), "enum": ([None],)}
    return all(k in allowed and v in allowed[k] for k, v in keys.items())


def _const_enum(schema: dict[str, Any], keyword: str) -> dict[str, Any] | None:
    """A `oneOf`/`anyOf` of inline constants (with titles, descriptions) as an `enum`."""
    members = schema[keyword]
    if "enum" in schema or "const" in schema or "discriminator" in schema:
        return None
    if not all(
        type(m) is dict and "const" in m and all(k in _CONST_MEMBER_KEYS for k in m)
        for m in members
    ):
        return None
    types = {_key(m["type"]) for m in members if "type" in m}
    out = {k: v for k, v in schema.items() if k != keyword}
    if "type" not in out and len(types) == 1 and all("type" in m for m in members):
        out["type"] = members[0]["type"]
    out["enum"] = [m["const"] for m in members]
    return out


def _alternatives(schema: dict[str, Any]) -> str | None:
    """The keyword (`oneOf` or `anyOf`) holding a schema's alternatives, else None."""
    for keyword in ("oneOf", "anyOf"):
        if isinstance(schema.get(keyword), list):
            return keyword
    return None


def _sole_member(schema: dict[str, Any]) -> Any:
    """A `oneOf`/`anyOf` of one member is that member (an `allOf` of it beside keywords);
    None for any other schema."""
    keyword = _alternatives(schema)
    members = schema.get(keyword) if keyword else None
    if keyword is None or not isinstance(members, list) or len(members) != 1:
        return None
    if "discriminator" in schema or ("oneOf" in schema and "anyOf" in schema):
        return None
    others = {k: v for k, v in schema.items() if k != keyword}
    if all(k in _ANNOTATIONS or k.startswith("x-") for k in others):
        return members[0]
    if "allOf" in others:
        return None
    return {**others, "allOf": members}
