"""Loading a `.driftgate/` directory: from file bytes to models, or to problems with positions.

A commit that breaks a file must change nothing and say exactly where it is wrong. So the
loader is pure (bytes in, a `Bundle` out: no database, git or network) and reports every
problem it finds at once, each as `file:line:column: message`:

1. parse the YAML into nodes that keep their marks (duplicate keys, bounded aliases);
2. validate each file against its JSON Schema (generated from the models), every error;
3. build the pydantic models (the truth) for the files that passed;
4. check what a schema cannot see: unique ids, names and slugs, known policies and templates.

Messages never echo header values (they may be secrets) or URLs (they may carry tokens).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import posixpath
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from typing import Any, TypeVar
from urllib.parse import urlsplit

import yaml
from jsonschema import Draft202012Validator, validators  # type: ignore[import-untyped]
from jsonschema.exceptions import ValidationError as SchemaError  # type: ignore[import-untyped]
from pydantic import BaseModel
from pydantic import ValidationError as ModelError

from controller.contracts.kinds import A2A_CARD, MCP
from controller.gitsources.configschema import gitops_schema
from controller.model.gitops import (
    ALL_PRESETS,
    ENV_VALUE_PATTERN,
    ENVIRONMENT_PATTERN,
    HEADER_VALUE_PATTERN,
    HTTPS_URL_PATTERN,
    MAX_FILE_BYTES,
    POLICY_PRESETS,
    REPO_REF_PATTERN,
    SECRET_MESSAGE,
    SLUG_PATTERN,
    URL_TEMPLATE_PATTERN,
    VERSION,
    AgentsFile,
    DashboardsFile,
    InlineWatch,
    Template,
    TemplatesFile,
    Unreadable,
    WaiversFile,
    WatchSetEntry,
    WatchSetsFile,
)
from controller.model.ingress_profiles import ProfileInvalid, check_profile
from controller.model.watch import (
    LABEL_PATTERN,
    NAME_PATTERN,
    NOTE_PATTERN,
    URL_PATTERN,
    WatchType,
    explain_bad_name,
    explain_bad_url,
)
from controller.toollock.files import LockFileInvalid, load_lock
from controller.toollock.hosted import HOSTED_LOCK
from controller.toollock.lock import LOCK_FILE

FILES = ("agents.yaml", "templates.yaml", "watch-sets.yaml", "dashboards.yaml", "waivers.yaml")
PROFILES = "profiles"  # the subdirectory of consumer profiles, one file each
# The subdirectory of watch-set files: each like watch-sets.yaml, all of them one namespace.
WATCH_SETS = "watch-sets"
WATCH_SETS_FILE = "watch-sets.yaml"
WATCH_SET_SUFFIXES = (".yaml", ".yml")
# The hosted product's directory beside `.driftgate/` (a sibling of the source's directory):
# only its `agents.yaml` is driftgate's, passed to `load_bundle` under this name.
HOSTED_DIRECTORY = ".driftguard"
HOSTED_AGENTS = f"{HOSTED_DIRECTORY}/agents.yaml"
AGENTS_FILES = ("agents.yaml", HOSTED_AGENTS)
MAX_NODES = 100_000  # after alias expansion: a few aliases must not become a billion nodes
MAX_DEPTH = 64

JsonPath = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)
Position = tuple[int, int]


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a `.driftgate/` file, at a 1-based line and column."""

    file: str
    line: int
    column: int
    message: str
    path: str = ""  # JSON path of the offending value, e.g. agents[2].policy
    # The same path as keys and indexes (for a JSON pointer); not compared.
    parts: tuple[str | int, ...] = field(default=(), compare=False)
    # The file could not be read at all (a link, a directory, a submodule, over a limit, not
    # UTF-8): `driftgate validate` exits 2 for it rather than 1.
    unread: bool = field(default=False, compare=False)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        """The problem as `driftgate validate --format json` and a source's status show it."""
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "path": self.path,
            "message": self.message,
        }


@dataclass
class Positions:
    """Where each value (and each mapping key) of one file starts."""

    values: dict[JsonPath, Position] = field(default_factory=dict)
    keys: dict[JsonPath, Position] = field(default_factory=dict)

    def find(self, path: Sequence[str | int], *, key: bool = False) -> Position:
        """Position of the value (or key) at `path`, else of its nearest known ancestor."""
        path = tuple(path)
        if key and path in self.keys:
            return self.keys[path]
        while path:
            if path in self.values:
                return self.values[path]
            path = path[:-1]
        return self.values.get((), (1, 1))


@dataclass
class Bundle:
    """The models of a `.driftgate/` directory and every problem found in it.

    A model is None when its file is absent or failed to parse or validate. Apply nothing
    unless `problems` is empty: cross-reference problems leave the models in place.
    """

    # The agents of agents.yaml and of the hosted `.driftguard/agents.yaml`, as one file.
    agents: AgentsFile | None = None
    # The same, file by file: `agents.yaml` and/or HOSTED_AGENTS -> its model.
    agent_files: dict[str, AgentsFile] = field(default_factory=dict)
    templates: TemplatesFile | None = None
    # Every watch set of watch-sets.yaml and of watch-sets/*.yaml, in that order (the files
    # in name order); None when there is no such file or none of them validated.
    watch_sets: WatchSetsFile | None = None
    # The same, file by file: its name in the directory (`watch-sets.yaml`,
    # `watch-sets/prod.yaml`) -> its model, for those that validated.
    watch_set_files: dict[str, WatchSetsFile] = field(default_factory=dict)
    dashboards: DashboardsFile | None = None
    waivers: WaiversFile | None = None
    # Consumer profiles of `profiles/*.json|yaml`: id -> (file as shown, the profile).
    profiles: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    # The pinned tool sets of `mcp.lock` and of the hosted `.driftguard/mcp/driftguard-lock.json`
    # (`controller.toollock`): server name -> (file as shown, its entry); driftgate's lock
    # wins for a server both name.
    tool_locks: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    # Where each of those servers is named in its lock (line, column).
    tool_lock_lines: dict[str, tuple[int, int]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    positions: dict[str, Positions] = field(default_factory=dict, repr=False, compare=False)
    # Base name -> parsed data of each file that passed steps 1 to 3 with no problem of its
    # own: what `load_bundle(..., checked=...)` may be given again for the same bytes.
    data: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    checked: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return not self.problems

    def locate(self, file: str, path: Sequence[str | int], *, key: bool = False) -> Position:
        """Line and column (1-based) of the value at `path` in `file` (a name in the
        directory such as `agents.yaml` or `watch-sets/prod.yaml`, with or without the
        directory before it); (1, 1) when the file or path is unknown."""
        parts = file.split("/")
        positions = self.positions.get("/".join(parts[-2:])) or self.positions.get(parts[-1])
        return positions.find(path, key=key) if positions else (1, 1)


def load_bundle(
    files: Mapping[str, bytes],
    *,
    directory: str = ".driftgate",
    known_templates: Collection[str] = (),
    known_watches: Collection[str] = (),
    checked: Mapping[str, Any] | None = None,
    earlier: Mapping[str, Any] | None = None,
    unreadable: Mapping[str, Unreadable] | None = None,
    max_file_bytes: int = MAX_FILE_BYTES,
    org: Collection[str] | None = None,
) -> Bundle:
    """Parse, validate and cross-check the files of a `.driftgate/` directory.

    `files` may also hold HOSTED_AGENTS, the hosted product's `.driftguard/agents.yaml` beside
    the directory: its agents, policies and watches join those of agents.yaml (one namespace).
    `org`: the names and id of the org the files apply to; a top-level `org:` that is none of
    them is a problem (None: not checked, as offline).

    `files` maps base names to contents; names other than FILES are ignored, except near
    misses such as `agents.yml`, which are reported. `known_templates` are template names
    that exist outside templates.yaml (built-in or org templates); `known_watches` are the
    names and ids of watches that exist outside these files (the org's, when reconciling).
    An agent's watch reference that names none of them but is one typo away from one is a
    problem with a "did you mean"; one that resembles nothing may name a watch created later
    through the API, and is left to reconcile (an unresolved binding, failing closed).
    Problems name files as `<directory>/<name>`.

    `checked` maps base names to the `Bundle.data` an earlier load gave for the very same
    bytes (and code): those files skip parsing and the schema, and their models are built
    from that data, so the models and the cross-checks come out the same. Their positions
    are unknown, so problems are placed at 1:1 there; load again without `checked` to place
    them (`Bundle.checked` says which files were taken as checked).

    `earlier` maps base names to the `Bundle.data` of an earlier version of the file (same
    code): the items of its top-level lists that come back unchanged are not schema-checked
    again (they passed this schema then), which changes nothing but the time taken.

    `unreadable` maps the names that could not be read (a symbolic link, a file over the
    limit ...) to why: each is a problem at its path (but a near miss, said as one), and a file
    of FILES or HOSTED_AGENTS among them counts as present but broken, never as absent (which
    would prune what it declares). Bytes over
    `max_file_bytes` are not parsed.
    """
    reuse = {name: data for name, data in (checked or {}).items() if name in files}
    earlier = earlier or {}
    unreadable = unreadable or {}
    misnamed = [
        Problem(
            _join(directory, name),
            1,
            1,
            f"did you mean {meant}? driftgate reads only " + ", ".join(FILES),
        )
        for name in sorted({*files, *unreadable})
        if name not in FILES and "/" not in name and (meant := _meant_file(name))
    ]
    # Every path a caller could not read is a problem, whichever directory it is in: a filter
    # of known names here once dropped `.driftguard/agents.yaml`, and its agents were pruned.
    # Only a near miss, reported above as such, is not said twice.
    said = {problem.file for problem in misnamed}
    not_read = [
        Problem(_join(directory, name), 1, 1, why.message, unread=True)
        for name, why in sorted(unreadable.items())
        if _join(directory, name) not in said
    ]

    def document(name: str) -> _Document:
        file = _join(directory, name)
        if name in unreadable:
            return _Document(name, file)  # neither parsed nor absent; its problem is above
        if name in reuse:
            return _Document(name, file, reuse[name], Positions())
        return _parse(name, file, files[name], max_file_bytes)

    parts = sorted(name for name in {*files, *unreadable} if _is_watch_set_part(name))
    present = [name for name in (*FILES, HOSTED_AGENTS) if name in files or name in unreadable]
    documents = {name: document(name) for name in [*present, *parts]}

    def validate(name: str, model: type[M]) -> M | None:
        return _validate(
            documents.get(name), model, schema_checked=name in reuse, earlier=earlier.get(name)
        )

    set_names = [name for name in documents if documents[name].kind == WATCH_SETS_FILE]
    set_files = {name: validate(name, WatchSetsFile) for name in set_names}
    agent_files = {name: validate(name, AgentsFile) for name in AGENTS_FILES}
    bundle = Bundle(
        agents=_merged_agents(agent_files),
        agent_files={name: model for name, model in agent_files.items() if model is not None},
        templates=validate("templates.yaml", TemplatesFile),
        watch_sets=_merged(set_files),
        watch_set_files={name: model for name, model in set_files.items() if model is not None},
        dashboards=validate("dashboards.yaml", DashboardsFile),
        waivers=validate("waivers.yaml", WaiversFile),
        positions={
            name: document.positions
            for name, document in documents.items()
            if document.positions is not None and name not in reuse
        },
        checked=frozenset(reuse),
    )
    for name, model in (
        *agent_files.items(),
        ("templates.yaml", bundle.templates),
        *set_files.items(),
        ("dashboards.yaml", bundle.dashboards),
        ("waivers.yaml", bundle.waivers),
    ):
        if model is not None and not documents[name].problems:
            bundle.data[name] = documents[name].data
    _Checks(documents, set(known_templates), set(known_watches), org).run(bundle)
    profile_documents = _load_profiles(files, directory, bundle, max_file_bytes)
    lock_problems = _load_tool_locks(files, directory, bundle, max_file_bytes)
    found = (
        misnamed
        + not_read
        + lock_problems
        + [
            problem
            for document in [*documents.values(), *profile_documents]
            for problem in document.problems
        ]
    )
    bundle.problems = sorted(set(found), key=lambda p: (p.file, p.line, p.column, p.message))
    return bundle


def _merged(files: Mapping[str, WatchSetsFile | None]) -> WatchSetsFile | None:
    """The watch sets of every file that validated, as one file; None when none did."""
    valid = [model for model in files.values() if model is not None]
    if not valid:
        return None
    if len(valid) == 1:
        return valid[0]
    # Each file passed the model already; the concatenation has no rule of its own.
    sets = [watch_set for model in valid for watch_set in model.watch_sets]
    return WatchSetsFile.model_construct(version=valid[0].version, watch_sets=sets)


def _merged_agents(files: Mapping[str, AgentsFile | None]) -> AgentsFile | None:
    """The agents and policies of every agents file that validated, as one file."""
    valid = [model for model in files.values() if model is not None]
    if len(valid) <= 1:
        return valid[0] if valid else None
    policies = {name: policy for model in valid for name, policy in model.policies.items()}
    agents = [agent for model in valid for agent in model.agents]
    return AgentsFile.model_construct(version=1, policies=policies, agents=agents)


def derived_name(url: str) -> str:
    """The name of an inline watch written without one: its URL's host and path (a URL with
    a query, a fragment or over 180 characters ends in `~` and 8 hex digits of its SHA-256
    instead, so the name never shows a token and two URLs never share a name)."""
    parts = urlsplit(url)
    name = (parts.netloc.lower() + parts.path).rstrip("/") or parts.netloc.lower()
    if parts.query or parts.fragment or len(name) > 180:
        digest = hashlib.sha256(url.encode()).hexdigest()[:8]
        name = f"{name[:180]}~{digest}"
    return name


def file_of(directory: str, name: str) -> str:
    """How problems name the file `name` of `directory`: `.driftgate/agents.yaml`, and the
    hosted file beside the directory as `.driftguard/agents.yaml`."""
    return _join(directory, name)


def _is_watch_set_part(name: str) -> bool:
    """`watch-sets/<name>.yaml|yml`: one of the split watch-set files."""
    folder, _, base = name.partition("/")
    return folder == WATCH_SETS and "/" not in base and base.lower().endswith(WATCH_SET_SUFFIXES)


# Consumer profiles: one per file under profiles/


PROFILE_SUFFIXES = (".json", ".yaml", ".yml")
_PROFILE_KEYS = ("id", "version", "schema", "profileKind", "envelope", "normalization")


def is_read(name: str) -> bool:
    """Whether `load_bundle` reads the file `name` (relative to the directory): one of FILES,
    a near miss of one (reported), a consumer profile `profiles/<name>.json|yaml|yml` or a
    watch-set file `watch-sets/<name>.yaml|yml`. What it does not read need not be read from
    git or disk at all."""
    if "/" not in name:
        return name in FILES or name == LOCK_FILE or _meant_file(name) is not None
    return _is_profile(name) or _is_watch_set_part(name)


def _load_tool_locks(
    files: Mapping[str, bytes], directory: str, bundle: Bundle, max_file_bytes: int
) -> list[Problem]:
    """Read the tool locks into `bundle.tool_locks`: the hosted product's first, then
    driftgate's, whose entries replace the hosted ones of the same server. A lock that cannot
    be read is a problem at its line (and pins nothing: the revision stalls)."""
    problems: list[Problem] = []
    for name in (HOSTED_LOCK, LOCK_FILE):
        if name not in files:
            continue
        file = _join(directory, name)
        try:
            lock = load_lock(files[name], max_bytes=max_file_bytes)
        except LockFileInvalid as exc:
            problems += [
                Problem(file, p.line, p.column, p.message, p.path, p.parts) for p in exc.problems
            ]
            continue
        for server, entry in lock.servers.items():
            bundle.tool_locks[server] = (file, entry)
            bundle.tool_lock_lines[server] = lock.lines.get(server, (1, 1))
    return problems


def _is_profile(name: str) -> bool:
    folder, _, base = name.partition("/")
    return folder == PROFILES and "/" not in base and base.lower().endswith(PROFILE_SUFFIXES)


def _load_profiles(
    files: Mapping[str, bytes], directory: str, bundle: Bundle, max_file_bytes: int
) -> list[_Document]:
    """Parse and check every `profiles/*.json|yaml` file into `bundle.profiles`; the documents
    (with their problems). Two files with the same profile id are a problem."""
    documents = []
    for name in sorted(files):
        if not _is_profile(name):
            continue
        document = _parse(name, _join(directory, name), files[name], max_file_bytes)
        documents.append(document)
        if document.problems:
            continue
        try:
            profile = check_profile(document.data)
        except ProfileInvalid as exc:
            key = next((k for k in _PROFILE_KEYS if k in exc.message), None)
            document.report((key,) if key else (), exc.message, key=key is not None)
            continue
        if profile.id in bundle.profiles:
            document.report(
                ("id",),
                f"profile id {profile.id!r} is also used by {bundle.profiles[profile.id][0]}",
            )
            continue
        bundle.profiles[profile.id] = (document.file, document.data)
    return documents


# Step 1: YAML with positions


@dataclass
class _Document:
    name: str  # name in the directory, e.g. agents.yaml or watch-sets/prod.yaml
    file: str  # as shown in problems, e.g. .driftgate/agents.yaml
    data: Any = None
    positions: Positions | None = None
    problems: list[Problem] = field(default_factory=list)

    @property
    def kind(self) -> str:
        """The file of FILES whose schema applies (a watch-set file's is watch-sets.yaml)."""
        if self.name == HOSTED_AGENTS:
            return "agents.yaml"
        return WATCH_SETS_FILE if _is_watch_set_part(self.name) else self.name

    @property
    def hosted(self) -> bool:
        """The hosted product's `.driftguard/agents.yaml`, whose own rules apply too."""
        return self.name == HOSTED_AGENTS

    @property
    def parsed(self) -> bool:
        return self.positions is not None

    def report(self, path: Sequence[str | int], message: str, *, key: bool = False) -> None:
        line, column = (self.positions or Positions()).find(path, key=key)
        self.problems.append(
            Problem(self.file, line, column, message, json_path(path), tuple(path))
        )

    def report_at(
        self,
        line: int,
        column: int,
        message: str,
        path: Sequence[str | int] = (),
        *,
        unread: bool = False,
    ) -> None:
        self.problems.append(
            Problem(self.file, line, column, message, json_path(path), tuple(path), unread)
        )


class _Unreadable(Exception):
    def __init__(self, mark: yaml.Mark | None, message: str, path: JsonPath = ()) -> None:
        super().__init__(message)
        self.mark = mark
        self.message = message
        self.path = path


_FastLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parse(name: str, file: str, raw: bytes, max_file_bytes: int = MAX_FILE_BYTES) -> _Document:
    document = _Document(name, file)
    if len(raw) > max_file_bytes:
        document.report_at(
            1, 1, Unreadable("too_large", len(raw), max_file_bytes).message, unread=True
        )
        return document
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        document.report_at(
            line, column, "the file is not UTF-8 text: save it as UTF-8", unread=True
        )
        return document
    try:
        yaml.reader.Reader(text)  # checks for unprintable characters at once
        # libyaml when PyYAML has it (about 10x faster on large files), same nodes and marks.
        loader = _FastLoader(text)
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        document.report_at(line, column, "invalid YAML: a control character is not allowed")
        return document
    positions = Positions()
    try:
        node = loader.get_single_node()
        if node is None:
            document.report_at(1, 1, f"the file is empty: start it with `version: {VERSION}`")
            return document
        document.data = _Builder(loader, positions, document).build(node, (), 0)
        document.positions = positions
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "cannot parse"
        if problem.startswith("but ") and exc.context:
            problem = f"{exc.context}, {problem}"
        document.report_at(*_position(mark), f"invalid YAML: {problem}")
    except yaml.YAMLError as exc:
        document.report_at(1, 1, f"invalid YAML: {exc}")
    except _Unreadable as exc:
        if exc.path:  # the top-level key whose value is too big or too deep
            document.report_at(*positions.find(exc.path[:1], key=True), exc.message)
        else:
            document.report_at(*_position(exc.mark), exc.message)
    finally:
        loader.dispose()
    return document


_TIMESTAMP = "tag:yaml.org,2002:timestamp"
DATED_FILES = ("waivers.yaml",)  # the files with date keys (`expires`)


class _Builder:
    """Turns composed YAML nodes into plain data, recording where every value starts."""

    def __init__(self, loader: Any, positions: Positions, document: _Document):
        self.loader = loader
        self.positions = positions
        self.document = document
        self.count = 0
        self.merged: dict[int, set[int]] = {}  # mapping node -> ids of keys merged by `<<`

    def build(self, node: yaml.Node, path: JsonPath, depth: int) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise _Unreadable(node.start_mark, f"too many values (more than {MAX_NODES})", path)
        if depth > MAX_DEPTH:
            raise _Unreadable(node.start_mark, f"nested deeper than {MAX_DEPTH} levels", path)
        self.positions.values[path] = _position(node.start_mark)
        if isinstance(node, yaml.ScalarNode):
            if node.tag == _TIMESTAMP and self.document.kind in DATED_FILES:
                # A date (`expires: 2027-03-31`) stays the text it is: the data is JSON. In
                # the other files no key is a date, and an unquoted one is asked to be quoted.
                return str(node.value)
            return self.loader.construct_object(node)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i), depth + 1) for i, item in enumerate(node.value)]
        assert isinstance(node, yaml.MappingNode)
        return self._mapping(node, path, depth)

    def _mapping(self, node: yaml.MappingNode, path: JsonPath, depth: int) -> dict[str, Any]:
        if id(node) not in self.merged:  # an alias visits the same node again
            written = {id(key) for key, _ in node.value}
            self.loader.flatten_mapping(node)
            self.merged[id(node)] = {id(key) for key, _ in node.value} - written
        merged = self.merged[id(node)]
        result: dict[str, Any] = {}
        first: dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise _Unreadable(key_node.start_mark, "a key must be a plain string")
            key = str(key_node.value)
            if key in first and id(key_node) not in merged and id(first[key]) not in merged:
                line = first[key].start_mark.line + 1
                self.document.report_at(
                    *_position(key_node.start_mark),
                    f"duplicate key {key!r} (first at line {line})",
                    (*path, key),
                )
            first.setdefault(key, key_node)
            child = (*path, key)
            self.positions.keys[child] = _position(key_node.start_mark)
            result[key] = self.build(value_node, child, depth + 1)
        return result


def _position(mark: yaml.Mark | None) -> Position:
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


# Steps 2 and 3: schema, then models


# List (by id) -> (id of the `items` schema, indexes of its items that passed it before).
_UNCHANGED: ContextVar[dict[int, tuple[int, set[int]]] | None] = ContextVar(
    "_UNCHANGED", default=None
)
_ITEMS = Draft202012Validator.VALIDATORS["items"]


def _items(validator: Any, items: Any, instance: Any, schema: Any) -> Iterator[SchemaError]:
    """The `items` keyword, except that items known to pass this very schema (unchanged
    items of a top-level list, see `_unchanged_items`) are not checked again: they would
    give no error."""
    known = (_UNCHANGED.get() or {}).get(id(instance))
    if known is None or known[0] != id(items) or "prefixItems" in schema:
        yield from _ITEMS(validator, items, instance, schema)
        return
    for index, item in enumerate(instance):
        if index not in known[1]:
            yield from validator.descend(instance=item, schema=items, path=index)


_Validator = validators.extend(Draft202012Validator, {"items": _items})


@cache
def _validator(name: str) -> Draft202012Validator:
    return _Validator(gitops_schema(name))


@cache
def _top_level_lists(name: str) -> dict[str, Any]:
    """Top-level key -> `items` schema of each list that the schema of `name` always checks
    the same way, item by item (no combinator, condition or dynamic reference above or in
    it), so an item that passed it once passes it again; {} when the schema is not that."""
    schema = _validator(name).schema
    plain_root = {"$schema", "$id", "$defs", "title", "description", "type", "required"}
    plain_root |= {"properties", "additionalProperties"}
    text = json.dumps(schema)
    if set(schema) - plain_root or any(
        word in text for word in ("$dynamicRef", "$recursiveRef", "unevaluated")
    ):
        return {}
    lists: dict[str, Any] = {}
    for key, sub in schema.get("properties", {}).items():
        plain_list = {"title", "description", "default", "type", "items", "minItems", "maxItems"}
        if isinstance(sub, dict) and isinstance(sub.get("items"), dict) and set(sub) <= plain_list:
            lists[key] = sub["items"]
    return lists


def _unchanged_items(name: str, data: Any, earlier: Any) -> dict[int, tuple[int, set[int]]]:
    """For each top-level list of `data`: the indexes of its items that are also items of
    that list in `earlier` (same JSON values, types included)."""
    known: dict[int, tuple[int, set[int]]] = {}
    if not isinstance(data, dict) or not isinstance(earlier, dict):
        return known
    for key, items_schema in _top_level_lists(name).items():
        new, old = data.get(key), earlier.get(key)
        if not isinstance(new, list) or not isinstance(old, list):
            continue
        unchanged: set[int] = set()
        old_texts: set[str] | None = None
        for index, item in enumerate(new):
            if index < len(old) and _same(item, old[index]):
                unchanged.add(index)
                continue
            if old_texts is None:  # the items moved: compare by value
                old_texts = {text for text in map(_canonical, old) if text is not None}
            text = _canonical(item)
            if text is not None and text in old_texts:
                unchanged.add(index)
        known[id(new)] = (id(items_schema), unchanged)
    return known


def _same(a: Any, b: Any) -> bool:
    """Equal JSON values of the same types (True is not 1, 1 is not 1.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(value, b[key]) for key, value in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return isinstance(a, str | int | float | bool | None) and a == b


def _canonical(value: Any) -> str | None:
    """One text per JSON value (types kept), None for what JSON cannot hold."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return None


def _validate(
    document: _Document | None,
    model: type[M],
    *,
    schema_checked: bool = False,
    earlier: Any = None,
) -> M | None:
    """Schema-check a parsed document and build its model; None when anything is wrong.
    `schema_checked`: the data passed the version and schema checks before (same bytes);
    `earlier`: the data of an earlier version that passed the schema (see `load_bundle`)."""
    if document is None or not document.parsed:
        return None
    data = document.data
    if schema_checked:
        return _build(document, model)
    if isinstance(data, dict) and isinstance(data.get("version"), int):
        version = data["version"]
        if version != VERSION and not isinstance(version, bool):
            document.report(
                ("version",), f"unsupported version {version}: only version {VERSION} exists"
            )
            return None
    clean = not document.problems
    before = len(document.problems)
    unchanged = _unchanged_items(document.kind, data, earlier) if earlier is not None else {}
    token = _UNCHANGED.set(unchanged)
    try:
        _explain_schema_errors(document, _validator(document.kind).iter_errors(data))
    finally:
        _UNCHANGED.reset(token)
    if len(document.problems) > before or not clean:
        return None
    return _build(document, model)


def _build(document: _Document, model: type[M]) -> M | None:
    data = document.data
    try:
        return model.model_validate(data)
    except ModelError as exc:
        errors = exc.errors()
        # A value refused by a validator inside a union (`url: X | None`, a watch name or an
        # inline watch) also fails the other members; their "should be None" is noise.
        refused = [_data_path(data, e["loc"]) for e in errors if e["type"] == "value_error"]
        for error in errors:
            path = _data_path(data, error["loc"])
            noise = path and any(p[: len(path)] == path for p in refused)
            if error["type"] != "value_error" and noise:
                continue
            message = str(error["msg"]).removeprefix("Value error, ")
            document.report(path, f"{_subject(path)}: {message}")
        return None


def _data_path(data: Any, loc: Sequence[str | int]) -> JsonPath:
    # pydantic's loc also names union members ('str', 'InlineWatch'); keep what is in the data.
    path: list[str | int] = []
    for part in loc:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            continue
        path.append(part)
    return tuple(path)


_PRIORITY = {"type": 0, "const": 1, "enum": 1}


def _explain_schema_errors(document: _Document, errors: Iterator[SchemaError]) -> None:
    """Report schema errors; of several about one value, the most basic (type first)."""
    found: dict[tuple[JsonPath, bool, str], tuple[int, str]] = {}
    for error in errors:
        for path, message, key, slot in _explain(error):
            rank = _PRIORITY.get(str(error.validator), 2)
            where = (path, key, slot)
            if where not in found or rank < found[where][0]:
                found[where] = (rank, message)
    for (path, key, _), (_, message) in found.items():
        document.report(path, message, key=key)


def _explain(error: SchemaError) -> Iterator[tuple[JsonPath, str, bool, str]]:
    """(path, message, at the key?, slot) for one schema error; slot separates distinct
    errors at one path (each missing key, each unknown key)."""
    path: JsonPath = tuple(error.absolute_path)
    kind = str(error.validator)
    instance = error.instance
    subject = _subject(path)
    if "propertyNames" in error.absolute_schema_path:
        yield (*_bad_key(path, str(instance), kind), True, "")
    elif kind in ("anyOf", "oneOf"):
        yield from _explain_alternatives(error, path)
    elif kind == "required":
        otherwise = "else" in error.absolute_schema_path
        for name in error.validator_value:
            if isinstance(instance, dict) and name not in instance:
                message = f"missing required key {name!r}"
                if otherwise:
                    message = f"missing {name!r}: give template, or url and watchType"
                yield path + (name,), message, False, f"required:{name}"
    elif kind == "additionalProperties" and error.validator_value is False:
        known = list(error.schema.get("properties", {}))
        for name in instance:
            if name not in known:
                yield path + (name,), _unknown_key(name, known), True, f"unknown:{name}"
    elif kind == "not" and isinstance(error.validator_value, dict):
        for name in error.validator_value.get("required", []):
            message = f"{name} comes from the template; remove it"
            yield path + (name,), message, True, ""
    elif kind == "type":
        yield path, _wrong_type(subject, instance, error.validator_value), False, ""
    elif kind == "const" and path == ("version",):
        yield path, f"unsupported version: only version {VERSION} exists", False, ""
    elif kind == "enum":
        options = ", ".join(str(option) for option in error.validator_value)
        shown = f", not {_show(instance)}" if _is_showable(path, instance) else ""
        yield path, f"{subject} must be one of {options}{shown}", False, ""
    elif kind == "pattern" and error.validator_value == ENV_VALUE_PATTERN:
        yield path, f"{subject}: {_bad_secret(instance)}", False, ""
    elif kind == "pattern":
        yield path, f"{subject} {_bad_pattern(path, instance, error.validator_value)}", False, ""
    else:
        yield path, f"{subject} {_bad_size(kind, error.validator_value, error.message)}", False, ""


def _explain_alternatives(error: SchemaError, path: JsonPath) -> Iterator[Any]:
    # Explain the alternative whose type fits (a string, or an inline watch mapping);
    # when none fits, say which types would.
    branches: dict[int, list[SchemaError]] = {}
    for sub in error.context or []:
        branches.setdefault(int(sub.relative_schema_path[0]), []).append(sub)
    wrong_type = {
        index: [e for e in errs if e.validator == "type" and not e.relative_path]
        for index, errs in branches.items()
    }
    fitting = [index for index, errs in wrong_type.items() if not errs]
    if len(fitting) == 1:
        for sub in branches[fitting[0]]:
            yield from _explain(sub)
        return
    expected = [e.validator_value for errs in wrong_type.values() for e in errs]
    message = _wrong_type(_subject(path), error.instance, expected)
    if len(path) == 4 and path[0] == "agents" and path[2] == "watches":
        message = f"{_subject(path)} must be a watch name, id or URL, or an inline watch "
        message += "{name, url, watchType}"
    yield path, message, False, ""


_TYPE_NAMES = {
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "a mapping",
    "null": "empty",
}


def _wrong_type(subject: str, instance: Any, expected: Any) -> str:
    names = []
    for item in expected if isinstance(expected, list) else [expected]:
        name = _TYPE_NAMES.get(str(item), str(item))
        if name not in names:
            names.append(name)
    if subject == "the file":
        return "the file must be a mapping that starts with `version: 1`"
    message = f"{subject} must be {' or '.join(names)}, not {_describe(instance)}"
    if names == ["a string"] and isinstance(instance, bool | int | float | date):
        message += " (quote the value)"
    return message


def _describe(instance: Any) -> str:
    if instance is None:
        return "empty"
    if isinstance(instance, bool):
        return "true or false"
    if isinstance(instance, int | float):
        return "a number"
    if isinstance(instance, str):
        return "a string"
    if isinstance(instance, list):
        return "a list"
    if isinstance(instance, dict):
        return "a mapping"
    return f"a {type(instance).__name__}"


def _bad_key(parent: JsonPath, name: str, kind: str) -> tuple[JsonPath, str]:
    path = parent + (name,)
    if parent and parent[-1] == "headers":
        return path, f"{name!r} is not a valid header name"
    if parent == ("policies",):
        if kind == "not":
            return path, f"policy {name!r} shadows the built-in preset; choose another name"
        return path, f"policy name {name!r} {_PATTERN_HINTS[SLUG_PATTERN]}"
    return path, f"key {name!r} is not allowed"


_KNOWN_MISTAKES = {
    "type": "watchType",
    "watchType": "type",
    "repo_ref": "repoRef",
    "runtimeWebhook": "runtime_webhook",
}


def _unknown_key(name: str, known: list[str]) -> str:
    hint = _KNOWN_MISTAKES.get(name)
    if hint not in known:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = close[0] if close else None
    if hint:
        return f"unknown key {name!r}: did you mean {hint!r}?"
    return f"unknown key {name!r} (expected {', '.join(known)})"


_PATTERN_HINTS = {
    SLUG_PATTERN: "must be a lowercase slug: a-z, 0-9, '-' and '_', at most 64 characters, "
    "starting and ending with a letter or digit",
    ENVIRONMENT_PATTERN: "must be letters, digits, '.', '_' or '-' (at most 64 characters)",
    REPO_REF_PATTERN: "must look like owner/repo@branch",
    HEADER_VALUE_PATTERN: "must not contain line breaks",
    URL_PATTERN: "must be an absolute http:// or https:// URL",
    HTTPS_URL_PATTERN: "must be an https:// URL",
    URL_TEMPLATE_PATTERN: "must be an absolute http:// or https:// URL ({placeholders} allowed)",
    NAME_PATTERN: "must not contain control characters or start or end with a space",
    NOTE_PATTERN: "must not contain NUL or other control characters (tabs and line breaks are "
    "fine)",
    LABEL_PATTERN: "must not be empty or contain control characters",
}
_TAG_HINT = "must be a tag: letters, digits and _.:/=@+-, starting with a letter or digit"


def _bad_secret(instance: Any) -> str:
    if isinstance(instance, str) and "${env:" in instance:
        return "write ${env:NAME} with NAME in A-Z, 0-9 and _ (the whole value)"
    return SECRET_MESSAGE


def _bad_pattern(path: JsonPath, instance: Any, pattern: str) -> str:
    if pattern in (URL_PATTERN, HTTPS_URL_PATTERN, URL_TEMPLATE_PATTERN, NAME_PATTERN):
        explain = explain_bad_name if pattern == NAME_PATTERN else explain_bad_url
        try:
            explain(instance)
        except ValueError as exc:
            return str(exc)
    if "tags" in path:
        return _TAG_HINT
    return _PATTERN_HINTS.get(pattern, "has an invalid format")


def _bad_size(kind: str, limit: Any, fallback: str) -> str:
    messages = {
        "minLength": "must not be empty"
        if limit == 1
        else f"must have at least {limit} characters",
        "maxLength": f"must have at most {limit} characters",
        "minItems": "must not be empty" if limit == 1 else f"must have at least {limit} items",
        "maxItems": f"must have at most {limit} items",
        "maxProperties": f"must have at most {limit} entries",
        "minimum": f"must be at least {limit}",
        "maximum": f"must be at most {limit}",
        "uniqueItems": "must not list the same value twice",
    }
    return messages.get(kind, "is invalid")


def _is_showable(path: JsonPath, instance: Any) -> bool:
    return "headers" not in path and isinstance(instance, str | int) and len(str(instance)) <= 60


def _show(instance: Any) -> str:
    return repr(instance)


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def json_path(path: Sequence[str | int]) -> str:
    """`("agents", 2, "policy")` -> `agents[2].policy`; odd keys as `headers["X Y"]`."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _IDENTIFIER.match(part):
            text += f".{part}" if text else part
        else:
            text += '["' + part.replace("\\", "\\\\").replace('"', '\\"') + '"]'
    return text


def _subject(path: JsonPath) -> str:
    """How a message names the value at `path`: `runtime_webhook`, `watches[1]`, `header X`."""
    if not path:
        return "the file"
    if len(path) >= 2 and path[-2] == "headers":
        return f"header {path[-1]}"
    index = len(path)
    while index > 0 and isinstance(path[index - 1], int):
        index -= 1
    return json_path(path[max(index - 1, 0) :])


def _join(directory: str, name: str) -> str:
    if name in (HOSTED_AGENTS, HOSTED_LOCK):  # beside the directory, not in it
        return posixpath.join(posixpath.dirname(directory.rstrip("/")), name)
    return f"{directory.rstrip('/')}/{name}" if directory else name


def _meant_file(name: str) -> str | None:
    stem, dot, suffix = name.rpartition(".")
    if not dot or suffix.lower() not in ("yaml", "yml", "json"):
        return None
    stems = {expected.removesuffix(".yaml"): expected for expected in FILES}
    close = difflib.get_close_matches(stem.lower().replace("_", "-"), list(stems), 1, 0.75)
    return stems[close[0]] if close else None


# Step 4: what the schema cannot see


class _Checks:
    """Cross-checks within and across files, reported at the second occurrence."""

    def __init__(
        self,
        documents: Mapping[str, _Document],
        known_templates: set[str],
        known_watches: set[str],
        org: Collection[str] | None = None,
    ):
        self.documents = documents
        self.known_templates = known_templates
        self.known_watches = known_watches
        self.org = None if org is None else {name.lower() for name in org}
        # watch name -> (URL or None when it comes from a template we cannot see, type, where)
        self.watches: dict[str, tuple[str | None, str | None, str, JsonPath]] = {}

    def run(self, bundle: Bundle) -> None:
        templates: dict[str, Template] | None = None
        if bundle.templates is not None:
            templates = self._templates(bundle.templates)
        elif "templates.yaml" not in self.documents:
            templates = {}
        if bundle.watch_set_files:
            self._watch_sets(bundle.watch_set_files, templates)
        if bundle.agent_files:
            self._agents(bundle.agent_files)
        if bundle.dashboards is not None:
            document = self.documents["dashboards.yaml"]
            names: dict[str, JsonPath] = {}
            for i, dashboard in enumerate(bundle.dashboards.dashboards):
                _unique(document, names, dashboard.name, ("dashboards", i, "name"), "dashboard")

    def _templates(self, file: TemplatesFile) -> dict[str, Template]:
        document = self.documents["templates.yaml"]
        seen: dict[str, JsonPath] = {}
        for i, template in enumerate(file.templates):
            _unique(document, seen, template.name, ("templates", i, "name"), "template name")
        return {template.name: template for template in reversed(file.templates)}

    def _watch_sets(
        self, files: Mapping[str, WatchSetsFile], templates: dict[str, Template] | None
    ) -> None:
        """Set names and watch names are unique across every watch-set file (one namespace:
        each becomes one object of the org); a repeat is reported with where the first is."""
        set_names: dict[str, tuple[_Document, JsonPath]] = {}
        watch_names: dict[str, tuple[_Document, JsonPath]] = {}
        for name, file in files.items():
            document = self.documents[name]
            for i, watch_set in enumerate(file.watch_sets):
                where: JsonPath = ("watchSets", i, "name")
                _unique_across(document, set_names, watch_set.name, where, "watch set")
                for j, entry in enumerate(watch_set.watches):
                    here: JsonPath = ("watchSets", i, "watches", j)
                    _unique_across(document, watch_names, entry.name, (*here, "name"), "watch")
                    template = self._template(document, entry, here, templates)
                    url = entry.url or (template.url_pattern if template else None)
                    kind = entry.watch_type or (template.watch_type if template else None)
                    self.watches.setdefault(entry.name, (url, kind, name, here))

    def _template(
        self,
        document: _Document,
        entry: WatchSetEntry,
        here: JsonPath,
        templates: dict[str, Template] | None,
    ) -> Template | None:
        """The templates.yaml template of an entry; reports unknown names and missing URLs."""
        if entry.template is None or templates is None:
            return None
        template = templates.get(entry.template)
        if template is not None:
            if "{" in template.url_pattern and entry.url is None:
                document.report(
                    (*here, "template"),
                    f"template {entry.template!r} has {{placeholders}} in its urlPattern: give url",
                )
            return template
        if entry.template not in self.known_templates:
            choices = sorted({*templates, *self.known_templates})
            document.report(
                (*here, "template"),
                f"unknown template {entry.template!r}: not in templates.yaml"
                + (" or the catalog" if self.known_templates else "")
                + _suggest(entry.template, choices),
            )
        return None

    def _agents(self, files: Mapping[str, AgentsFile]) -> None:
        """agents.yaml and the hosted `.driftguard/agents.yaml` are one namespace: agent ids
        and slugs, policy names and watch names; a repeat names the file and line of the
        first."""
        names: dict[str, tuple[_Document, JsonPath]] = {}  # every id and slug routes to one
        declared: dict[str, tuple[_Document, JsonPath]] = {}
        for name, file in files.items():
            document = self.documents[name]
            self._org(document, file)
            for policy in file.policies:
                _unique_across(document, declared, policy, ("policies", policy), "policy")
        policies = [*ALL_PRESETS, *declared]
        by_url = self._watches_by_url(files)
        for name, file in files.items():
            document = self.documents[name]
            for i, agent in enumerate(file.agents):
                _unique_across(document, names, agent.id, ("agents", i, "id"), "agent id or slug")
                if agent.slug != agent.id:
                    where: JsonPath = ("agents", i, "slug")
                    _unique_across(document, names, agent.slug, where, "agent id or slug")
                if agent.policy not in policies:
                    document.report(
                        ("agents", i, "policy"),
                        f"unknown policy {agent.policy!r}: use a preset "
                        f"({', '.join(POLICY_PRESETS)}) or declare it under policies"
                        + _suggest(agent.policy, policies),
                    )
                listed: dict[str, JsonPath] = {}
                for j, watch in enumerate(agent.watches):
                    path: JsonPath = ("agents", i, "watches", j)
                    if isinstance(watch, InlineWatch) and watch.name is None:
                        key = (watch.url, watch.watch_type.value)
                        watch.name = by_url.get(key) or derived_name(watch.url)
                    ref = watch.name if isinstance(watch, InlineWatch) else watch
                    assert ref is not None
                    if _unique(document, listed, ref, path, "watch") and isinstance(
                        watch, InlineWatch
                    ):
                        self._inline(document, watch, path)
                self._hosted_rules(document, agent, i)
        # After every inline declaration is known: references one typo away from a watch.
        for name, file in files.items():
            for i, agent in enumerate(file.agents):
                for j, watch in enumerate(agent.watches):
                    if isinstance(watch, str):
                        self._reference(self.documents[name], watch, ("agents", i, "watches", j))

    def _watches_by_url(self, files: Mapping[str, AgentsFile]) -> dict[tuple[str, str], str]:
        """(URL, type) -> the name of the watch these files declare with them by name (watch
        sets first, then named inline watches): what an unnamed inline watch refers to."""
        by_url: dict[tuple[str, str], str] = {}
        for watch_name, (url, kind, _, _) in self.watches.items():
            if url is not None and kind is not None:
                by_url.setdefault((url, str(WatchType(kind).value)), watch_name)
        for file in files.values():
            for agent in file.agents:
                for watch in agent.watches:
                    if isinstance(watch, InlineWatch) and watch.name is not None:
                        by_url.setdefault((watch.url, watch.watch_type.value), watch.name)
        return by_url

    def _org(self, document: _Document, file: AgentsFile) -> None:
        if file.org is None or self.org is None or file.org.lower() in self.org:
            return
        document.report(
            ("org",),
            f"org {file.org!r} is not the org this source applies to; fix it or remove the "
            "key (the source's org decides)",
        )

    def _hosted_rules(self, document: _Document, agent: Any, i: int) -> None:
        """The hosted product's own checks of an agent: an `a2a.cardUrl` needs an `a2a_card`
        watch of that URL and a non-empty `mcp.skillToolMap`; in the hosted file, an `mcp`
        watch needs `mcp.configPath` (driftgate's own files watch an MCP server by URL and
        need no client configuration)."""
        watches = [self._kind_of(watch) for watch in agent.watches]
        if agent.a2a is not None:
            card = agent.a2a.card_url
            if (card, A2A_CARD.name) not in watches:
                document.report(
                    ("agents", i, "a2a", "cardUrl"),
                    "a2a.cardUrl needs a watch of type a2a_card with the same URL in this "
                    "agent's watches (add {type: a2a_card, url: <the card URL>})",
                )
            if agent.mcp is None or not agent.mcp.skill_tool_map:
                document.report(
                    ("agents", i, "a2a"),
                    "a2a.cardUrl needs mcp.skillToolMap: map each A2A skill to its MCP tools",
                )
        if document.hosted and agent.mcp is None:
            for j, (_, kind) in enumerate(watches):
                if kind == MCP.name:
                    document.report(
                        ("agents", i, "watches", j),
                        "an mcp watch needs mcp.configPath (the agent's MCP client "
                        "configuration) in the hosted agents.yaml",
                    )
                    break

    def _kind_of(self, watch: str | InlineWatch) -> tuple[str | None, str | None]:
        """(URL, type) of an agent's watch: inline, or a watch these files declare."""
        if isinstance(watch, InlineWatch):
            return watch.url, watch.watch_type.value
        url, kind, _, _ = self.watches.get(watch, (None, None, "", ()))
        return url, None if kind is None else str(WatchType(kind).value)

    def _reference(self, document: _Document, ref: str, path: JsonPath) -> None:
        if ref in self.watches or ref in self.known_watches or "://" in ref:
            return
        close = difflib.get_close_matches(ref, [*self.watches, *self.known_watches], 1, 0.8)
        if close:
            where = "in these files" + (" or the org" if self.known_watches else "")
            document.report(
                path,
                f"unknown watch {ref!r}: no watch of that name {where}; did you mean {close[0]!r}?",
            )

    def _inline(self, document: _Document, watch: InlineWatch, path: JsonPath) -> None:
        """An inline watch may repeat a declaration, but not contradict it."""
        assert watch.name is not None
        url, kind, file, where = self.watches.setdefault(
            watch.name, (watch.url, watch.watch_type, document.name, path)
        )
        if (url is not None and url != watch.url) or (
            kind is not None and kind != watch.watch_type
        ):
            source = self.documents[file]
            line = source.positions.find(where)[0] if source.positions else 1
            document.report(
                (*path, "name"),
                f"watch {watch.name!r} is declared with another URL or type in "
                f"{file} (line {line}); refer to it by name",
            )


def _unique(
    document: _Document, seen: dict[str, JsonPath], value: str, path: JsonPath, what: str
) -> bool:
    """Remember `value`; report it and return False when it was seen before."""
    if value in seen:
        line = document.positions.find(seen[value])[0] if document.positions else 1
        document.report(path, f"duplicate {what} {value!r} (first at line {line})")
        return False
    seen[value] = path
    return True


def _unique_across(
    document: _Document,
    seen: dict[str, tuple[_Document, JsonPath]],
    value: str,
    path: JsonPath,
    what: str,
) -> bool:
    """`_unique` over several files: a repeat names the file and line of the first."""
    if value in seen:
        first, first_path = seen[value]
        line = first.positions.find(first_path)[0] if first.positions else 1
        where = f"line {line}" if first is document else f"{first.file}:{line}"
        document.report(path, f"duplicate {what} {value!r} (first at {where})")
        return False
    seen[value] = (document, path)
    return True


def _suggest(value: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
