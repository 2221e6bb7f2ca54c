"""What a client sees fail: every breaking rule says it, filled from the change (issue 41.5)."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from controller.diffs import diff_agent_card, diff_mcp, diff_openapi, explain_changes
from controller.diffs.fails import short, what_fails
from controller.diffs.rules import CATALOG, hint_misfits, side_of
from controller.draftpr import changelog
from controller.draftpr.service import _line, _requested
from controller.model.change import Change, Severity
from tests.diffs.conftest import card, skill, snap, tool

BREAKING = sorted(rule.id for rule in CATALOG.values() if rule.severity is Severity.BREAKING)


def test_every_breaking_rule_says_what_fails_from_its_side() -> None:
    """A new breaking rule without a client-side text fails here, not in a reader's head."""
    assert len(BREAKING) > 500
    missing = [rule_id for rule_id in BREAKING if not CATALOG[rule_id].fails]
    assert missing == [], (
        "give each a `fails=` text on its declaration in controller/diffs/rules.py"
    )
    for rule_id in BREAKING:
        rule = CATALOG[rule_id]
        bare = what_fails({"path": "", "severity": "breaking", "rule": rule_id})
        assert bare is not None and bare.endswith(".") and "{" not in bare, rule_id
        # One sentence: no full stop inside but the one that ends it.
        assert not re.search(r"\.\s+[A-Z]", bare), (rule_id, bare)
        assert not hint_misfits(bare, side_of(rule.id, rule.direction)), (rule_id, bare)
        template = rule.fails
        assert template.startswith(("{call}", "{reader}", "A ")), (rule_id, template)


def test_only_breaking_changes_say_what_fails() -> None:
    change = {"path": "/x", "severity": "warning", "rule": "endpoint-removed"}
    assert what_fails(change) is None
    assert what_fails({**change, "severity": "breaking", "rule": "no-such-rule"}) is None


def _spec(**charge: Any) -> dict[str, Any]:
    request = {
        "type": "object",
        "properties": {
            "currency": {"type": "string", "enum": ["usd", "eur"]},
            "meta": {"type": "object", "properties": {"tag": {"type": "string", "maxLength": 20}}},
        },
    }
    response = {
        "type": "object",
        "required": ["amount"],
        "properties": {"amount": {"type": "integer"}, "note": {"type": "string"}},
    }
    spec: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/v1/charges": {
                "post": {
                    "requestBody": {"content": {"application/json": {"schema": request}}},
                    "responses": {"200": {"description": "ok"}},
                }
            },
            "/v1/refunds/{id}": {
                "get": {
                    "parameters": [
                        {
                            "name": "limit",
                            "in": "query",
                            "schema": {"type": "integer", "maximum": 100},
                        }
                    ],
                    "responses": {
                        "200": {
                            "description": "ok",
                            "content": {"application/json": {"schema": response}},
                        }
                    },
                }
            },
        },
    }
    return spec


def _openapi_fails(edit: Any) -> dict[str, str]:
    base = _spec()
    revision = copy.deepcopy(base)
    edit(revision)
    return {c.rule: what_fails(c) or "" for c in diff_openapi(base, revision)}


def _charges(spec: dict[str, Any]) -> dict[str, Any]:
    body = spec["paths"]["/v1/charges"]["post"]["requestBody"]["content"]["application/json"]
    return body["schema"]["properties"]  # type: ignore[no-any-return]


def _refund(spec: dict[str, Any]) -> dict[str, Any]:
    ok = spec["paths"]["/v1/refunds/{id}"]["get"]["responses"]["200"]
    return ok["content"]["application/json"]["schema"]  # type: ignore[no-any-return]


CASES = [
    (
        "request enum value removed",
        lambda s: _charges(s)["currency"].update(enum=["eur"]),
        "request-property-enum-value-removed",
        'A request to `POST /v1/charges` that sends `currency` = `"usd"` is now refused: the '
        "enum no longer has it.",
    ),
    (
        "request bound tightened",
        lambda s: _charges(s)["meta"]["properties"]["tag"].update(maxLength=10),
        "request-property-max-length-decreased",
        "A request to `POST /v1/charges` whose `meta.tag` is outside the new maxLength `10` "
        "(was `20`) is now refused.",
    ),
    (
        "request parameter bound tightened",
        lambda s: s["paths"]["/v1/refunds/{id}"]["get"]["parameters"][0]["schema"].update(
            maximum=50
        ),
        "request-parameter-max-decreased",
        "A request to `GET /v1/refunds/{id}` whose parameter `limit` is outside the new maximum "
        "`50` (was `100`) is now refused.",
    ),
    (
        "response type changed",
        lambda s: _refund(s)["properties"]["amount"].update(type="string"),
        "response-property-type-changed",
        "A reader of `GET /v1/refunds/{id}` 200 that expects `amount` as `integer` now gets "
        "`string`.",
    ),
    (
        "response property no longer required",
        lambda s: _refund(s).update(required=[]),
        "response-property-became-optional",
        "A reader of `GET /v1/refunds/{id}` 200 that expects `amount` on every response may "
        "find it missing.",
    ),
    (
        "response became nullable",
        lambda s: _refund(s)["properties"]["note"].update(nullable=True),
        "response-property-became-nullable",
        "A reader of `GET /v1/refunds/{id}` 200 that expects `note` to hold a value may now "
        "get null.",
    ),
    (
        "operation removed",
        lambda s: s["paths"].pop("/v1/refunds/{id}"),
        "endpoint-removed",
        "A request to `GET /v1/refunds/{id}` now fails: the operation no longer exists "
        "(404 or 405).",
    ),
]


@pytest.mark.parametrize(
    ("edit", "rule", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_openapi_findings_name_the_operation_and_the_value(
    edit: Any, rule: str, expected: str
) -> None:
    found = _openapi_fails(edit)
    assert found[rule] == expected


def test_mcp_and_a2a_findings_name_the_tool_or_skill() -> None:
    typed = tool("a")
    typed["inputSchema"] = {
        "type": "object",
        "properties": {"q": {"type": "integer"}},
        "required": ["q"],
    }
    tools = {c.rule: what_fails(c) for c in diff_mcp(snap([tool("a"), tool("b")]), snap([typed]))}
    assert (
        tools["tool-removed"]
        == "A call to tool `b` now fails: the server no longer lists the tool."
    )
    assert tools["tool-input-property-type-changed"] == (
        "A call to tool `a` that sends `q` as `string` is now refused: it must be `integer`."
    )
    skills = {c.rule: what_fails(c) for c in diff_agent_card(card([skill("refund")]), card([]))}
    assert skills["skill-removed"] == (
        "A task for skill `refund` now fails: the agent no longer has the skill."
    )


def test_values_are_cut_short_and_query_values_elided() -> None:
    assert short("x" * 500) == "`" + "x" * 39 + "…`"
    assert short("https://i.example/t?key=abc&x=1") == "`https://i.example/t?key=…&x=…`"
    change = Change(
        path="/paths/~1v1~1charges/post/requestBody/content/application~1json/schema",
        severity=Severity.BREAKING,
        summary="constant changed",
        rule="request-body-const-changed",
        before={"huge": "v" * 10_000},
        after="new",
    )
    text = what_fails(change) or ""
    assert len(text) < 200 and "v" * 50 not in text
    assert text.startswith("A request to `POST /v1/charges` that sends the body = `{")


def test_the_explanation_leads_the_hint_with_what_fails() -> None:
    change = next(
        c
        for c in diff_openapi(_spec(), _openapi_spec_without_usd())
        if c.rule == "request-property-enum-value-removed"
    )
    explained = explain_changes([change])["changes"][0]
    rule_hint = CATALOG[change.rule].hint
    assert explained["hint"] == f"{what_fails(change)} {rule_hint}"
    assert "`POST /v1/charges`" in explained["hint"] and '`"usd"`' in explained["hint"]


def _openapi_spec_without_usd() -> dict[str, Any]:
    revision = _spec()
    _charges(revision)["currency"]["enum"] = ["eur"]
    return revision


def test_a_draft_pull_request_row_says_what_fails_with_the_value() -> None:
    """A drift event's change keeps its what-fails text when listed for the pull request
    (the listing drops `before` and `location`)."""
    change = next(
        c
        for c in diff_openapi(_spec(), _openapi_spec_without_usd())
        if c.rule == "request-property-enum-value-removed"
    )
    listed = _requested(change.to_json())
    assert set(listed) == {"path", "severity", "message", "rule", "fails"}
    text = changelog.render_changelog(
        watch_name="payments",
        watch_url="https://x.example/openapi.json",
        event_id="e1",
        changes=[_line(listed)],
        link=None,
    )
    assert 'sends `currency` = `"usd"` is now refused' in text
    assert "A request to `POST /v1/charges`" in text
