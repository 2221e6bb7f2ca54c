"""Every feature of the plans table (`controller.model.plans.FEATURES`, what docs/plans.md and
the console's plans page list) is enforced as listed: for each feature, a request on an org of
each plan is refused (or answered as below the plan) exactly when the table says the plan
lacks it. A feature added to the table without a probe here fails the test, so the page
cannot promise what the server does not check."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient

from controller.model.plans import FEATURES, PLANS, allows
from tests.conftest import OrgKey

PROFILE = {"id": "order", "version": 1, "schema": {"type": "object"}}


def refused_for_the_plan(answer: Any) -> bool:
    return answer.status_code == 403 and answer.get_json()["error"] == "plan_required"


# feature -> (a request of an org, whether its answer is the one below the plan)
Probe = Callable[[FlaskClient, OrgKey], Any]
PROBES: dict[str, tuple[Probe, Callable[[Any], bool]]] = {
    "validate_api": (
        lambda c, o: c.post(
            "/api/validate", json={"payload": {}, "profile": PROFILE}, headers=o.headers
        ),
        refused_for_the_plan,
    ),
    "coverage_assert": (
        lambda c, o: c.post(
            "/api/coverage/assert", json={"text": "https://x.example.com/v1"}, headers=o.headers
        ),
        refused_for_the_plan,
    ),
    "a2a_coverage_assert": (
        lambda c, o: c.post("/api/a2a/coverage/assert", json={}, headers=o.headers),
        refused_for_the_plan,
    ),
    "overlay_products": (
        lambda c, o: c.put(
            "/api/org/products/draftpr_repo", json={"enabled": True}, headers=o.headers
        ),
        refused_for_the_plan,
    ),
    "replay_install": (
        lambda c, o: c.post("/v1/replay/fixtures/install", json={"id": "x"}, headers=o.headers),
        refused_for_the_plan,
    ),
    "live_ask": (
        lambda c, o: c.post("/api/ask", json={"question": "what broke?"}, headers=o.headers),
        lambda answer: answer.status_code == 200 and answer.get_json()["fixture"] is True,
    ),
}


def test_every_feature_of_the_table_has_a_probe() -> None:
    assert sorted(PROBES) == sorted(FEATURES)


@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_a_feature_is_enforced_as_the_table_says(
    client: FlaskClient, make_org: Callable[..., OrgKey], feature: str
) -> None:
    probe, below = PROBES[feature]
    answers = {plan: probe(client, make_org(f"on-{plan}", plan)) for plan in PLANS}
    lacking = {plan: below(answer) for plan, answer in answers.items()}
    assert lacking == {plan: not allows(plan, feature) for plan in PLANS}, {
        plan: answer.get_json() for plan, answer in answers.items()
    }
    # A refusal names the plan the table asks for, and the command that sets it.
    refused = answers["free"].get_json()
    if refused.get("error") == "plan_required":
        minimum = FEATURES[feature].minimum
        assert f"needs the {minimum} plan or higher" in refused["message"]
        assert f"driftgate orgs set-plan on-free {minimum}" in refused["message"]
