"""A2A diff: what an agent's Agent Card declares (skills, endpoint, modes, capabilities, security).

An A2A agent publishes its Agent Card at `/.well-known/agent-card.json` (`agent.json` before
A2A 0.3). The card is a contract like an MCP server's tool list: its skills are what other
agents delegate to. `load_agent_card` reads the fetched bytes strictly (JSON, an object, a
`skills` list of objects with an `id`): anything else is a `ContractParseError`, a failed
check. `diff_agent_card` normalises both cards and classifies the changes.

Skills are keyed by `id` and diffed like MCP tools, with the MCP engine's own schema code
(`controller.diffs.mcp.diff_io_schemas`): a skill's `inputSchema` is data the caller sends,
its `outputSchema` data it reads (the hosted product's reading of a card, beyond the A2A
specification), and their findings take the `tool-input-...` / `tool-output-...` rule ids.
Input and output modes are media types: one removed narrows the contract (breaking), one
added widens it (information). A skill without modes of its own takes the card's
`defaultInputModes` / `defaultOutputModes`, whose changes are reported once, on the card.
Every skill change carries `location.tool` (the skill id), as an MCP tool change does.

A watch that names trusted keys has each card's signatures verified by its check
(`controller.cardtrust`); the verdict rides in the document under `x-driftgate-verdicts`, which
is no part of the card and is compared on its own: a verdict that turned bad (no signature, one
that does not verify, one by a key the watch does not trust) is a breaking
`card-signature-*` finding.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.diffs.core import compare_keys, escape_pointer, make_change
from controller.diffs.errors import ContractParseError
from controller.diffs.loader import MAX_NESTING, check_nesting
from controller.diffs.mcp import SchemaRules, diff_io_schemas
from controller.diffs.poisoning import poisoning_changes, skill_texts
from controller.diffs.renames import changed_parts, pair_renames, schema_shape
from controller.diffs.verdicts import verdict_of
from controller.model.change import Change, Location

SKILL_SCHEMA_RULES = SchemaRules(
    dialect_changed="skill-schema-dialect-changed",
    input_invalid="skill-input-schema-invalid",
    output_added="skill-output-schema-added",
    output_removed="skill-output-schema-removed",
)
# Capabilities whose loss changes how a client talks to the agent (A2A AgentCapabilities).
CAPABILITY_FLAGS = ("streaming", "pushNotifications", "stateTransitionHistory")
# A card's own fields that carry no contract of their own (`signatures` are re-made by each
# signing; they are left out of the stored card, see `card_contract`).
_METADATA = ("provider", "iconUrl", "documentationUrl")
# The verdict on the card's signatures (`controller.cardtrust`), by status.
CARD_SIGNATURE = "cardSignature"
SIGNATURE_RULES = {
    "unsigned": "card-signature-removed",
    "invalid": "card-signature-invalid",
    "untrusted": "card-signature-untrusted",
}
_SKILL_TEXT = (
    ("name", "skill-name-changed"),
    ("description", "skill-description-changed"),
    ("tags", "skill-tags-changed"),
    ("examples", "skill-examples-changed"),
)


@dataclass
class AgentCard:
    """The comparable surface of one Agent Card."""

    name: str | None = None
    description: str | None = None
    version: str | None = None
    protocol_version: str | None = None
    url: str | None = None
    transport: str | None = None
    capabilities: dict[str, Any] = field(default_factory=dict)
    default_input_modes: list[str] = field(default_factory=list)
    default_output_modes: list[str] = field(default_factory=list)
    security: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    skills: dict[str, dict[str, Any]] = field(default_factory=dict)


def load_agent_card(data: str | bytes, where: str | None = None) -> dict[str, Any]:
    """Read an Agent Card from fetched bytes: strict JSON, an object with a `skills` list of
    skill objects, each with a string `id`. Returns the card as `card_contract` keeps it;
    raises `ContractParseError` saying what is wrong."""
    text = data if isinstance(data, str) else _decode(data, where)
    stripped = text.lstrip()
    if not stripped:
        raise ContractParseError("not an A2A agent card: the answer is empty", where=where)
    if stripped[:1] == "<":
        raise ContractParseError(
            "not an A2A agent card: the answer is HTML or XML, not JSON (is the URL the "
            "card's, /.well-known/agent-card.json or /.well-known/agent.json?)",
            where=where,
        )
    try:
        card = json.loads(text)
    except RecursionError:
        raise ContractParseError(
            f"the card nests deeper than {MAX_NESTING} levels of objects and arrays; "
            "driftgate does not read contracts nested this deep",
            where=where,
        ) from None
    except json.JSONDecodeError as exc:
        raise ContractParseError(
            f"not an A2A agent card: invalid JSON ({exc.msg} at line {exc.lineno}, "
            f"column {exc.colno})",
            where=where,
        ) from None
    check_nesting(card, where)
    if not isinstance(card, dict):
        raise ContractParseError(
            f"not an A2A agent card: expected a JSON object, found {_kind(card)}", where=where
        )
    skills = card.get("skills")
    if not isinstance(skills, list):
        found = "no 'skills' field" if skills is None else f"'skills' is {_kind(skills)}"
        raise ContractParseError(
            f"not an A2A agent card: an agent card declares a 'skills' list ({found})",
            where=where,
        )
    for index, skill in enumerate(skills):
        if not isinstance(skill, dict) or not isinstance(skill.get("id"), str) or not skill["id"]:
            raise ContractParseError(
                f"not an A2A agent card: skill {index} has no string 'id'",
                where=f"{where or '<card>'}#/skills/{index}",
            )
    return card_contract(card)


def card_contract(card: dict[str, Any]) -> dict[str, Any]:
    """The card as a contract: without its JSON Web Signatures, which change with every
    signing and say nothing of what the agent offers."""
    return {key: value for key, value in card.items() if key != "signatures"}


def looks_like_agent_card(document: Any) -> bool:
    """True for a document shaped like an Agent Card (a `skills` list and the card's own
    fields), for telling a card's type from what a URL serves."""
    return (
        isinstance(document, dict)
        and isinstance(document.get("skills"), list)
        and any(key in document for key in ("capabilities", "defaultInputModes", "protocolVersion"))
    )


def normalize_agent_card(doc: Any) -> AgentCard:
    """Build an `AgentCard` from a card document (A2A 0.2 to 1.0 spellings)."""
    if not isinstance(doc, dict):
        return AgentCard()
    interfaces = [i for i in _list(doc.get("supportedInterfaces")) if isinstance(i, dict)]
    first = interfaces[0] if interfaces else {}
    caps = doc.get("capabilities")
    return AgentCard(
        name=_text(doc.get("name")),
        description=_text(doc.get("description")),
        version=_text(doc.get("version")),
        protocol_version=_text(doc.get("protocolVersion") or first.get("protocolVersion")),
        url=_text(doc.get("url") or first.get("url")),
        transport=_text(
            doc.get("preferredTransport") or first.get("protocolBinding") or first.get("transport")
        ),
        capabilities=caps if isinstance(caps, dict) else {},
        default_input_modes=_modes(doc.get("defaultInputModes")),
        default_output_modes=_modes(doc.get("defaultOutputModes")),
        security=_requirements(doc.get("security", doc.get("securityRequirements"))),
        metadata={key: doc.get(key) for key in _METADATA},
        skills={
            str(s["id"]): s
            for s in _list(doc.get("skills"))
            if isinstance(s, dict) and isinstance(s.get("id"), str)
        },
    )


def diff_agent_card(base: Any, revision: Any) -> list[Change]:
    """Return the classified changes between two Agent Cards (documents or `AgentCard`s)."""
    b = base if isinstance(base, AgentCard) else normalize_agent_card(base)
    r = revision if isinstance(revision, AgentCard) else normalize_agent_card(revision)
    out: list[Change] = []
    _signature(base, revision, out)
    _agent(b, r, out)
    _capabilities(b, r, out)
    _modes_diff(b.default_input_modes, r.default_input_modes, "agent-default-input-mode", None, out)
    _modes_diff(
        b.default_output_modes, r.default_output_modes, "agent-default-output-mode", None, out
    )
    _security(b.security, r.security, "agent-security-requirement", "/security", None, out)
    _skills(b, r, out)
    return out


def _signature(base: Any, revision: Any, out: list[Change]) -> None:
    """A card-signature verdict that turned bad since the base (or is bad where the base had
    none: the watch named its keys after the baseline)."""
    before, after = _signature_verdict(base), _signature_verdict(revision)
    status = after.get("status")
    if after.get("ok") is not False or status not in SIGNATURE_RULES:
        return
    if before.get("status") == status:
        return  # the same verdict as the base's (a baseline a person accepted as it is)
    out.append(
        make_change(
            SIGNATURE_RULES[status],
            "/signatures",
            before=before.get("status"),
            after=status,
            detail=str(after.get("summary") or status),
        )
    )


def _signature_verdict(document: Any) -> dict[str, Any]:
    return verdict_of(document, CARD_SIGNATURE)


def _agent(b: AgentCard, r: AgentCard, out: list[Change]) -> None:
    for attr, rule, ptr in (
        ("url", "agent-url-changed", "/url"),
        ("transport", "agent-transport-changed", "/preferredTransport"),
        ("name", "agent-name-changed", "/name"),
        ("version", "agent-version-changed", "/version"),
        ("protocol_version", "agent-protocol-version-changed", "/protocolVersion"),
    ):
        before, after = getattr(b, attr), getattr(r, attr)
        if before != after:
            out.append(make_change(rule, ptr, before=before, after=after))
    if (b.description or "") != (r.description or ""):
        out.append(make_change("agent-description-changed", "/description"))
        if r.description:
            out += poisoning_changes(
                "agent-description-poisoning-suspected",
                "",
                {"description": b.description} if b.description else None,
                {"description": r.description},
                name=r.name or "",
                own_tools=set(r.skills),
            )
    if b.metadata != r.metadata:
        out.append(make_change("agent-metadata-changed", ""))


def _capabilities(b: AgentCard, r: AgentCard, out: list[Change]) -> None:
    for flag in CAPABILITY_FLAGS:
        before, after = b.capabilities.get(flag) is True, r.capabilities.get(flag) is True
        if before != after:
            rule = "agent-capability-removed" if before else "agent-capability-added"
            out.append(make_change(rule, f"/capabilities/{flag}", name=flag))
    rest_b = {k: v for k, v in b.capabilities.items() if k not in CAPABILITY_FLAGS}
    rest_r = {k: v for k, v in r.capabilities.items() if k not in CAPABILITY_FLAGS}
    if rest_b != rest_r:
        out.append(make_change("agent-capabilities-changed", "/capabilities"))


def _skills(b: AgentCard, r: AgentCard, out: list[Change]) -> None:
    keys = list(compare_keys(b.skills, r.skills, kept_last=True))

    # Paired with their modes resolved (their own or their card's defaults).
    removed = {k: _resolved(b.skills[k], b) for p, k in keys if p == "removed"}
    added = {k: _resolved(r.skills[k], r) for p, k in keys if p == "added"}
    renamed = dict(pair_renames(removed, added, _skill_contract))
    old_ids = {new: old for old, new in renamed.items()}
    for presence, skill_id in keys:
        if presence == "removed" and skill_id in renamed:
            new_id = renamed[skill_id]
            out.append(
                make_change(
                    "skill-renamed",
                    _skill_ptr(skill_id),
                    location=Location(tool=skill_id),
                    name=skill_id,
                    before=skill_id,
                    after=new_id,
                    detail=changed_parts(b.skills[skill_id], r.skills[new_id], _SKILL_PARTS),
                )
            )
        elif presence == "added" and skill_id in old_ids:
            pass  # reported with its old id; its texts are scanned below like any skill's
        elif presence != "kept":
            loc = Location(tool=skill_id)
            out.append(
                make_change(f"skill-{presence}", _skill_ptr(skill_id), location=loc, name=skill_id)
            )
        elif b.skills[skill_id] != r.skills[skill_id]:
            _skill(skill_id, b.skills[skill_id], r.skills[skill_id], b, r, out)
        # A renamed skill's texts are judged against its old self: a text it had is not news.
        before = b.skills.get(skill_id, b.skills.get(old_ids.get(skill_id, "")))
        if presence != "removed" and before != r.skills[skill_id]:
            out += poisoning_changes(
                "skill-poisoning-suspected",
                _skill_ptr(skill_id),
                before,
                r.skills[skill_id],
                name=skill_id,
                location=Location(tool=skill_id),
                own_tools=set(r.skills),
                texts=skill_texts,
            )


def _skill(
    skill_id: str,
    bs: dict[str, Any],
    rs: dict[str, Any],
    b: AgentCard,
    r: AgentCard,
    out: list[Change],
) -> None:
    loc = Location(tool=skill_id)
    ptr = _skill_ptr(skill_id)
    for key, rule in _SKILL_TEXT:
        if (bs.get(key) or None) != (rs.get(key) or None):
            out.append(make_change(rule, f"{ptr}/{key}", location=loc, name=skill_id))
    for key, defaults, stem in (
        ("inputModes", "default_input_modes", "skill-input-mode"),
        ("outputModes", "default_output_modes", "skill-output-mode"),
    ):
        # A skill that takes the card's defaults on both sides moves with them (reported once,
        # on the card); one with modes of its own on either side is compared as it resolves.
        if key in bs or key in rs:
            before = _modes(bs[key]) if key in bs else getattr(b, defaults)
            after = _modes(rs[key]) if key in rs else getattr(r, defaults)
            _modes_diff(before, after, stem, (skill_id, ptr + "/" + key), out)
    _security(
        _requirements(bs.get("security", bs.get("securityRequirements"))),
        _requirements(rs.get("security", rs.get("securityRequirements"))),
        "skill-security-requirement",
        ptr + "/security",
        skill_id,
        out,
    )
    diff_io_schemas(
        bs,
        rs,
        location=loc,
        pointer=ptr,
        label=f"skill {skill_id}",
        out=out,
        rules=SKILL_SCHEMA_RULES,
    )


# The parts of a renamed skill the rename finding names when they changed too.
_SKILL_PARTS = {
    "name": "name",
    "description": "description",
    "inputSchema": "input schema",
    "outputSchema": "output schema",
    "security": "security",
}


def _resolved(skill: dict[str, Any], card: AgentCard) -> dict[str, Any]:
    """A skill with its input and output modes, its own or the card's defaults."""
    return {
        **skill,
        "inputModes": _modes(skill["inputModes"])
        if "inputModes" in skill
        else card.default_input_modes,
        "outputModes": _modes(skill["outputModes"])
        if "outputModes" in skill
        else card.default_output_modes,
    }


def _skill_contract(skill: Mapping[str, Any]) -> Any:
    """What two skills must share to be paired by content: schemas and modes."""
    return [
        schema_shape(skill.get("inputSchema")),
        schema_shape(skill.get("outputSchema")),
        skill["inputModes"],
        skill["outputModes"],
    ]


def _modes_diff(
    before: list[str],
    after: list[str],
    stem: str,
    skill: tuple[str, str] | None,
    out: list[Change],
) -> None:
    """One change per media type removed (narrowed: breaking) or added (widened)."""
    name, ptr = skill if skill is not None else (None, "/" + _camel(stem))
    loc = Location(tool=name) if name is not None else None
    for presence, mode in compare_keys(before, after):
        if presence == "removed":
            out.append(
                make_change(
                    f"{stem}-removed", ptr, location=loc, name=name, detail=mode, before=mode
                )
            )
        elif presence == "added":
            out.append(
                make_change(f"{stem}-added", ptr, location=loc, name=name, detail=mode, after=mode)
            )


def _security(
    before: list[str],
    after: list[str],
    stem: str,
    ptr: str,
    skill: str | None,
    out: list[Change],
) -> None:
    loc = Location(tool=skill) if skill is not None else None
    for requirement in after:
        if requirement not in before:
            out.append(
                make_change(f"{stem}-added", ptr, location=loc, name=skill, after=requirement)
            )
    for requirement in before:
        if requirement not in after:
            out.append(
                make_change(f"{stem}-removed", ptr, location=loc, name=skill, before=requirement)
            )


def _requirements(value: Any) -> list[str]:
    """Security requirements (alternatives, each a set of schemes used together) as text:
    `oauth[read]`, `apiKey AND mtls`. Reads the JSON form (`{scheme: [scopes]}`) and the
    A2A 1.0 protobuf form (`{schemes: {scheme: {list: [scopes]}}}`)."""
    found: list[str] = []
    for requirement in _list(value):
        if not isinstance(requirement, dict):
            continue
        schemes = requirement.get("schemes")
        if isinstance(schemes, dict) and len(requirement) == 1:
            requirement = {
                k: (v.get("list") if isinstance(v, dict) else v) for k, v in schemes.items()
            }
        parts = []
        for scheme in sorted(requirement, key=str):
            scopes = requirement[scheme]
            listed = sorted(str(s) for s in scopes) if isinstance(scopes, list) else []
            parts.append(f"{scheme}[{','.join(listed)}]" if listed else str(scheme))
        text = " AND ".join(parts) if parts else "no credentials"
        if text not in found:
            found.append(text)
    return found


def _modes(value: Any) -> list[str]:
    modes: list[str] = []
    for mode in _list(value):
        if isinstance(mode, str) and mode.strip():
            text = mode.strip().lower()
            if text not in modes:
                modes.append(text)
    return modes


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None if value is None else str(value)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, int | float) else "null"
    )


def _camel(stem: str) -> str:
    # agent-default-input-mode -> defaultInputModes (the card's field)
    words = stem.removeprefix("agent-").split("-")
    return words[0] + "".join(w.title() for w in words[1:]) + "s"


def _decode(data: bytes, where: str | None) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ContractParseError(
            f"not an A2A agent card: not UTF-8 text (byte {exc.start})", where=where
        ) from None


def _skill_ptr(skill_id: str) -> str:
    return f"/skills/{escape_pointer(skill_id)}"
