"""The shape of a contract kind and the registry of them.

A `ContractKind` is everything driftgate decides by watch type: its names (in the API, the
`.driftgate/` files, `driftgate diff`, the console), how its contract is fetched (the name of a
fetch adapter, bound by the check engine: a document over HTTP or an MCP session), read,
diffed, listed (its surface) and compared for overlap, and how a URL or a document tells it.
`ContractKinds` answers the questions asked across kinds: which kind a spelling, a URL, a
served answer or a document is, and the lists of names each surface shows.

Pure and light: stdlib only at import (the types of the engines' values are read by mypy
alone).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from controller.registry import Registry

if TYPE_CHECKING:
    from controller.diffs.overlap import Overlap
    from controller.diffs.surface import Item
    from controller.model.change import Change

# The fetch adapters a kind can name (`ContractKind.fetch`); `controller.checks.engine` binds
# each to its client.
HTTP_DOCUMENT = "http"  # one document over HTTP: a conditional GET, or the watch's method
MCP_SESSION = "mcp"  # an MCP session: initialize, then list tools, resources and prompts

# (bytes, the URL or path they came from) -> the document; the source names the place in
# messages, and a `.json` name reads JSON first.
Loader = Callable[[bytes, "str | None"], Any]


@dataclass(frozen=True)
class DiffContext:
    """What a diff is asked beside its two documents. A watch's check diffs with `today` (its
    clock, for sunset windows), grouped by cause, with the lenient `hosted` profile of samples;
    `driftgate diff` also passes how to resolve references to other files (`resolver`, from
    `base_uri` and `revision_uri`), may ask for every occurrence (`grouped=False`, for a rules
    file or `--flat`) and for version checks."""

    today: date
    grouped: bool = True
    check_version: bool = False
    profile: Literal["cli", "hosted"] = "hosted"
    resolver: Callable[[str], Any] | None = None
    base_uri: str = ""
    revision_uri: str = ""


@dataclass(frozen=True)
class ContractKind:
    """One kind of contract. Required: `name` (the watch type, as the API, the files, the CLI
    and the tool server write it), `fetch` (`HTTP_DOCUMENT` or `MCP_SESSION`), `load` (a
    fetched answer's bytes to a document, `ContractParseError` when it is not one; the second
    argument is the URL it came from) and `diff` (baseline, document, context: the
    changes, grouped by cause when the context asks).

    The rest is optional:
    - `label`: the console's name of the type (default: `name`);
    - `noun`: what the contract is made of, as pages and reports say (`operations`, `tools`);
      with `surface` (a document's items, in document order) and `overlap` (what two
      documents share); None for a contract with nothing to list (a REST sample);
    - `url_hint(path, host)`: why a URL names this kind (the reason discovery shows), or None;
      `path` is lower case without a trailing slash, `host` lower case;
    - `looks_like(document)`: a parsed document has this kind's shape; the one kind without
      it is the catch-all (any JSON document);
    - `served_as`: content types that alone tell an answer is this kind (an SSE stream);
    - `load_file`: how `driftgate diff` reads a file of this kind (default: `load`);
    - `diff_type`: its name in `driftgate diff --type` and in diff reports (default: `name`);
    - `aliases`: other spellings read as this kind (the hosted product's `api`);
    - `family`: kinds of one family watch the same contract whichever way driftgate reads it
      (`openapi` and `rest` are both an HTTP API); default: its own;
    - `words`: words that name it in an Ask question, besides its name;
    - `lints_tools`: its contract is a list of tools an agent calls (the tool lint reads it);
    - `display_rank`: where it stands in the lists people pick from (the console's selects,
      discovery's candidates); the API's enums keep registration order.
    """

    name: str
    fetch: str
    load: Loader
    diff: Callable[[Any, Any, DiffContext], list[Change]]
    label: str = ""
    noun: str | None = None
    surface: Callable[[Any], list[Item]] | None = None
    overlap: Callable[[Any, Any], Overlap] | None = None
    url_hint: Callable[[str, str], str | None] | None = None
    looks_like: Callable[[Any], bool] | None = None
    served_as: tuple[str, ...] = ()
    load_file: Loader | None = None
    diff_type: str = ""
    aliases: tuple[str, ...] = ()
    family: str = ""
    words: tuple[str, ...] = ()
    lints_tools: bool = False
    display_rank: int = 100

    def __post_init__(self) -> None:
        # Unset names default to the kind's own.
        for attribute in ("label", "diff_type", "family"):
            if not getattr(self, attribute):
                object.__setattr__(self, attribute, self.name)

    def read_file(self, data: bytes, where: str | None) -> Any:
        """A file (or URL) given to `driftgate diff` as a document of this kind."""
        return (self.load_file or self.load)(data, where)


class ContractKinds(Registry[ContractKind]):
    """The contract kinds, in registration order (the order of the API's enums)."""

    what = "contract kind"

    def __init__(self, kinds: Iterable[ContractKind] = ()) -> None:
        self._aliases: dict[str, ContractKind] = {}
        self._diff_types: dict[str, ContractKind] = {}
        self._catch_all: ContractKind | None = None
        super().__init__(kinds)

    def _changed(self) -> None:
        spellings: dict[str, str] = {}
        for kind in self:
            for spelling in (kind.name, *kind.aliases):
                if spellings.setdefault(spelling.lower(), kind.name) != kind.name:
                    raise ValueError(f"{spelling!r} names two contract kinds")
        self._aliases = {alias.lower(): kind for kind in self for alias in kind.aliases}
        self._diff_types = {kind.diff_type: kind for kind in self}
        if len(self._diff_types) != len(self.names()):
            raise ValueError("two contract kinds share a diff type")
        catch_all = [kind for kind in self if kind.looks_like is None]
        if len(catch_all) > 1:
            names = [kind.name for kind in catch_all]
            raise ValueError(f"only one kind can read any JSON document, not {names}")
        self._catch_all = catch_all[0] if catch_all else None

    def of(self, name: str) -> ContractKind:
        """The kind of a stored or validated watch type; `KeyError` for any other string."""
        kind = self.get(name)
        if kind is None:
            raise KeyError(f"no contract kind {name!r}")
        return kind

    def read(self, spelling: str) -> ContractKind | None:
        """The kind a spelling names: its name, or an alias in any case."""
        return self.get(spelling) or self._aliases.get(spelling.lower())

    def names(self) -> tuple[str, ...]:
        return tuple(kind.name for kind in self)

    def listed(self) -> str:
        """The names as a sentence lists them: `openapi, rest, mcp or a2a_card`."""
        *first, last = self.names()
        return f"{', '.join(first)} or {last}" if first else last

    def spellings(self) -> tuple[str, ...]:
        """Every spelling a file or a tool call may use: the names, then the aliases."""
        return (*self.names(), *(alias for kind in self for alias in kind.aliases))

    def shown(self) -> tuple[ContractKind, ...]:
        """The kinds in the order people pick from (`display_rank`, then registration)."""
        return tuple(sorted(self, key=lambda kind: kind.display_rank))

    def specific_first(self) -> tuple[ContractKind, ...]:
        """The order in which kinds are told from a URL or a document: the most specific
        first, which is the reverse of registration (a kind added later is narrower than the
        general ones registered first: `mcp.example.com/openapi.json` is an MCP server)."""
        return tuple(reversed(list(self)))

    def infer(self, url: str) -> tuple[ContractKind, str] | None:
        """The kind a URL names and why, or None where the URL does not tell."""
        parts = urlsplit(url)
        path = parts.path.rstrip("/").lower()
        host = (parts.hostname or "").lower()
        for kind in self.specific_first():
            reason = kind.url_hint(path, host) if kind.url_hint is not None else None
            if reason is not None:
                return kind, reason
        return None

    def served_as(self, content_type: str) -> ContractKind | None:
        """The kind an answer's content type alone tells (an SSE stream: an MCP server)."""
        return next((kind for kind in self if content_type in kind.served_as), None)

    def detect(self, document: Any, *, fetch: str | None = None) -> ContractKind | None:
        """The kind whose shape a parsed document has (of those fetched by `fetch`, when
        given), most specific first; None when only the catch-all reads it."""
        for kind in self.specific_first():
            if kind.looks_like is None or (fetch is not None and kind.fetch != fetch):
                continue
            if kind.looks_like(document):
                return kind
        return None

    @property
    def catch_all(self) -> ContractKind:
        """The kind that reads any JSON document (`rest`)."""
        if self._catch_all is None:
            raise LookupError("no contract kind reads any JSON document")
        return self._catch_all

    def by_diff_type(self, name: str) -> ContractKind | None:
        return self._diff_types.get(name)

    def diff_types(self) -> tuple[str, ...]:
        """`driftgate diff --type`'s choices: the kinds a document tells, in registration
        order, then the catch-all (`json`)."""
        told = [kind.diff_type for kind in self if kind.looks_like is not None]
        return (*told, *(kind.diff_type for kind in self if kind.looks_like is None))

    def surface_of(self, name: str, document: Any) -> list[Item]:
        """The items (operations, tools, skills) of a stored document; none for a kind with
        nothing to list."""
        kind = self.of(name)
        return kind.surface(document) if kind.surface is not None else []
