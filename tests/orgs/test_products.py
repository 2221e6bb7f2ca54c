"""Overlay products through the API: an org lists and toggles them within its plan, and a key's
cached products follow at once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from flask.testing import FlaskClient

from controller.store.db import Database
from tests.conftest import OrgKey


def test_products_are_listed_and_toggled_by_the_org(
    client: FlaskClient, make_org: Callable[..., OrgKey], database: Database, tmp_path: Path
) -> None:
    paid = make_org("paid", "team")
    listed = client.get("/api/org/products", headers=paid.headers).get_json()
    assert listed == {
        "plan": "team",
        "canEnable": True,
        "products": [
            {"product": "replay_cloud", "enabled": False},
            {"product": "draftpr_repo", "enabled": False},
            {"product": "toolmanifest_org", "enabled": False},
        ],
    }
    on = client.put("/api/org/products/draftpr_repo", json={"enabled": True}, headers=paid.headers)
    assert on.status_code == 200
    assert [p["product"] for p in on.get_json()["products"] if p["enabled"]] == ["draftpr_repo"]
    # The key's cached products follow at once: the product-gated call is allowed now.
    assert (
        client.post(
            "/v1/draftpr/draft-pr/merged", json={"draftPrId": "nope"}, headers=paid.headers
        ).status_code
        == 404
    )
    free = make_org("freebie", "free")
    refused = client.put(
        "/api/org/products/replay_cloud", json={"enabled": True}, headers=free.headers
    )
    assert refused.status_code == 403 and "free plan" in refused.get_json()["message"]
    assert (
        client.put(
            "/api/org/products/nope", json={"enabled": True}, headers=paid.headers
        ).status_code
        == 404
    )
    assert (
        client.put(
            "/api/org/products/replay_cloud", json={"enabled": "yes"}, headers=paid.headers
        ).status_code
        == 400
    )
