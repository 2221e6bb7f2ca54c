"""The hosted product's own file examples, read by driftgate as they are: its consumer
profiles (`examples/profiles/`) stored and used to validate payloads through the API. (Its
`agents.yaml` examples: tests/gitsources/test_hosted_agents.py.) Skips without the snapshot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from tests.conftest import OrgKey

EXAMPLES = Path(__file__).resolve().parents[2].parent / "shared/clients/driftguard/examples"
PROFILES = sorted((EXAMPLES / "profiles").glob("*.json")) if EXAMPLES.is_dir() else []

# For each example profile: a payload it accepts and one it refuses.
PAYLOADS = {
    "agent-structured-output": (
        {"answer": "42", "citations": []},
        {"answer": "", "citations": []},
    ),
    # A tool call envelope (`preset: mcp`): the schema applies to its `arguments`.
    "mcp-tool-call": (
        {"name": "search", "arguments": {"query": "refunds", "limit": 5}},
        {"name": "search", "arguments": {"limit": 500}},
    ),
}


@pytest.mark.skipif(
    not PROFILES, reason=f"the hosted clients' examples are not beside the repository ({EXAMPLES})"
)
@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.stem)
def test_the_hosted_example_profiles_are_stored_and_validate(
    client: FlaskClient, acme: OrgKey, path: Path
) -> None:
    profile = json.loads(path.read_text())
    stored = client.put(
        f"/api/ingress-profiles/{profile['id']}", json=profile, headers=acme.headers
    )
    assert stored.status_code == 201, stored.get_json()
    good, bad = PAYLOADS[profile["id"]]
    body = {"profileId": profile["id"], "payload": good, "options": {"mode": "block"}}
    accepted = client.post("/api/validate", json=body, headers=acme.headers)
    assert accepted.status_code == 200 and accepted.get_json()["ok"] is True, accepted.get_json()
    refused = client.post("/api/validate", json={**body, "payload": bad}, headers=acme.headers)
    answer = refused.get_json()
    assert refused.status_code == 422 and answer["ok"] is False and answer["errors"], answer
