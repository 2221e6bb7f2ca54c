"""The replay catalog: public browsing, the shipped fixtures kept in sync with driftgate's MCP
engine (and with the real MCP release pairs they come from, when that corpus is beside the
clone), and installing one (gated)."""

from __future__ import annotations

import gzip
import io
import json
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from controller.diffs import diff_mcp
from controller.orgs import auth_service as auth
from controller.replay.catalog import CATALOG_DIR
from controller.replay.fixtures import build_fixture
from tests.conftest import OrgKey

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.replay_catalog import CORPUS, build  # noqa: E402


def test_each_shipped_fixture_is_what_the_engine_gives_from_its_own_contracts() -> None:
    """Needs only the repository: each fixture's changes, counts and mocks are what driftgate
    makes of the before and after contracts the fixture ships."""
    shipped = sorted(CATALOG_DIR.glob("*.json"))
    assert len(shipped) >= 20
    for path in shipped:
        fixture = json.loads(path.read_text(encoding="utf-8"))
        files, row = fixture["files"], fixture["row"]
        before = json.loads(files["before.schema.json"])
        after = json.loads(files["after.schema.json"])
        meta = json.loads(files["cloud-meta.json"])
        changes = [c.to_json() for c in diff_mcp(before, after)]
        rebuilt = build_fixture(
            fixture_id=meta["fixtureId"],
            watch_type="mcp",
            before=before,
            after=after,
            changes=changes,
            content_kind=meta["contentKind"],
            source=meta["source"],
            created_at=meta["createdAt"],
        )
        assert rebuilt.files == files, (
            f"{path.name} is stale: run python bench/replay_catalog.py --write"
        )
        counts = {s: sum(c["severity"] == s for c in changes) for s in row["changes"]}
        assert counts == row["changes"] and row["id"] == meta["fixtureId"] == path.stem


@pytest.mark.skipif(
    not (CORPUS / "cases.json").exists(),
    reason=f"the MCP release pairs corpus is not present at {CORPUS}",
)
def test_the_shipped_catalog_is_what_the_real_pairs_give() -> None:
    built = build()
    shipped = {p.name: p.read_text(encoding="utf-8") for p in CATALOG_DIR.glob("*.json")}
    assert shipped == built, (
        "controller/replay/catalog is stale: run python bench/replay_catalog.py --write"
    )
    assert len(shipped) >= 20


def test_the_catalog_is_public_filtered_and_paged(client: FlaskClient) -> None:
    page = client.get("/v1/replay/fixtures/catalog")
    assert page.status_code == 200
    body = page.get_json()
    assert "not a certification" in body["disclaimer"]
    kinds = {r["contentKind"] for r in body["rows"]}
    assert kinds <= {"oss-curated", "hosted-stub"} and "oss-curated" in kinds
    everything = body["rows"]
    while body["nextCursor"]:
        body = client.get(f"/v1/replay/fixtures/catalog?cursor={body['nextCursor']}").get_json()
        everything += body["rows"]
    oss = [r for r in everything if r["contentKind"] == "oss-curated"]
    assert len(oss) >= 20 and all(r["installable"] for r in oss)
    stubs = [r for r in everything if r["contentKind"] == "hosted-stub"]
    assert stubs and not any(r["installable"] for r in stubs)
    assert all("not vendor-verified" in r["title"] for r in stubs)
    small = client.get("/v1/replay/fixtures/catalog?limit=5").get_json()
    assert len(small["rows"]) == 5 and small["nextCursor"] == "5"
    context7 = client.get("/v1/replay/fixtures/catalog?vendor=@upstash/context7-mcp").get_json()[
        "rows"
    ]
    vendors = {
        r["vendor"] for r in client.get("/v1/replay/fixtures/catalog?limit=200").get_json()["rows"]
    }
    assert (
        all(r["vendor"] == "@upstash/context7-mcp" for r in context7)
        or "@upstash/context7-mcp" not in vendors
    )
    breaking = client.get("/v1/replay/fixtures/catalog?tag=breaking&limit=200").get_json()["rows"]
    assert breaking and all(r["changes"]["breaking"] > 0 for r in breaking)


def test_install_is_gated_and_answers_the_files(
    client: FlaskClient, make_org: Callable[..., OrgKey]
) -> None:
    fixture_id = sorted(p.stem for p in CATALOG_DIR.glob("*.json"))[0]
    free = make_org("freebie", "free")
    assert (
        client.post(
            "/v1/replay/fixtures/install", json={"id": fixture_id}, headers=free.headers
        ).status_code
        == 403
    )
    plain = make_org("plain", "pro")
    refused = client.post(
        "/v1/replay/fixtures/install", json={"id": fixture_id}, headers=plain.headers
    )
    assert (
        refused.status_code == 403
        and refused.get_json()["error"] == "PRODUCT_REQUIRED: replay_cloud"
    )
    who = make_org("acme", "pro", products=("replay_cloud",))
    installed = client.post(
        "/v1/replay/fixtures/install", json={"id": fixture_id}, headers=who.headers
    )
    assert installed.status_code == 200
    files = installed.get_json()["files"]
    assert {"before.schema.json", "after.schema.json", "cloud-meta.json"} <= set(files)
    assert json.loads(files["cloud-meta.json"])["contentKind"] == "oss-curated"
    archive = client.post(
        "/v1/replay/fixtures/install",
        json={"id": fixture_id},
        headers={**who.headers, "Accept": "application/gzip"},
    )
    assert archive.mimetype == "application/gzip"
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(archive.data))) as tar:
        names = sorted(m.name for m in tar.getmembers())
    assert names == sorted(f"{fixture_id}/{p}" for p in files)
    missing = client.post("/v1/replay/fixtures/install", json={"id": "nope"}, headers=who.headers)
    assert missing.status_code == 404


def test_replay_cloud_is_toggled_through_the_api_and_the_cli(
    client: FlaskClient, make_org: Callable[..., OrgKey], settings: Any
) -> None:
    from click.testing import CliRunner

    from cli.main import main

    paid = make_org("paid", "team")
    fixture_id = sorted(catalog_ids())[0]

    def install() -> int:
        answer = client.post(
            "/v1/replay/fixtures/install", json={"id": fixture_id}, headers=paid.headers
        )
        return answer.status_code

    assert install() == 403
    on = client.put("/api/org/products/replay_cloud", json={"enabled": True}, headers=paid.headers)
    assert on.status_code == 200 and install() == 200
    off = client.put(
        "/api/org/products/replay_cloud", json={"enabled": False}, headers=paid.headers
    )
    assert off.status_code == 200 and install() == 403
    env = {
        "DRIFTGATE_DATABASE_URL": settings.database_url,
        "DRIFTGATE_DATA_DIR": str(settings.data_dir),
    }
    enabled = CliRunner().invoke(main, ["orgs", "enable-product", "paid", "replay_cloud"], env=env)
    assert enabled.exit_code == 0, enabled.output
    auth.KEY_CACHE.clear()  # changed by another process: this one would follow within seconds
    assert install() == 200
    disabled = CliRunner().invoke(
        main, ["orgs", "disable-product", "paid", "replay_cloud"], env=env
    )
    assert disabled.exit_code == 0, disabled.output
    auth.KEY_CACHE.clear()
    assert install() == 403


def catalog_ids() -> list[str]:
    return [p.stem for p in CATALOG_DIR.glob("*.json")]
