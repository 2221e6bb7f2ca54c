"""Offline diffs: read two contracts (files or URLs), diff them, apply a rules file.

The use case behind `driftgate diff` and `driftgate compare`. Reading is I/O (files, and
URLs through `controller.sources.http`); parsing and diffing are the pure engines.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Literal, cast

import yaml

from controller.collector import collector_paused
from controller.contracts.base import ContractKind, DiffContext
from controller.contracts.kinds import CONTRACT_KINDS
from controller.diffs import (
    ContractParseError,
    RulesFile,
    RulesFileError,
    apply_rules_file,
    diff_json_samples,
    load_document,
)
from controller.diffs.grouping import group_changes, occurrences, totals
from controller.diffs.overlap import Overlap, title_of
from controller.diffs.overrides import expired_waivers as expired_waivers  # for the CLI
from controller.diffs.overrides import parse_rules_file
from controller.diffs.reports import ANNOTATIONS, MARKDOWN_MAX_CHARS, RenderOptions, render
from controller.errors import DriftgateError
from controller.model.report import DiffReport, Source, Threshold

AUTO = "auto"  # `--type auto`: each input's kind told from its shape
MAX_FILE_BYTES = 64 * 1024 * 1024


class InputError(DriftgateError):
    """An input of a diff cannot be read or parsed (exit code 2 in the CLI)."""

    code = "input_error"


class Reader:
    """Reads contract locations: local paths, `file://` URLs, and http(s) URLs."""

    def __init__(self, *, allow_private: bool = True) -> None:
        self.allow_private = allow_private
        self._client: Any = None

    def read(self, location: str) -> bytes:
        if location.startswith(("http://", "https://")):
            # httpx is imported only for a remote input: a diff of two files starts faster.
            from controller.sources.http import CLI_USER_AGENT, FetchError, fetch, make_client

            if self._client is None:
                self._client = make_client(
                    allow_private=self.allow_private, user_agent=CLI_USER_AGENT
                )
            try:
                return fetch(self._client, location).content
            except FetchError as exc:
                raise InputError(f"cannot fetch {exc.message}") from None
        path = Path(location.removeprefix("file://"))
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                raise InputError(f"{location}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
            return path.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read {location}: {exc.strerror or exc}") from None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def detect_type(document: Any) -> str:
    """The diff type of a document by its shape (`controller.contracts`): `openapi` for
    OpenAPI/Swagger documents, `mcp` for MCP snapshots, `a2a_card` for A2A agent cards, else
    `json`."""
    return (CONTRACT_KINDS.detect(document) or CONTRACT_KINDS.catch_all).diff_type


def diff_contracts(
    base: str,
    revision: str,
    *,
    contract_type: str = AUTO,
    rules: RulesFile | None = None,
    reader: Reader | None = None,
    today: date | None = None,
    flat: bool = False,
    check_version: bool = False,
) -> DiffReport:
    """Read, parse and diff two contracts; raise `InputError` when an input is unusable.
    `today` (default: the UTC date now) decides OpenAPI sunset windows. The report is grouped
    by cause (`controller.diffs.grouping`) unless `flat`; `check_version` reports breaking changes
    under a version number that did not go up (`api-version-*`)."""
    with _inputs(reader, base, revision, contract_type) as (base_doc, rev_doc, reader, data):
        resolved = contract_type
        if resolved == AUTO:
            resolved = detect_type(base_doc)
            other = detect_type(rev_doc)
            if other != resolved:
                raise InputError(
                    f"{base} looks like {resolved} but {revision} looks like {other}; "
                    "pass --type to compare them anyway"
                )
        kind = _kind(resolved)
        today = today or datetime.now(UTC).date()
        # The engine groups as it goes unless a rules file must see every occurrence first.
        grouped_by_engine = not flat and rules is None
        context = DiffContext(
            today=today,
            grouped=grouped_by_engine,
            check_version=check_version,
            profile="cli",
            resolver=_resolver(reader),
            base_uri=_uri(base),
            revision_uri=_uri(revision),
        )
        with collector_paused():  # a large contract's diff (controller/collector.py)
            changes = kind.diff(base_doc, rev_doc, context)
        if rules is not None:
            changes = apply_rules_file(changes, rules, today)
        common = kind.overlap(base_doc, rev_doc) if kind.overlap is not None else None
        report: dict[str, Any] = {
            "overlap": common.to_json() if common is not None else None,
            "warnings": _warnings(common, base_doc, rev_doc),
            "base_source": Source(_display_path(base), data[0]),
            "revision_source": Source(_display_path(revision), data[1]),
        }
        if flat:
            return DiffReport(
                base,
                revision,
                resolved,
                changes,
                totals=totals(group_changes(changes)),
                **report,
            )
        if not grouped_by_engine:
            changes = group_changes(changes)
        return DiffReport(
            base,
            revision,
            resolved,
            changes,
            occurrences=occurrences(changes),
            totals=totals(changes),
            **report,
        )


def _kind(diff_type: str) -> ContractKind:
    kind = CONTRACT_KINDS.by_diff_type(diff_type)
    if kind is None:
        choices = ", ".join((AUTO, *CONTRACT_KINDS.diff_types()))
        raise InputError(f"unknown contract type {diff_type!r}; use one of {choices}")
    return kind


def _warnings(common: Overlap | None, base_doc: Any, rev_doc: Any) -> list[dict[str, str]]:
    """Warnings about the inputs: documents that share almost none of their operations."""
    if common is None or not common.unrelated:
        return []
    message = common.warning(title_of(base_doc), title_of(rev_doc))
    return [{"code": "unrelated-documents", "message": message}]


def _display_path(location: str) -> str | None:
    """A local input's path relative to the working directory, with `/` separators (how
    GitHub annotations and SARIF name files); None for a URL."""
    if location.startswith(("http://", "https://")):
        return None
    path = Path(location.removeprefix("file://"))
    try:
        return Path(os.path.relpath(path.resolve(), Path.cwd())).as_posix()
    except ValueError:  # another drive (Windows): no relative path exists
        return path.as_posix()


def compare_payloads(
    base: str,
    revision: str,
    *,
    profile: Literal["cli", "hosted"] = "cli",
    rules: RulesFile | None = None,
    reader: Reader | None = None,
) -> DiffReport:
    """The offline `compare_json`: infer schemas from two JSON payloads and diff them."""
    with _inputs(reader, base, revision, "json") as (base_doc, rev_doc, _, _data):
        changes = diff_json_samples(base_doc, rev_doc, profile=profile)
        if rules is not None:
            changes = apply_rules_file(changes, rules)
        # Pointers into inferred schemas, not into the payloads: files without lines.
        return DiffReport(
            base,
            revision,
            "json",
            changes,
            profile=profile,
            totals=totals(changes),
            base_source=Source(_display_path(base)),
            revision_source=Source(_display_path(revision)),
        )


@contextmanager
def _inputs(
    reader: Reader | None, base: str, revision: str, contract_type: str
) -> Iterator[tuple[Any, Any, Reader, tuple[bytes, bytes]]]:
    """Both inputs read and parsed (with `reader`, else one of its own, closed after), with
    their bytes (kept for line numbers); a contract that cannot be parsed, here or in the
    body, is an `InputError`."""
    own = reader is None
    used = reader or Reader()
    try:
        base_data, revision_data = used.read(base), used.read(revision)
        yield (
            _parse(base_data, base, contract_type),
            _parse(revision_data, revision, contract_type),
            used,
            (base_data, revision_data),
        )
    except ContractParseError as exc:
        raise InputError(str(exc)) from None
    finally:
        if own:
            used.close()


def load_rules(path: str) -> RulesFile:
    """Read a rules file (YAML or JSON); `InputError` names the file and the problem."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read rules file {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise InputError(f"{path}{line}: invalid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict):
        raise InputError(
            f"{path}: a rules file is a mapping with `overrides`, `ignore` and `waivers`"
        )
    try:
        return parse_rules_file(data)
    except RulesFileError as exc:
        raise InputError(f"{path}: {exc}") from None


def _parse(data: bytes, location: str, contract_type: str) -> Any:
    if contract_type == AUTO:
        return load_document(data, location, kind="auto")
    return _kind(contract_type).read_file(data, location)


def _resolver(reader: Reader) -> Callable[[str], Any]:
    def resolve(uri: str) -> Any:
        return load_document(reader.read(uri), uri, kind="json")

    return resolve


def _uri(location: str) -> str:
    if location.startswith(("http://", "https://")):
        return location
    return str(Path(location.removeprefix("file://")).resolve())


def render_report(
    report: DiffReport,
    fmt: str,
    fail_on: str,
    *,
    markdown_max_chars: int = MARKDOWN_MAX_CHARS,
    annotations: int = ANNOTATIONS,
) -> str:
    """`report` in one of `controller.diffs.reports.FORMATS` (`driftgate diff --format`)."""
    options = RenderOptions(markdown_max_chars=markdown_max_chars, annotations=annotations)
    return render(report, fmt, cast(Threshold, fail_on), options)
