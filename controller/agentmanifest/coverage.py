"""A2A coverage, pure: a manifest's watches against the org's, matched by URL and type family.

The manifest is read exactly as `.driftguard/agents.yaml` is read in git (`load_manifest`),
so a manifest that passes here passes `driftgate validate`, and the other way round.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import yaml
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from controller.contracts.kinds import CONTRACT_KINDS
from controller.gitsources.configschema import gitops_schema
from controller.gitsources.load import HOSTED_AGENTS, Bundle, Problem, load_bundle
from controller.model.gitops import InlineWatch
from controller.model.watch import WatchType

# Where problems of a manifest sent in a request body are said to be.
MANIFEST_DIRECTORY = "manifest/.driftgate"


@dataclass(frozen=True)
class OrgWatch:
    """One of the org's watches, as coverage matches it."""

    id: str
    name: str
    url: str
    watch_type: str


@dataclass
class AgentCoverage:
    """One agent of the manifest: its watches, the matching org watch of each (or None)."""

    id: str
    slug: str
    watches: list[tuple[str | None, str, str | None]] = field(default_factory=list)

    @property
    def missing(self) -> list[tuple[str | None, str]]:
        """(type, url) of the watches no org watch matches."""
        return [(kind, url) for kind, url, found in self.watches if found is None]


def load_manifest(manifest: dict[str, Any]) -> Bundle:
    """The manifest, checked as the hosted `.driftguard/agents.yaml` (every file:line rule
    of the git files, the hosted product's own checks included)."""
    # YAML (not JSON) text: YAML 1.1 reads `1e+20` as a string, yaml.safe_dump writes numbers
    # it reads back as numbers.
    text = yaml.safe_dump(manifest, sort_keys=False, allow_unicode=False, width=1_000_000)
    return load_bundle({HOSTED_AGENTS: text.encode()}, directory=MANIFEST_DIRECTORY)


def is_well_formed(manifest: dict[str, Any]) -> bool:
    """Whether the manifest matches the published schema of agents.yaml (what is wrong beyond
    it, a duplicate id or an unknown policy, no schema can say)."""
    return bool(_schema().is_valid(manifest))


@cache
def _schema() -> Draft202012Validator:
    return Draft202012Validator(gitops_schema("agents.yaml"))


def pointer(problem: Problem, prefix: str = "/manifest") -> str:
    """The JSON pointer of a problem in the request body."""
    parts = [str(part).replace("~", "~0").replace("/", "~1") for part in problem.parts]
    return "/".join([prefix, *parts]) if parts else prefix


def normalized(url: str) -> str:
    """URLs match as the coverage gate matches them: without a trailing slash, any case."""
    return url.rstrip("/").lower()


def family(watch_type: str) -> str:
    """Types that watch the same kind of contract (`ContractKind.family`): `openapi` and
    `rest` (the hosted `api`) are both an HTTP API, whichever way driftgate reads it; `mcp`
    and `a2a_card` stand alone."""
    kind = CONTRACT_KINDS.read(watch_type)
    return kind.family if kind is not None else watch_type


def match(bundle: Bundle, watches: Iterable[OrgWatch]) -> list[AgentCoverage]:
    """Each agent's watches, each with the org watch of the same URL and type family (an
    inline watch), or of that name, id or URL (a reference). Nothing is created."""
    by_url: dict[tuple[str, str], str] = {}
    by_ref: dict[str, str] = {}
    for row in watches:
        by_url.setdefault((normalized(row.url), family(row.watch_type)), row.id)
        by_ref.setdefault(row.id, row.id)
        by_ref.setdefault(row.name, row.id)
        by_ref.setdefault(normalized(row.url), row.id)
    agents = []
    for agent in bundle.agents.agents if bundle.agents else []:
        covered = AgentCoverage(id=agent.id, slug=agent.slug)
        for watch in agent.watches:
            if isinstance(watch, InlineWatch):
                kind = WatchType(watch.watch_type).value
                found = by_url.get((normalized(watch.url), family(kind)))
                covered.watches.append((kind, watch.url, found))
            else:
                found = by_ref.get(watch) or by_ref.get(normalized(watch))
                covered.watches.append((None, watch, found))
        agents.append(covered)
    return agents


def missing_urls(agents: Iterable[AgentCoverage]) -> list[str]:
    """The URLs (or references) no org watch matches, each once, in manifest order."""
    return list(dict.fromkeys(url for agent in agents for _, url in agent.missing))
