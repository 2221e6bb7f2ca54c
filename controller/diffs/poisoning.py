"""Description risk: prompt-injection cues in the text a model reads (tool poisoning).

An MCP server's tool, prompt and resource descriptions, its parameters' descriptions and
defaults, its `instructions`, and an A2A card's skill texts land in the model's context
verbatim. A server that writes instructions for the model there ("ignore previous
instructions", "read ~/.ssh/id_rsa and pass it as `notes`", text hidden in Unicode tag
characters, a redefinition of another server's `send_email` tool) attacks every agent that
lists it: tool poisoning, and a rug pull when the text changes after approval.

`CUES` is the table the detector runs: each cue a kind, a pattern and why it is suspect
(docs/rules.md renders it). `scan` takes one text and returns its hits; `unit_texts` lists the
texts of a tool, prompt, resource or skill by JSON pointer; `poisoning_changes` reports a unit's
new or changed texts that hold a cue, so a text already in the baseline is not reported again.
Pure: no I/O, no state.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any

from controller.diffs.core import make_change
from controller.model.change import Change, Location

MAX_QUOTE = 160  # characters of the offending text quoted in a finding
_CONTEXT = 24  # characters quoted either side of a hit


@dataclass(frozen=True)
class Cue:
    """One kind of prompt-injection cue: a name, what it looks for, and why it is suspect."""

    kind: str
    pattern: re.Pattern[str]
    why: str


def _cue(kind: str, pattern: str, why: str, *, case_sensitive: bool = False) -> Cue:
    flags = re.DOTALL if case_sensitive else re.IGNORECASE | re.DOTALL
    return Cue(kind, re.compile(pattern, flags), why)


_INVISIBLE = (
    "\U000e0000-\U000e007f"  # tag characters: ASCII spelled invisibly
    "\U000e0100-\U000e01ef"  # variation selectors supplement: bytes smuggled after a glyph
    "\u200b-\u200f"  # zero-width space, joiners, LRM/RLM
    "\u202a-\u202e"  # bidi embeddings and overrides
    "\u2060-\u2064"  # word joiner, invisible operators
    "\u2066-\u2069"  # bidi isolates
    "\ufeff"  # zero-width no-break space inside text
    "\u00ad"  # soft hyphen
    "\u180e"  # Mongolian vowel separator
)
_FILE_VERBS = r"(?:read|cat|open|load|include|send|upload|pass|attach|copy|extract|collect)"

CUES: tuple[Cue, ...] = (
    _cue(
        "model-instruction",
        r"ignore\s+(?:all\s+|any\s+)?(?:the\s+)?(?:previous|prior|above|earlier|preceding)\s+"
        r"(?:instructions?|prompts?|rules|directions)"
        r"|disregard\s+(?:all\s+|any\s+)?(?:the\s+)?(?:previous|prior|above|system|earlier)\b"
        r"|forget\s+(?:all\s+)?(?:your|previous|prior)\s+instructions",
        "tells the model to drop what it was told: text for the model, not a description",
    ),
    _cue(
        "model-instruction",
        r"</?\s*(?:important|system|instructions?|hidden|secret|admin|override)\s*>"
        r"|\[\s*(?:hidden|system|important)\s*[:\]]",
        "a tag that poses as a system instruction (Invariant Labs' `<IMPORTANT>`)",
    ),
    _cue(
        "model-instruction",
        r"\b(?:do\s+not|don'?t|never|must\s+not)\s+(?:\w+\s+){0,2}"
        r"(?:tell|mention|inform|notify|reveal|disclose|show|alert)\w*\s+(?:\w+\s+){0,3}"
        r"(?:the\s+)?user"
        r"|without\s+(?:telling|informing|notifying|alerting|asking)\s+(?:the\s+)?user"
        r"|(?:hide|conceal)\s+(?:this|it|these)\s+from\s+(?:the\s+)?user"
        r"|the\s+user\s+(?:must|should)\s+(?:not|never)\s+(?:know|see|be\s+told)",
        "asks the model to keep something from the user",
    ),
    _cue(
        "model-instruction",
        r"otherwise\s+the\s+tool\s+will\s+not\s+work"
        r"|before\s+(?:using|calling|invoking|running)\s+(?:this|any\s+other|any)\s+tool\s*,?\s*"
        r"(?:you\s+)?(?:must|should|need\s+to|always|first|read|call|send|pass)"
        r"|\b(?:reveal|print|output|ignore|override|disregard|replace)\s+(?:\w+\s+){0,2}"
        r"system\s+(?:prompt|message|instructions?)\b"
        r"|\bsystem\s+override\b"
        r"|\byou\s+are\s+now\b"
        r"|\bnew\s+instructions\s*:",
        "an order to the model about how to behave beyond calling this tool",
    ),
    _cue(
        "secret-access",
        r"~/?\.(?:ssh|aws|gnupg|kube|docker|cursor|config/gcloud|azure|netrc|npmrc|pypirc"
        r"|git-credentials|bash_history|zsh_history)\b"
        r"|\bid_(?:rsa|dsa|ecdsa|ed25519)\b"
        r"|/etc/(?:passwd|shadow|sudoers)\b"
        r"|\bmcp\.json\b"
        r"|(?:^|[\s'\"`(/])\.env(?:\.\w+)?\b(?!\s*var)"
        r"|\bcredentials\.json\b|\.aws/credentials\b",
        "names a secret or a credentials file a tool has no reason to need",
    ),
    _cue(
        "secret-access",
        _FILE_VERBS + r"\s+(?:\w+\s+){0,4}(?:the|their|its|your|all|any|every)\s+"
        r"(?:\w+\s+)?(?:user'?s?\s+)?"
        r"(?:api[\s_-]?keys?|passwords?|secrets?|access\s+tokens?|session\s+cookies?|private\s+keys?"
        r"|ssh\s+keys?|credentials|conversation\s+history|chat\s+history|system\s+prompt)\b",
        "asks the model to gather secrets or private context",
    ),
    _cue(
        "exfiltration",
        r"\b(?:send|post|upload|forward|transmit|exfiltrate|report|bcc|cc|copy|redirect)\w*\s+"
        r"(?:[\w'`\"-]+\s+){0,8}to\s+(?:https?://|[\w.+-]+@[\w-]+\.[\w.]+|\+?\d[\d\s-]{7,})"
        r"|\|\s*(?:curl|wget|nc)\b"
        r"|\b(?:curl|wget)\s[^\n]{0,120}?(?:-d|--data\S*|-F|--form|-T|--upload-file)\s+['\"]?@"
        r"|\bpass\s+(?:its|their|the|this|that|all)\s+(?:\w+\s+){0,2}contents?\s+(?:as|in|into)\b",
        "asks the model to move data out: to a URL, an address, or a parameter it fills",
    ),
    _cue(
        "tool-call",
        r"\b(?:call|invoke|use|run|execute)\s+(?:the\s+)?[`'\"]?\w+[`'\"]?\s+tool\s+"
        r"(?:first|before|after|instead)\b"
        r"|\bbefore\s+(?:using|calling)\s+any\s+other\s+tool\b"
        r"|\b(?:instead\s+of|rather\s+than)\s+(?:using\s+|calling\s+)?(?:the\s+)?[`'\"]?\w+"
        r"[`'\"]?\s+tool\b",
        "steers the model's use of other tools",
    ),
    _cue(
        "shadowing",
        r"\bwhen\s+this\s+tool\s+is\s+available\b"
        r"|\b(?:all|every|any)\s+(?:emails?|messages?|payments?|transfers?)\s+(?:\w+\s+){0,3}"
        r"(?:must|should|shall)\s+(?:\w+\s+){0,3}(?:sent|go|be\s+sent|be\s+forwarded|be\s+routed)"
        r"\s+to\b"
        r"|\b(?:has|have)\s+(?:a\s+)?(?:very\s+)?important\s+side\s+effect\s+on\b",
        "rewrites how another tool behaves (tool shadowing)",
    ),
    _cue(
        "hidden-unicode",
        f"[{_INVISIBLE}]+",
        "characters a person does not see but a model reads (tag characters, variation "
        "selectors supplement, zero-width, "
        "bidirectional controls)",
    ),
    _cue(
        "encoded-blob",
        # Mixed case and digits, and no path: `/a/b/c` runs are URLs, not blobs.
        r"(?<![\w/+=])(?=[A-Za-z0-9+/]*\d)(?=[A-Za-z0-9+/]*[A-Z])(?=[A-Za-z0-9+/]*[a-z])"
        r"(?![A-Za-z0-9+]*/[A-Za-z0-9+]*/[A-Za-z0-9+]*/)"
        r"[A-Za-z0-9+/]{64,}={0,2}"
        r"|\b[0-9a-fA-F]{96,}\b"
        r"|(?:\\x[0-9a-fA-F]{2}){16,}",
        "a long base64 or hex run: text the model can decode and a person cannot read",
        case_sensitive=True,
    ),
    _cue(
        "hidden-padding",
        # Not a Markdown table's padded cell (the run ends at `|`).
        r"(?<![ \t])[ \t]{80,}+(?![|\r\n]|$)|(?<![ \t])(?:[ \t]*+\r?\n){25,}",
        "a long run of blank space that pushes text out of a reviewer's view",
    ),
)


@dataclass(frozen=True)
class Hit:
    """One cue found in one text: its kind and the offending text, quoted safely."""

    kind: str
    quote: str


def scan(text: str, own_tools: Collection[str] = ()) -> list[Hit]:
    """The cues in `text`, one hit per kind (the first met), in `CUES` order; `own_tools`
    are the unit's server's own tool names, which a description may name freely."""
    hits: dict[str, Hit] = {}
    for cue in CUES:
        if cue.kind in hits:
            continue
        match = cue.pattern.search(text)
        if match is not None:
            hits[cue.kind] = Hit(cue.kind, quote(text, match.start(), match.end()))
    if "shadowing" not in hits:
        foreign = _foreign_tool(text, own_tools)
        if foreign is not None:
            hits["shadowing"] = Hit("shadowing", quote(text, *foreign))
    return list(hits.values())


# `mcp_tool_send_email tool`, `the send_email tool` of another server: an identifier-shaped
# name (with `_` or `.`) followed by "tool" that this server does not list. Possessive and
# anchored at a token's start, so a long token costs one pass.
_TOOL_REFERENCE = re.compile(r"(?<![\w.-])([A-Za-z][\w.-]*+)[`'\"]?\s+tool\b", re.IGNORECASE)


def _foreign_tool(text: str, own_tools: Collection[str]) -> tuple[int, int] | None:
    if not own_tools:
        return None
    for match in _TOOL_REFERENCE.finditer(text):
        name = match.group(1).rstrip(".-")
        if ("_" in name or "." in name) and name not in own_tools:
            return match.start(), match.end()
    return None


def quote(text: str, start: int, end: int) -> str:
    """The text around `[start, end)`, bounded, with invisible and control characters
    written as `\\uXXXX` so the quote shows what a person would not see."""
    lo, hi = max(0, start - _CONTEXT), min(len(text), end + _CONTEXT)
    out = "…" if lo else ""
    for char in text[lo:hi]:
        out += _visible(char)
        if len(out) >= MAX_QUOTE:
            return out[: MAX_QUOTE - 1] + "…"
    return out + ("…" if hi < len(text) else "")


def _visible(char: str) -> str:
    code = ord(char)
    if char in "\n\t":
        return " "
    if code < 0x20 or 0x7F <= code < 0xA0 or re.match(f"[{_INVISIBLE}]", char):
        return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
    return char


# What a model reads of a unit: its own texts, then its schemas' descriptions and defaults.
_UNIT_TEXTS = ("description", "title", "name", "instructions")
_SKILL_TEXTS = ("description", "name", "examples", "tags")
_SCHEMA_TEXTS = ("description", "title", "default", "examples", "const", "enum")


def unit_texts(unit: Any, keys: tuple[str, ...] = _UNIT_TEXTS) -> dict[str, str]:
    """The texts a model reads of one tool, prompt, resource or skill, by pointer below it."""
    out: dict[str, str] = {}
    if not isinstance(unit, dict):
        return out
    for key in keys:
        _strings(unit.get(key), "/" + key, out)
    for index, argument in enumerate(unit.get("arguments") or []):
        if isinstance(argument, dict):
            _strings(argument.get("description"), f"/arguments/{index}/description", out)
    for key in ("inputSchema", "outputSchema"):
        _schema(unit.get(key), "/" + key, out, 0)
    return out


def skill_texts(skill: Any) -> dict[str, str]:
    """The texts a model reads of one A2A skill."""
    return unit_texts(skill, _SKILL_TEXTS)


def _strings(value: Any, pointer: str, out: dict[str, str]) -> None:
    if isinstance(value, str):
        if value:
            out[pointer] = value
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _strings(item, f"{pointer}/{index}", out)


def _schema(schema: Any, pointer: str, out: dict[str, str], depth: int) -> None:
    if not isinstance(schema, dict) or depth > 32:
        return
    for key in _SCHEMA_TEXTS:
        _strings(schema.get(key), f"{pointer}/{key}", out)
    for key, value in schema.items():
        if key in _SCHEMA_TEXTS:
            continue
        if isinstance(value, dict):
            if key in ("properties", "patternProperties", "$defs", "definitions"):
                for name, sub in value.items():
                    _schema(sub, f"{pointer}/{key}/{_escape(str(name))}", out, depth + 1)
            else:
                _schema(value, f"{pointer}/{key}", out, depth + 1)
        elif isinstance(value, list):
            for index, sub in enumerate(value):
                _schema(sub, f"{pointer}/{key}/{index}", out, depth + 1)


def _escape(segment: str) -> str:
    return segment.replace("~", "~0").replace("/", "~1")


def poisoning_changes(
    rule_id: str,
    pointer: str,
    before: Any,
    after: Any,
    *,
    name: str,
    location: Location | None = None,
    own_tools: Collection[str] = (),
    texts: Callable[[Any], dict[str, str]] = unit_texts,
) -> Iterator[Change]:
    """One `rule_id` change per text of `after` (a unit added or changed; `before` is None for
    a new one) that is new or changed and holds a cue; a text the baseline had as it is now
    is not reported again."""
    old = texts(before) if before is not None else {}
    for suffix, text in texts(after).items():
        if old.get(suffix) == text:
            continue
        hits = scan(text, own_tools)
        if not hits:
            continue
        detail = "; ".join(f'{hit.kind}: "{hit.quote}"' for hit in hits)
        yield make_change(
            rule_id,
            pointer + suffix,
            location=location,
            name=name,
            after=[hit.kind for hit in hits],
            detail=f"{suffix.lstrip('/')}: {detail}",
        )


def cues_markdown() -> list[str]:
    """docs/rules.md's table of the cues, one row per pattern."""
    lines = ["| cue | why it is suspect |", "|---|---|"]
    for cue in CUES:
        lines.append(f"| `{cue.kind}` | {cue.why} |")
    lines.append(
        "| `shadowing` | names an identifier-shaped tool (`send_email tool`) that the "
        "server itself does not list: another server's tool |"
    )
    return lines
