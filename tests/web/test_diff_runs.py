"""Diff runs through the API on a real store: two OpenAPI documents diffed and kept, opened
again by id and in the console, another org's run a 404, documents that reach outside
themselves refused, the hosted CLI's `openapi-diff --remote` route answering its `runId`,
and old runs pruned by retention."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml
from flask import Flask
from flask.testing import FlaskClient

from controller.retention import service as retention
from controller.store.db import Database
from controller.store.models import DiffRun
from controller.store.types import utcnow
from tests.conftest import OrgKey, make_settings
from tests.factories import make_user, sign_in
from tests.specs import charges_spec


def create(client: FlaskClient, who: OrgKey, body: Any, path: str = "/api/openapi/diffs") -> Any:
    return client.post(path, json=body, headers=who.headers)


def test_a_run_diffs_two_documents_and_is_kept_for_its_link(
    app: Flask,
    client: FlaskClient,
    acme: OrgKey,
    make_org: Callable[..., OrgKey],
    database: Database,
) -> None:
    body = {
        "before": charges_spec(),
        "after": charges_spec(refunds=False),
        "baseLabel": "v1.yaml",
        "targetLabel": "v2.yaml",
        "source": "cli",
    }
    answer = create(client, acme, body)
    assert answer.status_code == 201, answer.get_json()
    run = answer.get_json()
    assert run["counts"]["breaking"] >= 1
    removed = [c for c in run["changes"] if c["severity"] == "breaking"]
    assert removed and all(c["hint"] for c in removed)
    assert any("refund" in c["path"] for c in removed), removed
    assert (run["baseLabel"], run["targetLabel"], run["source"]) == ("v1.yaml", "v2.yaml", "cli")
    assert run["url"] == f"http://localhost/console/diffs/{run['id']}"
    # Opened again: the same run.
    again = client.get(f"/api/openapi/diffs/{run['id']}", headers=acme.headers)
    assert again.status_code == 200 and again.get_json() == run
    # Another org's id is a 404, in the API and in the console.
    beta = make_org("beta", "pro")
    assert client.get(f"/api/openapi/diffs/{run['id']}", headers=beta.headers).status_code == 404
    make_user(database, "acme", "admin@example.com")
    make_user(database, "beta", "other@example.com")
    page = sign_in(app.test_client(), "admin@example.com").get(f"/console/diffs/{run['id']}")
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and "v1.yaml" in text and "breaking" in text
    assert removed[0]["hint"].split(".")[0] in text
    other = sign_in(app.test_client(), "other@example.com").get(f"/console/diffs/{run['id']}")
    assert other.status_code == 404


def test_the_same_document_twice_is_no_change_and_yaml_text_is_read(
    client: FlaskClient, acme: OrgKey
) -> None:
    text = yaml.safe_dump(charges_spec())
    answer = create(client, acme, {"before": text, "after": charges_spec()})
    assert answer.status_code == 201, answer.get_json()
    run = answer.get_json()
    assert run["changes"] == [] and run["counts"] == {"breaking": 0, "warning": 0, "info": 0}
    assert (run["baseLabel"], run["targetLabel"], run["source"]) == ("before", "after", "api")


def test_documents_that_are_not_openapi_or_reach_outside_are_refused(
    client: FlaskClient, acme: OrgKey, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"type": "object"}')
    outside = charges_spec()
    outside["components"]["schemas"]["Charge"]["properties"]["leak"] = {"$ref": f"file://{secret}"}
    for before, word in (
        ({"hello": "world"}, "openapi"),
        (outside, "outside the two documents"),
        ("openapi: [unclosed", "yaml"),
    ):
        answer = create(client, acme, {"before": before, "after": charges_spec()})
        assert answer.status_code == 422, answer.get_json()
        error = answer.get_json()
        assert error["error"] == "invalid_contract" and word in error["message"].lower(), error
    # Nothing kept of a refused run.
    assert client.get("/api/openapi/diffs/x", headers=acme.headers).status_code == 404


def test_the_hosted_clis_remote_diff_answers_its_run_id(client: FlaskClient, acme: OrgKey) -> None:
    body = {"before": charges_spec(), "after": charges_spec(refunds=False), "source": "cli"}
    answer = create(client, acme, body, "/api/openapi/diff/remote")
    assert answer.status_code == 201, answer.get_json()
    run = answer.get_json()
    assert run["runId"] == run["id"] and run["url"].endswith(f"/console/diffs/{run['id']}")
    kept = client.get(f"/api/openapi/diffs/{run['runId']}", headers=acme.headers).get_json()
    assert kept["counts"] == run["counts"]


def test_retention_prunes_old_runs(
    client: FlaskClient, acme: OrgKey, database: Database, tmp_path: Path
) -> None:
    for _ in range(2):
        assert (
            create(client, acme, {"before": charges_spec(), "after": charges_spec()}).status_code
            == 201
        )
    with database.transaction() as session:
        old = session.query(DiffRun).first()
        assert old is not None
        old.created_at = utcnow() - timedelta(days=31)
    settings = make_settings(tmp_path, database_url=database.url)
    assert retention.prune(database, settings, utcnow())["diffRuns"] == 1
    with database.session() as session:
        assert session.query(DiffRun).count() == 1
