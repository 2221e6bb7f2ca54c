"""Secrets in `.driftgate/` files: a plain secret in a header is refused without being echoed,
`${env:NAME}` references and ordinary headers are accepted, and which header names count as
sensitive."""

from __future__ import annotations

import pytest

from controller.model.gitops import (
    env_reference,
    is_sensitive_header,
)
from tests.gitsources.conftest import (
    SECRET_SETS,
    VALID_TEMPLATES,
    load,
)


def test_plain_secrets_are_refused_without_being_echoed() -> None:
    found = load(watch_sets=SECRET_SETS).problems
    assert [(p.line, p.column, p.message) for p in found] == [
        (9, 26, "header Authorization: plain secrets in git are refused: use ${env:NAME}"),
        (10, 22, "header X-Api-Key: plain secrets in git are refused: use ${env:NAME}"),
        (
            11,
            28,
            "header X-Session-Token: write ${env:NAME} with NAME in A-Z, 0-9 and _ "
            "(the whole value)",
        ),
        (14, 11, "'Bad Header' is not a valid header name"),
    ]
    assert found[0].path == "watchSets[0].watches[0].headers.Authorization"
    assert found[3].path == 'watchSets[0].watches[0].headers["Bad Header"]'
    assert not any("sk_live" in str(p) or "lower_case" in str(p) for p in found)


def test_env_references_and_plain_ordinary_headers_are_accepted() -> None:
    bundle = load(templates=VALID_TEMPLATES)
    assert bundle.problems == []
    assert bundle.templates is not None
    headers = bundle.templates.templates[0].headers
    assert env_reference(headers["Authorization"]) == "STRIPE_AUTHORIZATION"
    assert env_reference(headers["Stripe-Version"]) is None


@pytest.mark.parametrize(
    ("name", "sensitive"),
    [
        ("Authorization", True),
        ("proxy-authorization", True),
        ("Cookie", True),
        ("X-API-Key", True),
        ("X-Auth-Token", True),
        ("X-Client-Secret", True),
        ("Db-Password", True),
        ("Accept", False),
        ("Stripe-Version", False),
        ("Set-Cookie-Policy", False),
    ],
)
def test_sensitive_header_names(name: str, sensitive: bool) -> None:
    assert is_sensitive_header(name) is sensitive
    text = (
        "version: 1\ntemplates:\n  - name: t\n    watchType: rest\n"
        f"    urlPattern: https://x.example.com/v1\n    headers:\n      {name}: plain\n"
    )
    assert load(templates=text).ok is not sensitive
