"""The Ask grammar (pure): a question in words -> an intent and filters. Deterministic: the
same question, the same reading. docs/portfolio.md lists the grammar.

Intents, by the first rule whose words the question has:

    mttr            mttr, mean time to repair/recover/resolve, time to repair/fix, how fast/long
    mcp_health      mcp together with health, healthy, unhealthy, down, failing, broken, status,
                    up, ok, working
    coverage_gaps   gap(s), coverage, covered, stale, never run/checked, not checked, unwatched
    hotspots        hotspot(s), most, worst, top, which vendor(s), noisiest
    breaking_drift  breaking, broke, broken, break, drift(ed), changed, changes (without a
                    word of breaking, warning drift counts too: "which watches drifted")

Filters:

    window   today (1 day), yesterday (2), this/past/last week (7), this/past/last month (30),
             this/past/last quarter (90), this/past/last year (365), last/past N
             day(s)/week(s)/month(s)/year(s); else 30 days
    vendor   a vendor of the org named in the question (its whole name, or the distinctive
             word of its host: `api.stripe.com` -> `stripe`)
    tag      a tag of the org written out (`team:billing`), or the word after `tag`/`tagged`
    type     a watch type's name or its words (`controller.contracts.kinds`): openapi,
             rest/json, mcp, a2a_card/a2a (for intents other than mcp_health, which implies
             mcp)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from controller.contracts.kinds import CONTRACT_KINDS, MCP

INTENTS: dict[str, str] = {
    "breaking_drift": "Which contracts broke, and where the breaking drift came from",
    "mcp_health": "Whether the MCP servers are healthy, and which are not",
    "mttr": "Mean time to repair: from an incident's opening to its resolution",
    "hotspots": "The vendors and watches with the most breaking drift",
    "coverage_gaps": "Watches never checked, with stale checks, or failing",
}
EXAMPLES: dict[str, list[str]] = {
    "breaking_drift": ["what broke this week?", "breaking drift for stripe in the last 90 days"],
    "mcp_health": ["is any MCP server unhealthy?", "mcp health"],
    "mttr": ["MTTR for stripe last 90 days", "how fast do we repair drift this quarter?"],
    "hotspots": ["which vendors broke us most this quarter?", "top hotspots"],
    "coverage_gaps": ["which watches are stale?", "coverage gaps for tag team:billing"],
}
DEFAULT_DAYS = 30

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "mttr",
        re.compile(
            r"\bmttr\b|mean time to (repair|recover|resolve|fix)|time to (repair|fix|resolve)"
            r"|how (fast|long|quickly)"
        ),
    ),
    (
        "mcp_health",
        re.compile(
            r"\bmcp\b.*\b(health|healthy|unhealthy|down|failing|broken|status|up|ok|working)\b"
            r"|\b(health|healthy|unhealthy|down|failing|status|working)\b.*\bmcp\b"
        ),
    ),
    (
        "coverage_gaps",
        re.compile(
            r"\bgaps?\b|\bcoverage\b|\bcovered\b|\bstale\b|never (run|checked)|not checked"
            r"|\bunwatched\b"
        ),
    ),
    ("hotspots", re.compile(r"\bhotspots?\b|\bmost\b|\bworst\b|\btop\b|which vendors?|noisiest")),
    (
        "breaking_drift",
        re.compile(r"\bbreak(ing|s)?\b|\bbroke(n)?\b|\bdrift(ed|s)?\b|\bchange[ds]?\b"),
    ),
)

_UNITS = {"day": 1, "week": 7, "month": 30, "quarter": 90, "year": 365}
_NAMED = (
    (re.compile(r"\btoday\b"), 1),
    (re.compile(r"\byesterday\b"), 2),
)
_LAST_N = re.compile(r"\b(?:last|past|previous)\s+(\d{1,4})\s+(day|week|month|quarter|year)s?\b")
_THIS = re.compile(r"\b(?:this|past|last|previous)\s+(day|week|month|quarter|year)\b")
# Host labels and words that name no vendor in particular.
_NOISE = {
    "api",
    "www",
    "com",
    "io",
    "net",
    "org",
    "co",
    "dev",
    "app",
    "example",
    "v1",
    "v2",
    "mcp",
    "a2a",
    "tag",
    "tagged",
    "team",
    "server",
    "servers",
    "tool",
    "tools",
    "cloud",
    "service",
}


@dataclass(frozen=True)
class Reading:
    intent: str | None
    days: int = DEFAULT_DAYS
    vendor: str | None = None
    tag: str | None = None
    watch_type: str | None = None
    notes: list[str] = field(default_factory=list)
    any_severity: bool = False
    """A drift question that does not say breaking ("which watches drifted"): warning drift
    counts too."""


def window_days(question: str) -> int:
    text = question.lower()
    match = _LAST_N.search(text)
    if match:
        return max(1, min(730, int(match.group(1)) * _UNITS[match.group(2)]))
    match = _THIS.search(text)
    if match:
        return _UNITS[match.group(1)]
    for pattern, days in _NAMED:
        if pattern.search(text):
            return days
    return DEFAULT_DAYS


def vendor_words(vendor: str) -> set[str]:
    """The words a question may use for a vendor: its name, and its host's distinctive
    labels (`api.stripe.com` -> `stripe`)."""
    words = {vendor.lower()}
    words.update(
        label
        for label in re.split(r"[.\-_:/]+", vendor.lower())
        if len(label) > 2 and label not in _NOISE
    )
    return words


def read(question: str, vendors: Iterable[str] = (), tags: Iterable[str] = ()) -> Reading:
    text = " ".join(question.lower().split())
    intent = next((name for name, pattern in _RULES if pattern.search(text)), None)
    words = set(re.findall(r"[a-z0-9][a-z0-9._:\-]*", text))
    vendor = None
    for candidate in sorted(vendors, key=lambda v: (-len(v), v)):
        if vendor_words(candidate) & words:
            vendor = candidate
            break
    tag = None
    for candidate in sorted(tags, key=lambda t: (-len(t), t)):
        if candidate.lower() in words:
            tag = candidate
            break
    if tag is None:
        match = re.search(r"\btag(?:ged)?\s+([^\s,?]+)", text)
        known = {t.lower(): t for t in tags}
        if match and match.group(1) in known:
            tag = known[match.group(1)]
    # The MCP health intent is about MCP servers.
    watch_type = MCP.name if intent == "mcp_health" else _watch_type_named(words)
    any_severity = intent == "breaking_drift" and not _BREAKING.search(text)
    return Reading(intent, window_days(text), vendor, tag, watch_type, any_severity=any_severity)


def _watch_type_named(words: set[str]) -> str | None:
    """The first watch type (in registration order) whose name or words the question has."""
    return next((k.name for k in CONTRACT_KINDS if words & {k.name, *k.words}), None)


_BREAKING = re.compile(r"\bbreak(ing|s)?\b|\bbroke(n)?\b")
