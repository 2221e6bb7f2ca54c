"""A2A agent cards: reading a card strictly, and the classification of its changes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.diffs import ContractParseError, diff_agent_card, load_agent_card
from controller.diffs.explain import with_hints
from controller.diffs.rules import CATALOG, order_actions
from tests.diffs.conftest import card, skill


def rules(before: Any, after: Any) -> dict[tuple[str, str | None], str]:
    return {
        (c.rule, c.location.tool if c.location else None): c.severity.value
        for c in diff_agent_card(before, after)
    }


# before, after, expected {(rule, skill): severity}
TABLE: list[tuple[str, dict[str, Any], dict[str, Any], dict[tuple[str, str | None], str]]] = [
    (
        "skill removed and added",
        card([skill("refund")]),
        card([skill("invoice")]),
        {("skill-removed", "refund"): "breaking", ("skill-added", "invoice"): "info"},
    ),
    (
        "skill order is not a change",
        card([skill("a"), skill("b")]),
        card([skill("b"), skill("a")]),
        {},
    ),
    (
        "required input field added",
        card([skill("refund")]),
        card(
            [
                skill(
                    "refund",
                    inputSchema={
                        "type": "object",
                        "properties": {"q": {"type": "string"}, "orderId": {"type": "string"}},
                        "required": ["q", "orderId"],
                    },
                )
            ]
        ),
        {("tool-input-property-added-required", "refund"): "breaking"},
    ),
    (
        "optional input field added",
        card([skill("refund")]),
        card(
            [
                skill(
                    "refund",
                    inputSchema={
                        "type": "object",
                        "properties": {"q": {"type": "string"}, "note": {"type": "string"}},
                        "required": ["q"],
                    },
                )
            ]
        ),
        {("tool-input-property-added-optional", "refund"): "info"},
    ),
    (
        "input schema no longer an object",
        card([skill("refund")]),
        card([skill("refund", inputSchema={"type": "string"})]),
        {("skill-input-schema-invalid", "refund"): "breaking"},
    ),
    (
        "output schema removed",
        card([skill("refund", outputSchema={"type": "object"})]),
        card([skill("refund")]),
        {("skill-output-schema-removed", "refund"): "warning"},
    ),
    (
        "skill's own input mode removed and output mode added",
        card([skill("refund", inputModes=["text/plain", "image/png"])]),
        card(
            [
                skill(
                    "refund",
                    inputModes=["text/plain"],
                    outputModes=["application/json", "text/csv"],
                )
            ]
        ),
        {
            ("skill-input-mode-removed", "refund"): "breaking",
            ("skill-output-mode-added", "refund"): "info",
        },
    ),
    (
        "a skill that gives up its own modes takes the defaults (narrower here)",
        card([skill("refund", inputModes=["text/plain", "image/png", "application/json"])]),
        card([skill("refund")]),
        {("skill-input-mode-removed", "refund"): "breaking"},
    ),
    (
        "default modes narrowed once, on the card",
        card([skill("a"), skill("b")]),
        card([skill("a"), skill("b")], defaultInputModes=["application/json"]),
        {("agent-default-input-mode-removed", None): "breaking"},
    ),
    (
        "default output mode added",
        card([skill("a")]),
        card([skill("a")], defaultOutputModes=["application/json", "text/plain"]),
        {("agent-default-output-mode-added", None): "info"},
    ),
    (
        "modes compare as media types (case, repeats)",
        card([skill("a", inputModes=["text/plain"])]),
        card([skill("a", inputModes=["Text/Plain", "text/plain"])]),
        {},
    ),
    (
        "description, examples, tags, name",
        card([skill("a")]),
        card([skill("a", description="new", examples=["x"], tags=["y"], name="Alpha")]),
        {
            ("skill-description-changed", "a"): "info",
            ("skill-examples-changed", "a"): "info",
            ("skill-tags-changed", "a"): "info",
            ("skill-name-changed", "a"): "info",
        },
    ),
    (
        "endpoint changed",
        card([skill("a")]),
        card([skill("a")], url="https://billing-v2.example/a2a"),
        {("agent-url-changed", None): "warning"},
    ),
    (
        "security requirement added to the card and to a skill",
        card([skill("a")]),
        card([skill("a", security=[{"oauth": ["refunds"]}])], security=[{"apiKey": []}]),
        {
            ("agent-security-requirement-added", None): "breaking",
            ("skill-security-requirement-added", "a"): "breaking",
        },
    ),
    (
        "security requirement removed",
        card([skill("a")], security=[{"apiKey": []}]),
        card([skill("a")]),
        {("agent-security-requirement-removed", None): "info"},
    ),
    (
        "streaming and push notifications dropped",
        card([skill("a")]),
        card([skill("a")], capabilities={"streaming": False}),
        {
            ("agent-capability-removed", None): "warning",
        },
    ),
    (
        "capability gained, version and protocol moved",
        card([skill("a")], capabilities={}),
        card(
            [skill("a")],
            capabilities={"streaming": True},
            version="1.1.0",
            protocolVersion="1.0",
        ),
        {
            ("agent-capability-added", None): "info",
            ("agent-version-changed", None): "info",
            ("agent-protocol-version-changed", None): "info",
        },
    ),
]


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [row[1:] for row in TABLE],
    ids=[row[0] for row in TABLE],
)
def test_classification(
    before: dict[str, Any], after: dict[str, Any], expected: dict[tuple[str, str | None], str]
) -> None:
    assert rules(before, after) == expected


def test_both_capabilities_dropped_are_two_warnings() -> None:
    changes = diff_agent_card(card([skill("a")]), card([skill("a")], capabilities={}))
    assert sorted(c.summary for c in changes) == [
        "capability pushNotifications no longer supported",
        "capability streaming no longer supported",
    ]


def test_changes_are_explained_with_hints_and_actions_most_useful_first() -> None:
    before = card([skill("refund"), skill("invoice")])
    after = card(
        [
            skill(
                "invoice",
                inputSchema={
                    "type": "object",
                    "properties": {"q": {"type": "string"}, "orderId": {"type": "string"}},
                    "required": ["q", "orderId"],
                },
            )
        ]
    )
    changes = diff_agent_card(before, after)
    by_rule = {c.rule: c for c in changes}
    hints = {c["rule"]: c["hint"] for c in with_hints(c.to_json() for c in changes)}
    removed = by_rule["skill-removed"]
    assert removed.summary == "skill refund removed" and removed.path == "/skills/refund"
    assert removed.agentAction == "remove_tool_usage"
    assert hints["skill-removed"] == (
        "A task for skill `refund` now fails: the agent no longer has the skill. "
        + CATALOG["skill-removed"].hint
    )
    required = by_rule["tool-input-property-added-required"]
    assert required.summary.startswith("skill invoice input")
    assert required.path.startswith("/skills/invoice/inputSchema")
    assert required.agentAction == "send_new_required_field"
    actions = order_actions([c.agentAction for c in changes] + ["ack_incident"])
    assert actions == ["remove_tool_usage", "send_new_required_field", "ack_incident"]


def test_a2a_1_0_spellings_are_read() -> None:
    before = card(
        [skill("a")],
        url=None,
        supportedInterfaces=[{"url": "https://a.example/a2a", "protocolBinding": "JSONRPC"}],
        securityRequirements=[{"schemes": {"oauth": {"list": ["read"]}}}],
    )
    after = card(
        [skill("a")],
        url=None,
        supportedInterfaces=[{"url": "https://b.example/a2a", "protocolBinding": "GRPC"}],
        securityRequirements=[{"schemes": {"oauth": {"list": ["read", "write"]}}}],
    )
    changes = {c.rule: c for c in diff_agent_card(before, after)}
    assert changes["agent-url-changed"].after == "https://b.example/a2a"
    assert changes["agent-transport-changed"].before == "JSONRPC"
    assert changes["agent-security-requirement-added"].after == "oauth[read,write]"
    assert changes["agent-security-requirement-removed"].before == "oauth[read]"


def test_signatures_are_not_part_of_the_contract() -> None:
    signed = card([skill("a")], signatures=[{"protected": "x", "signature": "y"}])
    loaded = load_agent_card(json.dumps(signed).encode(), "card")
    assert "signatures" not in loaded and loaded["skills"][0]["id"] == "a"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"<!doctype html><html><body>Welcome</body></html>", "HTML or XML, not JSON"),
        (b"", "the answer is empty"),
        (b"{not json", "invalid JSON"),
        (b"[1, 2]", "expected a JSON object, found a list"),
        (b'{"name": "x"}', "declares a 'skills' list (no 'skills' field)"),
        (b'{"name": "x", "skills": {}}', "'skills' is an object"),
        (b'{"skills": [{"name": "no id"}]}', "skill 0 has no string 'id'"),
        (b"\xff\xfe", "not UTF-8"),
        (b"name: x\nskills: []\n", "invalid JSON"),
    ],
)
def test_what_is_not_a_card_is_refused_with_the_reason(body: bytes, message: str) -> None:
    with pytest.raises(ContractParseError) as caught:
        load_agent_card(body, "https://agent.example/.well-known/agent.json")
    assert message in str(caught.value) and "agent.example" in str(caught.value)


def test_every_a2a_rule_is_in_the_catalog_with_a_hint() -> None:
    a2a = [rule for rule in CATALOG.values() if rule.family == "a2a"]
    assert {"skill-removed", "skill-added", "agent-url-changed"} <= {r.id for r in a2a}
    assert all(rule.hint and rule.summary for rule in a2a)


def test_the_surface_of_a_card_is_its_skills() -> None:
    from controller.contracts.kinds import CONTRACT_KINDS
    from controller.diffs.surface import compare

    before = card([skill("refund"), skill("invoice")])
    after = card([skill("invoice", description="Issue an invoice")])
    view = compare(
        CONTRACT_KINDS.surface_of("a2a_card", before),
        CONTRACT_KINDS.surface_of("a2a_card", after),
        diff_agent_card(before, after),
    )
    assert [(m.name, m.mark) for m in view.baseline] == [
        ("refund", "removed"),
        ("invoice", "changed"),
    ]
    assert [(m.name, m.summary) for m in view.current] == [("invoice", "Issue an invoice")]
