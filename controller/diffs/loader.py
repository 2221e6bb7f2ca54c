"""Turn contract text (JSON or YAML) into a document, with a clear error when it cannot be.

JSON goes through the `json` module (fast); anything else through PyYAML's libyaml loader
(`CSafeLoader`). YAML timestamps stay strings so documents round-trip to JSON. OpenAPI
documents are checked for a supported version and for local `$ref`s that point nowhere.
Parsing is pure: the caller reads files or URLs and passes the text.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

import yaml

from controller.diffs.errors import ContractParseError
from controller.diffs.refs import resolve_pointer

Kind = Literal["auto", "openapi", "mcp", "json"]

# libyaml's loader is about 4x faster than the pure-Python one; fall back when it is missing.
_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc]
    """Safe loader that keeps timestamps as the strings they were written as."""


_Loader.add_constructor(
    "tag:yaml.org,2002:timestamp",
    lambda loader, node: loader.construct_scalar(node),
)

# `$ref` values in JSON or YAML text; scanning text is much faster than walking the tree.
_REF_RE = re.compile(r"""["']?\$ref["']?\s*:\s*["']?(#[^"'\s,}\]]*)""")


def load_document(data: str | bytes, filename: str | None = None, *, kind: Kind = "auto") -> Any:
    """Parse contract text into a document; raise `ContractParseError` when it cannot.

    With `kind="openapi"` (or `auto` and a document that declares `openapi`/`swagger`) the
    version is checked and every local `$ref` must resolve.
    """
    text = _decode(data, filename)
    if not text.strip():
        raise ContractParseError("the document is empty", where=filename)
    doc = _parse(text, filename)
    if kind in ("openapi", "mcp") and not isinstance(doc, dict):
        raise ContractParseError(
            f"expected a JSON/YAML object at the top level, found {type(doc).__name__}",
            where=filename,
        )
    is_openapi = isinstance(doc, dict) and ("openapi" in doc or "swagger" in doc)
    if kind == "openapi" or (kind == "auto" and is_openapi):
        check_openapi(doc, text, filename)
    return doc


def check_openapi(
    doc: Any, text: str | None = None, filename: str | None = None, *, check_refs: bool = True
) -> str:
    """Check that `doc` is a supported OpenAPI document and return its version family."""
    if not isinstance(doc, dict):
        raise ContractParseError("not an OpenAPI document (not an object)", where=filename)
    if "swagger" in doc:
        version = str(doc["swagger"])
        if version != "2.0":
            raise ContractParseError(
                f"unsupported Swagger version {version!r}; supported: 2.0", where=filename
            )
        family = "2.0"
    elif "openapi" in doc:
        version = str(doc["openapi"])
        if re.fullmatch(r"3\.0(\.\d+)?(-.*)?", version):
            family = "3.0"
        elif re.fullmatch(r"3\.1(\.\d+)?(-.*)?", version):
            family = "3.1"
        else:
            raise ContractParseError(
                f"unsupported OpenAPI version {version!r}; supported: 2.0, 3.0.x, 3.1.x",
                where=filename,
            )
    else:
        raise ContractParseError(
            "not an OpenAPI document: no 'openapi' or 'swagger' field", where=filename
        )
    paths = doc.get("paths")
    if paths is None and family != "3.1":
        raise ContractParseError("OpenAPI document has no 'paths' object", where=filename)
    if paths is not None and not isinstance(paths, dict):
        raise ContractParseError("'paths' must be an object", where=filename)
    if check_refs:
        _check_local_refs(doc, text, filename)
    return family


def _decode(data: str | bytes, filename: str | None) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ContractParseError(
            f"not UTF-8 text (byte {exc.start}); contracts must be JSON or YAML text",
            where=filename,
        ) from None


def _parse(text: str, filename: str | None) -> Any:
    stripped = text.lstrip()
    json_first = stripped[:1] in ("{", "[") or (filename or "").lower().endswith(".json")
    if json_first:
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            json_error = ContractParseError(
                f"invalid JSON: {exc.msg}",
                where=f"{filename or '<input>'}:{exc.lineno}:{exc.colno}",
            )
        if (filename or "").lower().endswith(".json"):
            raise json_error
        try:  # JSON-looking text without a .json name may still be valid YAML (flow style)
            return yaml.load(text, Loader=_Loader)  # noqa: S506 - safe loader subclass
        except yaml.YAMLError:
            raise json_error from None
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - safe loader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = filename or "<input>"
        if mark is not None:
            where = f"{where}:{mark.line + 1}:{mark.column + 1}"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ContractParseError(f"invalid YAML: {problem}", where=where) from None
    except (ValueError, TypeError, RecursionError) as exc:
        raise ContractParseError(f"invalid YAML: {exc}", where=filename) from None


def _check_local_refs(doc: dict[str, Any], text: str | None, filename: str | None) -> None:
    if text is None:
        text = json.dumps(doc, default=str)
    for ref in sorted(set(_REF_RE.findall(text))):
        try:
            resolve_pointer(doc, ref)
        except KeyError:
            raise ContractParseError(
                f"$ref {ref!r} points to nothing in this document", where=filename
            ) from None
