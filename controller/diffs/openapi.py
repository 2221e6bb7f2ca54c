"""OpenAPI diff: Swagger 2.0, OpenAPI 3.0 and 3.1 documents, compared operation by operation.

Operations are matched by method and a normalised path template (`/users/{id}` and
`/users/{userId}` are the same operation); path parameters are matched by position.
Swagger 2.0 operations are first viewed in the 3.x shape (request body and media types from
`consumes`/`produces`). Schemas are compared by `controller.diffs.jsonschema` in the right
direction: request bodies and parameters as requests, responses and headers as responses.
Every change carries `location.operation` (`GET /v1/charges`).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, replace
from typing import Any

from controller.diffs.core import (
    Causes,
    changes_from_findings,
    compare_keys,
    escape_pointer,
    make_change,
    with_causes,
)
from controller.diffs.jsonschema import (
    EXTERNAL_REF,
    STABILITY_LEVELS,
    Finding,
    SchemaDiffer,
    UnchangedRefs,
    parse_date,
    type_change_aspect,
)
from controller.diffs.loader import check_openapi
from controller.diffs.refs import Document, DocumentStore, Resolver
from controller.diffs.rules import CATALOG, Direction
from controller.diffs.unclassified import (
    DOCUMENTATION,
    first_difference,
    unwatched_differences,
    values_at,
)
from controller.model.change import Change, Location, Severity

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
UNSTABLE_LEVELS = ("draft", "alpha")
_PARAM_RE = re.compile(r"\{[^}/]*\}")

_SWAGGER_SCHEMA_KEYS = (
    "type",
    "format",
    "items",
    "enum",
    "default",
    "maximum",
    "minimum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "x-nullable",
)


# What the rules read of each OpenAPI object (documentation and `x-` extensions aside); any
# other key that differs is an `unclassified-difference`.
_OPERATION_READ = frozenset(
    {
        "operationId",
        "deprecated",
        "security",
        "parameters",
        "requestBody",
        "responses",
        "callbacks",
        "consumes",
        "produces",
        "servers",
    }
)
_PARAMETER_READ = frozenset(
    {
        "name",
        "in",
        "required",
        "deprecated",
        "style",
        "explode",
        "schema",
        "content",
        "allowEmptyValue",
        "collectionFormat",
        *_SWAGGER_SCHEMA_KEYS,
    }
)
_HEADER_READ = frozenset(
    {"required", "deprecated", "style", "explode", "schema", "content", "collectionFormat"}
    | set(_SWAGGER_SCHEMA_KEYS)
)
_REQUEST_BODY_READ = frozenset({"required", "content"})
_RESPONSE_READ = frozenset({"headers", "content", "links", "schema"})
_MEDIA_READ = frozenset({"schema", "itemSchema", "encoding"})
_SCHEME_READ = frozenset(
    {
        "type",
        "scheme",
        "in",
        "name",
        "flows",
        "openIdConnectUrl",
        "flow",
        "authorizationUrl",
        "tokenUrl",
        "refreshUrl",
        "scopes",
    }
)
# Where a parameter is sent -> its default style (OpenAPI 3).
_DEFAULT_STYLE = {"query": "form", "cookie": "form", "path": "simple", "header": "simple"}


@dataclass(frozen=True, slots=True)
class OperationPair:
    """One operation in both documents: its path as written, the operation and its path item
    on each side, where changes are reported (the revision's `METHOD /path`) and the JSON
    pointer of the revision's operation. What each step comparing operations takes."""

    base_path: str
    base: dict[str, Any]
    base_item: dict[str, Any]
    rev_path: str
    revision: dict[str, Any]
    rev_item: dict[str, Any]
    location: Location
    pointer: str


@dataclass(frozen=True)
class DiffOptions:
    """Settings of an OpenAPI diff. `today` enables sunset-date checks (the engine has no clock)."""

    today: dt.date | None = None
    # Minimum announced grace period, in days, before a deprecated operation or parameter
    # may go away; when set, deprecating without an `x-sunset` date is reported.
    sunset_days_stable: int = 0
    sunset_days_beta: int = 0
    # Property stability changes are reported from this level up (`x-stability-level`).
    stability_threshold: str = "draft"
    # One change per cause with the operations it affects (`controller.diffs.grouping`),
    # built without materialising every per-operation change.
    grouped: bool = False
    # Breaking changes under an unchanged, lower or same-major `info.version` are reported
    # (`api-version-*`); off by default, as in the field's reference checker.
    check_version: bool = False

    def sunset_days(self, stability: Any) -> int:
        """Return the grace period that applies to an operation of this stability level."""
        return self.sunset_days_beta if stability == "beta" else self.sunset_days_stable


def diff_openapi(
    base: Any,
    revision: Any,
    *,
    resolver: Resolver | None = None,
    base_uri: str = "",
    revision_uri: str = "",
    options: DiffOptions | None = None,
) -> list[Change]:
    """Return the classified changes from one OpenAPI document to another.

    `resolver(uri)` returns the parsed document for a relative-file or URL `$ref`; without it
    such references raise `ContractParseError`.
    """
    # load_document already checked references; here only the kind and version.
    check_openapi(base, check_refs=False)
    check_openapi(revision, check_refs=False)
    if base == revision and not EXTERNAL_REF.search(json.dumps(base, default=str)):
        return []  # equal, and nothing outside the documents could differ
    return _OpenAPIDiff(base, revision, resolver, base_uri, revision_uri, options).run()


class _OpenAPIDiff:
    def __init__(
        self,
        base: dict[str, Any],
        revision: dict[str, Any],
        resolver: Resolver | None,
        base_uri: str,
        revision_uri: str,
        options: DiffOptions | None,
    ) -> None:
        store = DocumentStore(resolver)
        self.base = Document(base, base_uri, store)
        self.rev = Document(revision, revision_uri, store)
        self.options = options or DiffOptions()
        unchanged = UnchangedRefs(base, revision)
        self.unchanged = unchanged
        self.request = self._new_differ(Direction.REQUEST, self.base, self.rev)
        self.response = self._new_differ(Direction.RESPONSE, self.base, self.rev)
        self.changes: list[Change] = []
        self.causes: Causes | None = {} if self.options.grouped else None
        self._renames: dict[str, str] | None = None

    def run(self) -> list[Change]:
        base_ops = _operations(self.base.root)
        rev_ops = _operations(self.rev.root)
        for presence, key in compare_keys(base_ops, rev_ops):
            if presence == "added":
                loc, pointer = _operation_place(*rev_ops[key][:2])
                self._add("endpoint-added", pointer, loc, loc.operation or "")
                continue
            raw_path, method, op, item = base_ops[key]
            if presence == "removed":
                self._operation_removed(op, *_operation_place(raw_path, method))
                continue
            rev_path, _, rop, ritem = rev_ops[key]
            if (
                op == rop
                and item == ritem
                and self.unchanged.subtree_unchanged(op, rop)
                and (self.unchanged.subtree_unchanged(item, ritem))
            ):
                if _security(self.base.root, op) == _security(self.rev.root, rop):
                    continue
            self._operation(
                OperationPair(
                    raw_path, op, item, rev_path, rop, ritem, *_operation_place(rev_path, method)
                )
            )
        self._servers()
        self._security_schemes()
        self._webhooks()
        self._version()
        # Never silent about a difference: callbacks, links and webhooks have no rules yet,
        # and when nothing else was reported, the first substantive difference anywhere.
        unwatched = unwatched_differences(self.base.root, self.rev.root)
        if not self.changes and not unwatched:
            unwatched = (
                [where] if (where := first_difference(self.base.root, self.rev.root)) else []
            )
        for where in unwatched:
            before, after = values_at(self.base.root, self.rev.root, where)
            self.changes.append(
                make_change(
                    "unclassified-difference", where, name=where, before=before, after=after
                )
            )
        return self.changes if self.causes is None else with_causes(self.changes, self.causes)

    # -- operations -------------------------------------------------------------------------

    def _operation_removed(self, op: dict[str, Any], loc: Location, ptr: str) -> None:
        rule = "endpoint-removed"
        if op.get("x-stability-level") in UNSTABLE_LEVELS:
            rule = "endpoint-removed-unstable"
        sunset = op.get("x-sunset")
        if op.get("deprecated"):
            rule = "endpoint-removed-deprecated"
            day = parse_date(sunset)
            today = self.options.today
            if day is not None and today is not None and day > today:
                rule = "endpoint-removed-before-sunset"
        self._add(rule, ptr, loc, loc.operation or "", before=sunset)

    def _operation(self, pair: OperationPair) -> None:
        op, rop, loc, ptr = pair.base, pair.revision, pair.location, pair.pointer
        name = loc.operation or ""
        self._lifecycle(op, rop, name, loc, ptr)
        if (
            op.get("x-stability-level") in UNSTABLE_LEVELS
            and rop.get("x-stability-level") in UNSTABLE_LEVELS
        ):
            # The vendor promises nothing for draft/alpha operations: one info change.
            start = len(self.changes)
            self._operation_body(pair)
            found = self.changes[start:]
            del self.changes[start:]
            if found:
                self._add(
                    "endpoint-unstable-changed",
                    ptr,
                    loc,
                    name,
                    after=sorted({c.rule for c in found}),
                    detail=str(len(found)),
                )
            return
        self._operation_body(pair)

    def _operation_body(self, pair: OperationPair) -> None:
        op, rop, loc, ptr = pair.base, pair.revision, pair.location, pair.pointer
        name = loc.operation or ""
        if op.get("operationId") != rop.get("operationId") and op.get("operationId"):
            self.changes.append(
                make_change(
                    "endpoint-operation-id-changed",
                    ptr + "/operationId",
                    location=loc,
                    name=name,
                    before=op.get("operationId"),
                    after=rop.get("operationId"),
                )
            )
        self._security_changes(op, rop, loc, ptr, pair)
        self._operation_servers(pair)
        self._unread(op, rop, _OPERATION_READ, ptr, loc)
        self._parameters(pair)
        self._request_body(op, rop, loc, ptr)
        self._responses(op, rop, loc, ptr)

    def _lifecycle(
        self, op: dict[str, Any], rop: dict[str, Any], name: str, loc: Location, ptr: str
    ) -> None:
        was, now = bool(op.get("deprecated")), bool(rop.get("deprecated"))
        bsun, rsun = op.get("x-sunset"), rop.get("x-sunset")
        if not was and now:
            if rsun is not None and parse_date(rsun) is None:
                self._add("endpoint-sunset-invalid", ptr, loc, name, after=rsun)
            rule = "endpoint-deprecated-with-sunset" if rsun is not None else "endpoint-deprecated"
            stability = rop.get("x-stability-level")
            if (
                rsun is None
                and self.options.sunset_days(stability) > 0
                and stability
                not in (
                    "draft",
                    "alpha",
                )
            ):
                self._add("endpoint-sunset-missing", ptr, loc, name)
            self._add(rule, ptr + "/deprecated", loc, name, after=rsun)
        elif was and not now:
            self._add("endpoint-reactivated", ptr + "/deprecated", loc, name)
        elif was and now and bsun != rsun:
            bday, rday = parse_date(bsun), parse_date(rsun)
            if bsun is not None and rsun is None:
                self._add("endpoint-sunset-deleted", ptr + "/x-sunset", loc, name, before=bsun)
            elif (bsun is not None and bday is None) or (rsun is not None and rday is None):
                self._add("endpoint-sunset-invalid", ptr + "/x-sunset", loc, name, after=rsun)
            elif bday is not None and rday is not None and rday < bday:
                self._add("endpoint-sunset-moved-earlier", ptr + "/x-sunset", loc, name, bsun, rsun)
        bst, rst = op.get("x-stability-level"), rop.get("x-stability-level")
        for value in (bst, rst):
            if value is not None and value not in STABILITY_LEVELS:
                self._add("endpoint-stability-invalid", ptr, loc, name, after=value)
                return
        if bst != rst and bst is not None:
            rank_b = STABILITY_LEVELS.index(bst)
            rank_r = STABILITY_LEVELS.index(rst or "stable")
            if rank_r < rank_b:
                self._add("endpoint-stability-decreased", ptr, loc, name, bst, rst)
            elif rank_r > rank_b:
                self._add("endpoint-stability-increased", ptr, loc, name, bst, rst)

    def _add(
        self,
        rule: str,
        ptr: str,
        loc: Location,
        name: str,
        before: Any = None,
        after: Any = None,
        detail: str | None = None,
    ) -> None:
        self.changes.append(
            make_change(
                rule, ptr, location=loc, name=name, before=before, after=after, detail=detail
            )
        )

    def _unread(
        self,
        base: dict[str, Any],
        revision: dict[str, Any],
        read: frozenset[str],
        ptr: str,
        loc: Location,
    ) -> None:
        """Keys of an object that no rule reads: when their values differ, an
        `unclassified-difference` with both values, never silence. Documentation and vendor
        extensions (`x-`) are left out: they do not reach the wire."""
        for key in sorted(set(base) | set(revision), key=str):
            text = str(key)
            if key in read or text in DOCUMENTATION or text.startswith("x-"):
                continue
            if key in base and key in revision and base[key] == revision[key]:
                continue
            where = f"{ptr}/{escape_pointer(text)}"
            self._add(
                "unclassified-difference",
                where,
                loc,
                where,
                base.get(key),
                revision.get(key),
            )

    def _version(self) -> None:
        """Breaking changes under a version number that did not move up (or not enough)."""
        if not self.options.check_version or not any(
            c.severity is Severity.BREAKING for c in self.changes
        ):
            return
        bver = str(_dict(self.base.root.get("info")).get("version", ""))
        rver = str(_dict(self.rev.root.get("info")).get("version", ""))
        if not bver or not rver:
            return
        bnum, rnum = _version_numbers(bver), _version_numbers(rver)
        if bver == rver:
            self._add("api-version-not-bumped", "/info/version", Location(), rver, bver, rver)
        elif bnum and rnum and rnum < bnum:
            self._add("api-version-decreased", "/info/version", Location(), rver, bver, rver)
        elif len(bnum) >= 2 and len(rnum) >= 2 and rnum[0] == bnum[0]:
            self._add("api-major-version-not-bumped", "/info/version", Location(), rver, bver, rver)

    # -- security and servers ---------------------------------------------------------------

    def _security_changes(
        self,
        op: dict[str, Any],
        rop: dict[str, Any],
        loc: Location,
        ptr: str,
        pair: OperationPair | None = None,
    ) -> None:
        """The effective security requirements (operation level, else global) compared as
        what they are: alternatives (a client satisfies one), each a set of schemes that
        must all be satisfied with their scopes. A scheme renamed with its definition
        unchanged (the old name gone) is the same scheme."""
        before = _alternatives(self.base.root, op)
        after = _alternatives(self.rev.root, rop)
        if before == after:
            return
        bids, rids = self._scheme_names()
        old = [_requirement(r, bids) for r in before]
        new = [_requirement(r, rids) for r in after]
        every = list(new)
        for req in list(old):
            if req in new:
                old.remove(req)
                new.remove(req)
        if not old and not new:
            return
        name = loc.operation or ""
        where = ptr + "/security"
        anonymous_lost = any(not req for req in old)
        for req in [r for r in old if r]:
            same = next((n for n in new if n and n.keys() == req.keys()), None)
            if same is not None:
                new.remove(same)
                for identity in sorted(req):
                    scheme = req[identity][0]
                    for scope in sorted(set(same[identity][1]) - set(req[identity][1])):
                        self._add("security-scope-added", where, loc, scheme, None, scope)
                    for scope in sorted(set(req[identity][1]) - set(same[identity][1])):
                        self._add("security-scope-removed", where, loc, scheme, scope, None)
                continue
            cover = next((n for n in every if _covers(n, req)), None)
            if cover is None:
                self._add("security-alternative-removed", where, loc, name, _req_text(req), None)
                continue
            if not cover and cover in new:
                continue  # no credentials needed now: `security-requirement-removed` below
            if cover in new:
                new.remove(cover)
            self._add(
                "security-requirement-relaxed", where, loc, name, _req_text(req), _req_text(cover)
            )
        if anonymous_lost:
            # Calls without credentials were accepted and are not any more, unless the
            # operation required the credential already, as a parameter of the same name and
            # place (`Authorization` header -> an apiKey scheme on that header).
            declared = pair is not None and self._sent_already(pair, [n for n in new if n])
            self._add(
                "security-requirement-declared" if declared else "security-requirement-added",
                where,
                loc,
                name,
                None,
                " or ".join(_req_text(n) for n in new if n) or None,
            )
            return
        for req in new:
            if not req:
                self._add("security-requirement-removed", where, loc, name, "credentials", None)
            else:
                self._add("security-alternative-added", where, loc, name, None, _req_text(req))

    def _servers(self) -> None:
        bs = {str(s.get("url")) for s in self.base.root.get("servers") or [] if isinstance(s, dict)}
        rs = {str(s.get("url")) for s in self.rev.root.get("servers") or [] if isinstance(s, dict)}
        if "swagger" in self.base.root:
            bs = {_swagger_server(self.base.root)} - {""}
            rs = {_swagger_server(self.rev.root)} - {""}
        for url in sorted(bs - rs):
            self.changes.append(make_change("server-removed", "/servers", before=url))
        for url in sorted(rs - bs):
            self.changes.append(make_change("server-added", "/servers", after=url))

    def _operation_servers(self, pair: OperationPair) -> None:
        """The base URLs an operation is called at, where it or its path overrides the
        document's `servers` on either side (the document's own are `_servers`')."""
        overrides = [
            node
            for node in (pair.base, pair.revision, pair.base_item, pair.rev_item)
            if isinstance(node.get("servers"), list)
        ]
        if not overrides:
            return
        bs = _server_urls(pair.base, pair.base_item, self.base.root)
        rs = _server_urls(pair.revision, pair.rev_item, self.rev.root)
        own = "servers" in pair.base or "servers" in pair.revision
        where = pair.pointer + "/servers" if own else pair.pointer.rsplit("/", 1)[0] + "/servers"
        name = pair.location.operation or ""
        for url in sorted(bs - rs):
            self._add("endpoint-server-removed", where, pair.location, name, before=url)
        for url in sorted(rs - bs):
            self._add("endpoint-server-added", where, pair.location, name, after=url)

    def _webhooks(self) -> None:
        """OpenAPI 3.1 `webhooks`: the events the vendor sends to its consumers."""
        base, revision = _dict(self.base.root.get("webhooks")), _dict(self.rev.root.get("webhooks"))
        for name in sorted(set(base) ^ set(revision), key=str):
            rule = "webhook-removed" if name in base else "webhook-added"
            pointer = f"/webhooks/{escape_pointer(str(name))}"
            self.changes.append(make_change(rule, pointer, name=str(name)))

    def _security_schemes(self) -> None:
        """`components.securitySchemes`: how credentials are obtained and sent."""
        base, revision = _schemes(self.base.root), _schemes(self.rev.root)
        for name in sorted(set(base) - set(revision)):
            self._scheme("security-scheme-removed", name, name)
        for name in sorted(set(revision) - set(base)):
            self._scheme("security-scheme-added", name, name)
        for name in sorted(set(base) & set(revision)):
            b, r = base[name], revision[name]
            how = ("type", "scheme", "in", "name")
            if tuple(b.get(k) for k in how) != tuple(r.get(k) for k in how):
                before = "/".join(str(b.get(k)) for k in how if b.get(k) is not None)
                after = "/".join(str(r.get(k)) for k in how if r.get(k) is not None)
                self._scheme("security-scheme-type-changed", name, name, before, after)
                continue
            if b.get("openIdConnectUrl") != r.get("openIdConnectUrl"):
                self._scheme(
                    "security-scheme-openid-connect-url-changed",
                    name,
                    name,
                    b.get("openIdConnectUrl"),
                    r.get("openIdConnectUrl"),
                )
            self._oauth_flows(name, _flows(b), _flows(r))
            self._unread_scheme(name, b, r)

    def _sent_already(self, pair: OperationPair, requirements: list[Requirement]) -> bool:
        """True when some new requirement uses only apiKey schemes whose header, query or
        cookie parameter the old operation required: clients sent that credential anyway."""
        params = self._collect_params(self.base, pair.base_path, pair.base_item, pair.base)
        required = {
            (str(p.get("in")).lower(), str(p.get("name")).lower())
            for p, _ in params.values()
            if p.get("required")
        }
        schemes = _dict(
            _dict(self.rev.root.get("components")).get("securitySchemes")
            if "swagger" not in self.rev.root
            else self.rev.root.get("securityDefinitions")
        )
        for requirement in requirements:
            places = []
            for _, (scheme_name, _) in requirement.items():
                scheme = _dict(schemes.get(scheme_name))
                if scheme.get("type") != "apiKey":
                    break
                places.append((str(scheme.get("in")).lower(), str(scheme.get("name")).lower()))
            else:
                if places and all(place in required for place in places):
                    return True
        return False

    def _scheme_names(self) -> tuple[dict[str, str], dict[str, str]]:
        """How requirements name schemes on each side: by name, a renamed scheme by its new
        name (computed once per diff)."""
        if self._renames is None:
            self._renames = _renamed_schemes(self.base.root, self.rev.root)
        return self._renames, {}

    def _unread_scheme(self, name: str, b: dict[str, Any], r: dict[str, Any]) -> None:
        pointer = f"/components/securitySchemes/{escape_pointer(name)}"
        if "swagger" in self.rev.root:
            pointer = f"/securityDefinitions/{escape_pointer(name)}"
        self._unread(b, r, _SCHEME_READ, pointer, Location())

    def _oauth_flows(self, name: str, base: dict[str, Any], revision: dict[str, Any]) -> None:
        for flow in sorted(set(base) - set(revision)):
            self._scheme("security-scheme-oauth-flow-removed", name, f"{name} ({flow})", flow)
        for flow in sorted(set(revision) - set(base)):
            self._scheme("security-scheme-oauth-flow-added", name, f"{name} ({flow})", None, flow)
        for flow in sorted(set(base) & set(revision)):
            bf, rf = _dict(base[flow]), _dict(revision[flow])
            where = f"{name} ({flow})"
            for key, rule in (
                ("authorizationUrl", "security-scheme-oauth-url-changed"),
                ("tokenUrl", "security-scheme-oauth-token-url-changed"),
                ("refreshUrl", "security-scheme-oauth-token-url-changed"),
            ):
                if bf.get(key) != rf.get(key):
                    self._scheme(rule, name, where, bf.get(key), rf.get(key))
            bscopes, rscopes = _dict(bf.get("scopes")), _dict(rf.get("scopes"))
            for scope in sorted(set(bscopes) - set(rscopes)):
                self._scheme("security-scheme-oauth-scope-removed", name, where, scope, None)
            for scope in sorted(set(rscopes) - set(bscopes)):
                self._scheme("security-scheme-oauth-scope-added", name, where, None, scope)

    def _scheme(
        self, rule: str, name: str, where: str, before: Any = None, after: Any = None
    ) -> None:
        pointer = f"/components/securitySchemes/{escape_pointer(name)}"
        self.changes.append(make_change(rule, pointer, name=where, before=before, after=after))

    # -- parameters -------------------------------------------------------------------------

    def _parameters(self, pair: OperationPair) -> None:
        loc, ptr = pair.location, pair.pointer
        bparams = self._collect_params(self.base, pair.base_path, pair.base_item, pair.base)
        rparams = self._collect_params(self.rev, pair.rev_path, pair.rev_item, pair.revision)
        for presence, key in compare_keys(bparams, rparams):
            if presence == "added":
                rp = rparams[key][0]
                rule = (
                    "request-parameter-added-required"
                    if rp.get("required")
                    else "request-parameter-added-optional"
                )
                self._add(rule, _param_pointer(ptr, rp), loc, _param_label(rp))
                continue
            bp, bdoc = bparams[key]
            label = _param_label(bp)
            if presence == "removed":
                rule = "request-parameter-removed"
                if bp.get("deprecated"):
                    rule = "request-parameter-removed-deprecated"
                    day = parse_date(bp.get("x-sunset"))
                    today = self.options.today
                    if bp.get("x-sunset") is not None and day is None:
                        rule = "request-parameter-sunset-invalid"
                    elif day is not None and today is not None and day > today:
                        rule = "request-parameter-removed-before-sunset"
                self._add(rule, _param_pointer(ptr, bp), loc, label, before=bp.get("x-sunset"))
                continue
            rp, rdoc = rparams[key]
            self._parameter(bp, bdoc, rp, rdoc, loc, _param_pointer(ptr, rp), label)

    def _collect_params(
        self, doc: Document, path: str, item: dict[str, Any], op: dict[str, Any]
    ) -> dict[tuple[str, str], tuple[dict[str, Any], Document]]:
        positions = {m.group(0)[1:-1]: i for i, m in enumerate(_PARAM_RE.finditer(path))}
        found: dict[tuple[str, str], tuple[dict[str, Any], Document]] = {}
        for source in (item.get("parameters"), op.get("parameters")):
            for raw in source or []:
                param, pdoc = _deref(raw, doc)
                if not isinstance(param, dict):
                    continue
                where = str(param.get("in"))
                if where in ("body", "formData"):
                    continue
                pname = str(param.get("name"))
                if where == "path":
                    key = ("path", str(positions.get(pname, pname)))
                elif where == "header":
                    key = ("header", pname.lower())
                else:
                    key = (where, pname)
                found[key] = (param, pdoc)
        return found

    def _parameter(
        self,
        bp: dict[str, Any],
        bdoc: Document,
        rp: dict[str, Any],
        rdoc: Document,
        loc: Location,
        ptr: str,
        label: str,
    ) -> None:
        was, now = bool(bp.get("required")), bool(rp.get("required"))
        if not was and now:
            self._add("request-parameter-became-required", ptr + "/required", loc, label)
        elif was and not now:
            self._add("request-parameter-became-optional", ptr + "/required", loc, label)
        bd, rd = bool(bp.get("deprecated")), bool(rp.get("deprecated"))
        bsun, rsun = bp.get("x-sunset"), rp.get("x-sunset")
        if not bd and rd:
            if rsun is not None and parse_date(rsun) is None:
                self._add("request-parameter-sunset-invalid", ptr, loc, label, after=rsun)
            if rsun is None and self.options.sunset_days_stable > 0:
                self._add("request-parameter-sunset-missing", ptr, loc, label)
            self._add("request-parameter-deprecated", ptr + "/deprecated", loc, label, after=rsun)
        elif bd and not rd:
            self._add("request-parameter-reactivated", ptr + "/deprecated", loc, label)
        elif bd and rd and bsun != rsun:
            bday, rday = parse_date(bsun), parse_date(rsun)
            if bsun is not None and rsun is None:
                self._add("request-parameter-sunset-deleted", ptr, loc, label, before=bsun)
            elif (bsun is not None and bday is None) or (rsun is not None and rday is None):
                self._add("request-parameter-sunset-invalid", ptr, loc, label, after=rsun)
            elif bday is not None and rday is not None and rday < bday:
                self._add("request-parameter-sunset-moved-earlier", ptr, loc, label, bsun, rsun)
        bempty, rempty = bool(bp.get("allowEmptyValue")), bool(rp.get("allowEmptyValue"))
        if bempty != rempty:
            rule = (
                "request-parameter-empty-value-allowed"
                if rempty
                else "request-parameter-empty-value-refused"
            )
            self._add(rule, ptr + "/allowEmptyValue", loc, label, bempty, rempty)
        self._unread(bp, rp, _PARAMETER_READ, ptr, loc)
        bs, rs = _param_schema(bp), _param_schema(rp)
        if bs is None and rs is None:
            return
        # No schema allows any value.
        bs, rs = ({} if bs is None else bs), ({} if rs is None else rs)
        bform = self._serialisation(bp, bs, bdoc)
        rform = self._serialisation(rp, rs, rdoc)
        bstyle = (bp.get("style"), bp.get("explode"), bp.get("collectionFormat"))
        rstyle = (rp.get("style"), rp.get("explode"), rp.get("collectionFormat"))
        if bstyle != rstyle:
            self._add(
                "request-parameter-style-changed"
                if bform != rform
                else "request-parameter-style-no-effect",
                ptr,
                loc,
                label,
                _style_text(bstyle),
                _style_text(rstyle),
            )
        findings = self._differ(Direction.REQUEST, bdoc, rdoc).diff(bs, rs)
        if "content" not in bp and "content" not in rp:
            # Sent as text: what counts is which texts are accepted.
            findings = _types_as_text(findings)
            if rform[:2] == ("form", True):
                findings = self._exploded_array(bs, bdoc, rs, rdoc, findings)
        self.changes += changes_from_findings(
            findings,
            direction=Direction.REQUEST,
            root_prefix="request-parameter",
            nested_prefix="request-parameter-property",
            pointer=ptr + "/schema",
            location=loc,
            label=label,
            causes=self.causes,
        )

    def _serialisation(self, param: dict[str, Any], schema: Any, doc: Document) -> tuple[Any, ...]:
        """How a parameter's value is written on the wire: its style, and `explode` where it
        changes anything (never for primitives, nor for `simple` arrays); `collectionFormat`
        for Swagger 2.0 arrays. Written alike, the same values reach the server alike."""
        if "content" in param:
            return ("content",)
        resolved = _deref(schema, doc)[0]
        types = _dict(resolved).get("type")
        names = {types} if isinstance(types, str) else set(types or [])
        kind = (
            "array"
            if "array" in names
            else "object"
            if "object" in names or (not names and "properties" in _dict(resolved))
            else "primitive"
            if names
            else "any"
        )
        if "style" not in param and "explode" not in param and "type" in param:
            # Swagger 2.0: `multi` repeats the name like form/explode; others join values.
            if kind != "array":
                return ("primitive",)
            fmt = param.get("collectionFormat") or "csv"
            return ("form", True) if fmt == "multi" else ("joined", fmt)
        style = param.get("style") or _DEFAULT_STYLE.get(str(param.get("in")), "form")
        explode = param.get("explode")
        if explode is None:
            explode = style == "form"
        if kind == "primitive" or (kind == "array" and style == "simple"):
            return (style,)
        return (style, bool(explode), kind)

    def _exploded_array(
        self, bs: Any, bdoc: Document, rs: Any, rdoc: Document, findings: list[Finding]
    ) -> list[Finding]:
        """A form/exploded query value: one value is written exactly like an array of one item
        (`?id=1`), so a scalar that becomes an array whose items accept every old value is a
        widening, not a type change."""
        old, new = _dict(_deref(bs, bdoc)[0]), _dict(_deref(rs, rdoc)[0])
        old_types, new_types = _type_names(old), _type_names(new)
        if (
            not old_types
            or old_types & {"array", "object"}
            or new_types != {"array"}
            or not isinstance(new.get("items"), dict)
        ):
            return findings
        inner = _types_as_text(self._differ(Direction.REQUEST, bdoc, rdoc).diff(bs, new["items"]))
        severities = [
            CATALOG.get(f"request-parameter-{f.aspect}", None) for f in inner if not f.path
        ]
        if inner and (
            any(f.path for f in inner)
            or any(rule is None or rule.severity is not Severity.INFO for rule in severities)
        ):
            return findings
        before = "|".join(sorted(old_types))
        return [Finding("type-generalized", (), before, "array")]

    # -- bodies -----------------------------------------------------------------------------

    def _request_body(
        self, op: dict[str, Any], rop: dict[str, Any], loc: Location, ptr: str
    ) -> None:
        bbody, bdoc = self._body(self.base, op)
        rbody, rdoc = self._body(self.rev, rop)
        name = loc.operation or ""
        bptr = ptr + "/requestBody"
        if bbody is None and rbody is None:
            return
        if bbody is None:
            assert rbody is not None
            rule = (
                "request-body-added-required"
                if rbody.get("required")
                else ("request-body-added-optional")
            )
            self._add(rule, bptr, loc, name)
            return
        if rbody is None:
            self._add("request-body-removed", bptr, loc, name)
            return
        was, now = bool(bbody.get("required")), bool(rbody.get("required"))
        if not was and now:
            self._add("request-body-became-required", bptr + "/required", loc, name)
        elif was and not now:
            self._add("request-body-became-optional", bptr + "/required", loc, name)
        self._unread(bbody, rbody, _REQUEST_BODY_READ, bptr, loc)
        self._content(
            bbody.get("content"),
            bdoc,
            rbody.get("content"),
            rdoc,
            Direction.REQUEST,
            loc,
            bptr + "/content",
            "request body",
        )

    def _body(self, doc: Document, op: dict[str, Any]) -> tuple[dict[str, Any] | None, Document]:
        if "swagger" in doc.root:
            return _swagger_body(doc.root, op, doc), doc
        raw = op.get("requestBody")
        if raw is None:
            return None, doc
        body, bdoc = _deref(raw, doc)
        return (body if isinstance(body, dict) else None), bdoc

    def _content(
        self,
        bcontent: Any,
        bdoc: Document,
        rcontent: Any,
        rdoc: Document,
        direction: Direction,
        loc: Location,
        ptr: str,
        label: str,
    ) -> None:
        bmap = _media_types(bcontent)
        rmap = _media_types(rcontent)
        request = direction is Direction.REQUEST
        for presence, mt in compare_keys(bmap, rmap, kept_last=True):
            if presence == "removed":
                raw_mt, bmedia = bmap[mt]
                rule = (
                    "request-body-media-type-removed" if request else "response-media-type-removed"
                )
                if not request and _describes_nothing(_dict(bmedia).get("schema"), bdoc):
                    rule = "response-media-type-removed-placeholder"
                self._add(rule, f"{ptr}/{escape_pointer(raw_mt)}", loc, raw_mt)
                continue
            if presence == "added":
                raw_mt = rmap[mt][0]
                rule = "request-body-media-type-added" if request else "response-media-type-added"
                self._add(rule, f"{ptr}/{escape_pointer(raw_mt)}", loc, raw_mt)
                continue
            bmedia = bmap[mt][1]
            raw_mt, rmedia = rmap[mt]
            bmedia, rmedia = _dict(bmedia), _dict(rmedia)
            self._unread(bmedia, rmedia, _MEDIA_READ, f"{ptr}/{escape_pointer(raw_mt)}", loc)
            self._encoding(bmedia, rmedia, request, loc, f"{ptr}/{escape_pointer(raw_mt)}", label)
            root, nested = (
                ("request-body", "request-property")
                if request
                else ("response-body", "response-property")
            )
            for keyword, stem in (("schema", "schema"), ("itemSchema", "item-schema")):
                # `itemSchema` (OpenAPI 3.2) describes each item of a streamed body.
                bschema, rschema = bmedia.get(keyword), rmedia.get(keyword)
                if bschema is None and rschema is None:
                    continue
                where = f"{ptr}/{escape_pointer(raw_mt)}/{keyword}"
                if bschema is None or rschema is None:
                    # A schema where there was none, or none where there was one: one change
                    # for the media type, not one per property of the schema.
                    rule = f"{root}-media-type-{stem}-{'added' if bschema is None else 'removed'}"
                    untyped = not any(rmedia.get(k) is not None for k in ("schema", "itemSchema"))
                    if rule == "response-body-media-type-item-schema-removed" and untyped:
                        rule += "-untyped"
                    self._add(rule, where, loc, raw_mt)
                    continue
                if (
                    not request
                    and _describes_nothing(bschema, bdoc)
                    and _describes_nothing(rschema, rdoc)
                ):
                    # One placeholder for "no body" in place of another (`{type: object,
                    # properties: {}}` -> `{type: 'null'}`): nothing to read either way.
                    if not _same_json(bschema, rschema):
                        self._add("response-body-placeholder-changed", where, loc, raw_mt)
                    continue
                findings = self._differ(direction, bdoc, rdoc).diff(bschema, rschema)
                if _loosely_typed(raw_mt):
                    findings = _types_as_text(findings, loose=True)
                self.changes += changes_from_findings(
                    findings,
                    direction=direction,
                    root_prefix=root,
                    nested_prefix=nested,
                    pointer=where,
                    location=loc,
                    label=f"{label} ({raw_mt})",
                    causes=self.causes,
                )

    def _encoding(
        self,
        bmedia: dict[str, Any],
        rmedia: dict[str, Any],
        request: bool,
        loc: Location,
        ptr: str,
        label: str,
    ) -> None:
        """`encoding` of form and multipart bodies, field by field. A field whose entry
        appears or goes with the field itself is the field's change (property added or
        removed); an entry that changed for a field on both sides changes how it is sent."""
        bmap, rmap = _dict(bmedia.get("encoding")), _dict(rmedia.get("encoding"))
        if bmap == rmap:
            return
        rule = "request-body-encoding-changed" if request else "response-body-encoding-changed"
        for field in sorted(set(bmap) & set(rmap), key=str):
            before, after = _documented(_dict(bmap[field])), _documented(_dict(rmap[field]))
            if before != after:
                where = f"{ptr}/encoding/{escape_pointer(str(field))}"
                self._add(rule, where, loc, f"{label} field '{field}'", before, after)

    def _differ(self, direction: Direction, bdoc: Document, rdoc: Document) -> SchemaDiffer:
        if bdoc is self.base and rdoc is self.rev:
            return self.request if direction is Direction.REQUEST else self.response
        return self._new_differ(direction, bdoc, rdoc)

    def _new_differ(self, direction: Direction, bdoc: Document, rdoc: Document) -> SchemaDiffer:
        return SchemaDiffer(
            bdoc,
            rdoc,
            direction,
            stability_threshold=self.options.stability_threshold,
            unchanged_refs=self.unchanged,
            ref_siblings=(_ref_siblings_apply(bdoc.root), _ref_siblings_apply(rdoc.root)),
        )

    # -- responses --------------------------------------------------------------------------

    def _responses(self, op: dict[str, Any], rop: dict[str, Any], loc: Location, ptr: str) -> None:
        bres = {str(k): v for k, v in (op.get("responses") or {}).items()}
        rres = {str(k): v for k, v in (rop.get("responses") or {}).items()}
        swagger_b = "swagger" in self.base.root
        swagger_r = "swagger" in self.rev.root
        for presence, code in compare_keys(bres, rres):
            rptr = f"{ptr}/responses/{escape_pointer(code)}"
            success = code.startswith("2") or code.upper() == "2XX"
            if presence == "removed":
                rule = (
                    self._success_removed(bres, rres, code)
                    if success
                    else "response-non-success-status-removed"
                )
                self._add(rule, rptr, loc, code)
                continue
            if presence == "added":
                rule = (
                    "response-success-status-added"
                    if success
                    else "response-non-success-status-added"
                )
                self._add(rule, rptr, loc, code)
                continue
            bresp, bdoc = _deref(bres[code], self.base)
            rresp, rdoc = _deref(rres[code], self.rev)
            if not isinstance(bresp, dict) or not isinstance(rresp, dict):
                continue
            self._unread(bresp, rresp, _RESPONSE_READ, rptr, loc)
            label = f"response {code}"
            self._headers(bresp, bdoc, rresp, rdoc, loc, rptr, label)
            if code in _BODILESS:
                continue  # a schema there describes nothing a reader can receive
            bcontent = (
                _swagger_content(self.base.root, op, bresp) if swagger_b else bresp.get("content")
            )
            rcontent = (
                _swagger_content(self.rev.root, rop, rresp) if swagger_r else rresp.get("content")
            )
            self._content(
                bcontent, bdoc, rcontent, rdoc, Direction.RESPONSE, loc, rptr + "/content", label
            )

    def _success_removed(self, bres: dict[str, Any], rres: dict[str, Any], code: str) -> str:
        """The rule for a success status gone from an operation. Breaking when the operation
        may now answer with a success status a reader did not know; when every success status
        left was documented before (the answers narrowed), or the gone one carried no body and
        so do those left (`200` without content -> `204`), nothing a reader parses changed."""
        left = [c for c in rres if _is_success(c)]
        known = all(c in bres for c in left)
        bodiless = not self._has_body(bres[code], self.base) and not any(
            self._has_body(rres[c], self.rev) for c in left
        )
        if left and (known or bodiless):
            return "response-success-status-removed-covered"
        return "response-success-status-removed"

    def _has_body(self, raw: Any, doc: Document) -> bool:
        resp, _ = _deref(raw, doc)
        if not isinstance(resp, dict):
            return False
        if "swagger" in doc.root:
            return resp.get("schema") is not None
        return any(
            _dict(media).get("schema") is not None for media in _dict(resp.get("content")).values()
        )

    def _headers(
        self,
        bresp: dict[str, Any],
        bdoc: Document,
        rresp: dict[str, Any],
        rdoc: Document,
        loc: Location,
        ptr: str,
        label: str,
    ) -> None:
        bh = {str(k).lower(): (str(k), v) for k, v in (bresp.get("headers") or {}).items()}
        rh = {str(k).lower(): (str(k), v) for k, v in (rresp.get("headers") or {}).items()}
        for presence, key in compare_keys(bh, rh):
            if presence == "added":
                raw = rh[key][0]
                self._add("response-header-added", f"{ptr}/headers/{escape_pointer(raw)}", loc, raw)
                continue
            raw, bval = bh[key]
            hptr = f"{ptr}/headers/{escape_pointer(raw)}"
            bhead, bhdoc = _deref(bval, bdoc)
            bhead = bhead if isinstance(bhead, dict) else {}
            if presence == "removed":
                rule = (
                    "response-header-removed-required"
                    if bhead.get("required")
                    else "response-header-removed-optional"
                )
                self._add(rule, hptr, loc, raw)
                continue
            rhead, rhdoc = _deref(rh[key][1], rdoc)
            rhead = rhead if isinstance(rhead, dict) else {}
            was, now = bool(bhead.get("required")), bool(rhead.get("required"))
            if was and not now:
                self._add("response-header-became-optional", hptr, loc, raw)
            elif now and not was:
                self._add("response-header-became-required", hptr, loc, raw)
            was, now = bool(bhead.get("deprecated")), bool(rhead.get("deprecated"))
            if was != now:
                rule = "response-header-deprecated" if now else "response-header-reactivated"
                self._add(rule, hptr + "/deprecated", loc, raw)
            self._unread(bhead, rhead, _HEADER_READ, hptr, loc)
            bs, rs = _param_schema(bhead), _param_schema(rhead)
            if bs is not None or rs is not None:
                bs, rs = ({} if bs is None else bs), ({} if rs is None else rs)
            bstyle = (bhead.get("style"), bhead.get("explode"), bhead.get("collectionFormat"))
            rstyle = (rhead.get("style"), rhead.get("explode"), rhead.get("collectionFormat"))
            if bstyle != rstyle:
                same = self._serialisation(
                    {**bhead, "in": "header"}, bs or {}, bhdoc
                ) == self._serialisation({**rhead, "in": "header"}, rs or {}, rhdoc)
                self._add(
                    "response-header-style-no-effect" if same else "response-header-style-changed",
                    hptr,
                    loc,
                    raw,
                    _style_text(bstyle),
                    _style_text(rstyle),
                )
            if bs is not None and rs is not None:
                findings = self._differ(Direction.RESPONSE, bhdoc, rhdoc).diff(bs, rs)
                findings = _types_as_text(findings)  # a header's value is text on the wire
                self.changes += changes_from_findings(
                    findings,
                    direction=Direction.RESPONSE,
                    root_prefix="response-header",
                    nested_prefix="response-header-property",
                    pointer=hptr + "/schema",
                    location=loc,
                    label=f"{label} header '{raw}'",
                    causes=self.causes,
                )


# -- document helpers ----------------------------------------------------------------------


def _loosely_typed(media_type: str) -> bool:
    """True for media types whose values are text on the wire (XML, plain text, forms)."""
    essence = media_type.split(";")[0].strip().lower()
    return "xml" in essence or essence in ("text/plain", "application/x-www-form-urlencoded")


_TYPE_ASPECTS = frozenset(
    {
        "type-changed",
        "type-generalized",
        "type-specialized",
        "list-of-types-widened",
        "list-of-types-narrowed",
    }
)
# As text, every integer is a number and every scalar is a string.
_TEXT_SUPERTYPES = {
    "integer": {"integer", "number", "string"},
    "number": {"number", "string"},
    "boolean": {"boolean", "string"},
    "string": {"string"},
    "null": {"null", "string"},
}


def _types_as_text(findings: list[Finding], *, loose: bool = False) -> list[Finding]:
    """Type changes of values written as text (parameters, headers, XML, form and plain-text
    bodies), judged by the texts each type accepts: integer -> string accepts more (widened:
    fine for senders, breaking for readers), string -> integer accepts less, integer ->
    boolean neither. In `loose` bodies (XML, forms, plain text) nothing on the wire tells an
    object or array from a scalar either: such a change is `type-compatible`."""
    return [_type_as_text(f, loose) if f.aspect in _TYPE_ASPECTS else f for f in findings]


def _type_as_text(finding: Finding, loose: bool) -> Finding:
    before, after = _parse_types(finding.before), _parse_types(finding.after)
    if before is None or after is None or (before | after) & {"object", "array"}:
        if loose and finding.aspect == "type-changed":
            return replace(finding, aspect="type-compatible")
        return finding
    aspect = type_change_aspect(
        before,
        after,
        _accepts_text,
        multi=len(before) > 1 or len(after) > 1,
        equivalent="type-compatible",  # the same texts either way
    )
    return replace(finding, aspect=aspect)


def _accepts_text(types: frozenset[str], t: str) -> bool:
    """Whether one of `types` accepts every text of type `t` (an integer's texts are also a
    number's and a string's)."""
    return bool(_TEXT_SUPERTYPES.get(t, {t}) & types)


def _parse_types(text: Any) -> frozenset[str] | None:
    """A finding's type text (`integer|string`) as a set; None for "any"."""
    if not isinstance(text, str) or text == "any":
        return None
    return frozenset(text.split("|"))


def _type_names(schema: dict[str, Any]) -> set[str]:
    raw = schema.get("type")
    names = {raw} if isinstance(raw, str) else {str(t) for t in raw or [] if t is not None}
    return names - {"null"}


def normalize_path(path: str) -> str:
    """Return the path template with parameter names erased: `/users/{id}` -> `/users/{}`."""
    return _PARAM_RE.sub("{}", path.rstrip("/") or "/")


def _operations(
    root: dict[str, Any],
) -> dict[tuple[str, str], tuple[str, str, dict[str, Any], dict[str, Any]]]:
    ops: dict[tuple[str, str], tuple[str, str, dict[str, Any], dict[str, Any]]] = {}
    for raw_path, item in (root.get("paths") or {}).items():
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("$ref"), str) and item["$ref"].startswith("#"):
            try:
                _, item, _ = Document(root).resolve(item["$ref"])
            except Exception:  # noqa: BLE001 - dangling path refs are caught by the loader
                continue
        path = str(raw_path)
        for method in METHODS:
            op = item.get(method)
            if isinstance(op, dict):
                ops[(method, normalize_path(path))] = (path, method, op, item)
    return ops


def _operation_place(raw_path: str, method: str) -> tuple[Location, str]:
    """Where an operation's changes are reported: its location (`GET /pets`) and pointer."""
    return Location(operation=f"{method.upper()} {raw_path}"), (
        f"/paths/{escape_pointer(raw_path)}/{method}"
    )


def _deref(node: Any, doc: Document) -> tuple[Any, Document]:
    hops = 0
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and hops < 32:
        _, node, doc = doc.resolve(node["$ref"])
        hops += 1
    return node, doc


def _param_label(param: dict[str, Any]) -> str:
    return f"{param.get('in')} parameter '{param.get('name')}'"


def _param_pointer(operation_pointer: str, param: dict[str, Any]) -> str:
    return f"{operation_pointer}/parameters/{escape_pointer(str(param.get('name')))}"


def _param_schema(param: dict[str, Any]) -> Any:
    if "schema" in param:
        return param["schema"]
    content = param.get("content")
    if isinstance(content, dict) and content:
        media = next(iter(content.values()))
        if isinstance(media, dict):
            return media.get("schema")
    if "type" in param:  # Swagger 2.0 non-body parameter or header
        return {k: param[k] for k in _SWAGGER_SCHEMA_KEYS if k in param}
    return None


def _media_types(content: Any) -> dict[str, tuple[str, Any]]:
    if not isinstance(content, dict):
        return {}
    return {str(k).split(";")[0].strip().lower(): (str(k), v) for k, v in content.items()}


def _swagger_body(root: dict[str, Any], op: dict[str, Any], doc: Document) -> dict[str, Any] | None:
    consumes = op.get("consumes") or root.get("consumes") or ["application/json"]
    form: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
    body: dict[str, Any] | None = None
    for raw in op.get("parameters") or []:
        param, _ = _deref(raw, doc)
        if not isinstance(param, dict):
            continue
        if param.get("in") == "body":
            body = {
                "required": bool(param.get("required")),
                "content": {mt: {"schema": param.get("schema", {})} for mt in consumes},
            }
        elif param.get("in") == "formData":
            form["properties"][str(param.get("name"))] = _param_schema(param) or {}
            if param.get("required"):
                form["required"].append(str(param.get("name")))
    if body is None and form["properties"]:
        body = {
            "required": bool(form["required"]),
            "content": {mt: {"schema": form} for mt in consumes},
        }
    return body


def _swagger_content(root: dict[str, Any], op: dict[str, Any], resp: dict[str, Any]) -> Any:
    if "schema" not in resp:
        return None
    produces = op.get("produces") or root.get("produces") or ["application/json"]
    return {mt: {"schema": resp["schema"]} for mt in produces}


def _server_urls(op: dict[str, Any], item: dict[str, Any], root: dict[str, Any]) -> set[str]:
    """The URLs of the servers that apply to an operation: its own, else its path's, else
    the document's."""
    for node in (op, item, root):
        servers = node.get("servers")
        if isinstance(servers, list):
            return {str(s.get("url")) for s in servers if isinstance(s, dict)}
    return set()


def _describes_nothing(schema: Any, doc: Document) -> bool:
    """A response schema with nothing in it to read: `{type: 'null'}`, or an object that
    declares no property, no additional-property schema and no constraint (`{type: object,
    properties: {}}`, as generators write "no body" in Swagger 2.0)."""
    if schema is None:
        return False
    node, _ = _deref(schema, doc)
    if not isinstance(node, dict):
        return False
    keys = {k: v for k, v in node.items() if k not in _NOTE_KEYS and not k.startswith("x-")}
    if keys.get("type") in ("null", ["null"]) and set(keys) == {"type"}:
        return True
    if keys.get("type", "object") != "object" or _dict(keys.get("properties")):
        return False
    if keys.get("additionalProperties", True) is not True:
        return False
    return set(keys) <= {"type", "properties", "additionalProperties"}


_NOTE_KEYS = frozenset({"description", "title", "example", "examples", "$comment"})


def _same_json(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _is_success(code: str) -> bool:
    return code.startswith("2") or code.upper() == "2XX"


# Statuses whose responses never carry a body (RFC 9110 15.3.5, 15.4.5).
_BODILESS = frozenset({"204", "304"})


def _ref_siblings_apply(root: Any) -> bool:
    """Whether keywords beside a `$ref` constrain the schema: from OpenAPI 3.1 (JSON Schema
    2020-12) on; Swagger 2.0 and OpenAPI 3.0 ignore them (a Reference Object's siblings)."""
    if not isinstance(root, dict) or "swagger" in root:
        return False
    version = str(root.get("openapi", "3.1"))
    return not version.startswith(("3.0", "2."))


def _swagger_server(root: dict[str, Any]) -> str:
    host = root.get("host")
    if not host:
        return ""
    return f"{host}{root.get('basePath') or ''}"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _documented(node: dict[str, Any]) -> dict[str, Any]:
    """An object without its documentation and vendor extensions."""
    return {k: v for k, v in node.items() if k not in DOCUMENTATION and not str(k).startswith("x-")}


def _flows(scheme: dict[str, Any]) -> dict[str, Any]:
    """OAuth flows by name; a Swagger 2.0 scheme holds one (`flow` with its URLs and scopes)."""
    if isinstance(scheme.get("flow"), str):
        keys = ("authorizationUrl", "tokenUrl", "refreshUrl", "scopes")
        return {scheme["flow"]: {k: scheme[k] for k in keys if k in scheme}}
    return _dict(scheme.get("flows"))


def _schemes(root: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The document's security schemes (OpenAPI 3 components, Swagger 2 definitions)."""
    found = _dict(root.get("components")).get("securitySchemes") or root.get("securityDefinitions")
    return {str(k): v for k, v in _dict(found).items() if isinstance(v, dict)}


def _alternatives(root: dict[str, Any], op: dict[str, Any]) -> list[dict[str, Any]]:
    """The effective security requirements of an operation, as alternatives: `{}` stands for
    "no credentials" (an empty requirement, or no requirement at all)."""
    sec = op.get("security", root.get("security"))
    if not isinstance(sec, list) or not sec:
        return [{}]
    return [s if isinstance(s, dict) else {} for s in sec]


# A requirement: scheme identity -> (the scheme's name, its scopes sorted).
Requirement = dict[str, tuple[str, tuple[str, ...]]]


def _scheme_definition(scheme: dict[str, Any]) -> str:
    """A scheme's definition without documentation, as comparable text."""
    kept = {k: v for k, v in scheme.items() if k not in DOCUMENTATION and not k.startswith("x-")}
    return json.dumps(kept, sort_keys=True, default=str)


def _renamed_schemes(base: dict[str, Any], revision: dict[str, Any]) -> dict[str, str]:
    """Base scheme name -> revision name, for schemes renamed with their definition kept (the
    old name gone, exactly one new name with the same definition)."""
    bschemes, rschemes = _schemes(base), _schemes(revision)
    fresh: dict[str, list[str]] = {}
    for name, scheme in rschemes.items():
        if name not in bschemes:
            fresh.setdefault(_scheme_definition(scheme), []).append(name)
    renamed: dict[str, str] = {}
    for name, scheme in bschemes.items():
        if name not in rschemes:
            candidates = fresh.get(_scheme_definition(scheme), [])
            if len(candidates) == 1:
                renamed[name] = candidates[0]
    return renamed


def _requirement(requirement: dict[str, Any], identities: dict[str, str]) -> Requirement:
    return {
        identities.get(str(name), str(name)): (
            str(name),
            tuple(sorted(str(s) for s in scopes)) if isinstance(scopes, list) else (),
        )
        for name, scopes in requirement.items()
    }


def _covers(candidate: Requirement, held: Requirement) -> bool:
    """True when credentials that satisfy `held` also satisfy `candidate`."""
    return all(
        key in held and set(scopes) <= set(held[key][1]) for key, (_, scopes) in candidate.items()
    )


def _req_text(requirement: Requirement) -> str:
    if not requirement:
        return "no credentials"
    parts = []
    for name, scopes in sorted(requirement.values()):
        parts.append(f"{name}[{','.join(scopes)}]" if scopes else name)
    return " + ".join(parts)


def _security(root: dict[str, Any], op: dict[str, Any]) -> list[dict[str, Any]]:
    sec = op.get("security", root.get("security"))
    if not isinstance(sec, list):
        return []
    return [s for s in sec if isinstance(s, dict) and s]


def _style_text(style: tuple[Any, Any, Any]) -> str:
    return ",".join(str(s) for s in style if s is not None) or "default"


def _version_numbers(version: str) -> tuple[int, ...]:
    """The numbers of a version string in order (`v2.1.0` -> (2, 1, 0), a date -> y, m, d)."""
    return tuple(int(n) for n in re.findall(r"\d+", version))
