"""Discovery through the API on a real store: suggestions (and creating them), coverage assert
and preview, and a repository scan of a real git tree."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from controller.discovery.scan import VENDORS
from tests.conftest import OrgKey

MCP_JSON = json.dumps(
    {
        "mcpServers": {
            "billing": {
                "type": "http",
                "url": "https://mcp.billing.example/mcp",
                "headers": {"Authorization": "Bearer sk_live_very_secret"},
            },
            "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]},
        }
    }
)


def test_suggest_marks_existing_watches_and_creates_the_new_ones(
    client: FlaskClient, acme: OrgKey
) -> None:
    existing = client.post(
        "/api/watches",
        json={"name": "pay", "url": "https://api.pay.example/openapi.json"},
        headers=acme.headers,
    ).get_json()
    body = {
        "urls": ["https://api.pay.example/openapi.json/"],
        "text": "see https://status.example/v1/incidents",
        "mcpJson": MCP_JSON,
        "fileName": ".mcp.json",
    }
    answer = client.post("/api/watches/suggest", json=body, headers=acme.headers)
    assert answer.status_code == 200, answer.get_json()
    found = {c["name"]: c for c in answer.get_json()["candidates"]}
    assert found["pay"]["existingWatchId"] == existing["id"]
    assert found["billing"]["headers"] == {"Authorization": "<redacted>"}
    assert "sk_live" not in answer.get_data(as_text=True)
    assert found["fs"]["floatingVersion"] is True and found["fs"]["transport"] == "stdio"
    assert found["status"]["watchType"] == "rest"
    created = client.post(
        "/api/watches/suggest", json={**body, "create": True}, headers=acme.headers
    ).get_json()
    assert len(created["created"]) == 2 and created["notCreated"] == ["fs"]
    names = {
        w["name"] for w in client.get("/api/watches", headers=acme.headers).get_json()["watches"]
    }
    assert {"pay", "billing", "status"} <= names
    again = client.post("/api/watches/suggest", json={**body, "create": True}, headers=acme.headers)
    assert again.get_json()["created"] == []  # all watched now


def test_an_mcp_configuration_may_come_as_an_object(client: FlaskClient, acme: OrgKey) -> None:
    # The hosted MCP server's suggest_watches and assert_coverage send the parsed object.
    # An object reads as its JSON text with a 2-space indent (lines in answers are of that).
    as_text = {"mcpJson": json.dumps(json.loads(MCP_JSON), indent=2), "fileName": ".mcp.json"}
    as_object = {"mcpJson": json.loads(MCP_JSON), "fileName": ".mcp.json"}
    for path in ("/api/watches/suggest", "/api/coverage/assert"):
        text = client.post(path, json=as_text, headers=acme.headers)
        parsed = client.post(path, json=as_object, headers=acme.headers)
        assert parsed.status_code == text.status_code, parsed.get_json()
        assert parsed.get_json() == text.get_json()
        assert "sk_live" not in parsed.get_data(as_text=True)
    config = client.post(
        "/api/watches/suggest", json={"config": json.loads(MCP_JSON)}, headers=acme.headers
    )
    assert {c["name"] for c in config.get_json()["candidates"]} == {"billing", "fs"}
    for wrong in ([1, 2], 5, True):
        refused = client.post("/api/watches/suggest", json={"mcpJson": wrong}, headers=acme.headers)
        assert refused.status_code == 400 and refused.get_json()["error"] == "validation_error"


def test_suggest_refuses_a_malformed_configuration_with_its_line(
    client: FlaskClient, acme: OrgKey
) -> None:
    bad = client.post(
        "/api/watches/suggest",
        json={
            "config": '{\n "mcpServers": {\n  "a": {"url": "x" "b": 1}\n }\n}',
            "fileName": ".mcp.json",
        },
        headers=acme.headers,
    )
    assert bad.status_code == 422 and bad.get_json()["error"] == "config_invalid"
    assert bad.get_json()["message"].startswith(".mcp.json:3:")
    assert client.post("/api/watches/suggest", json={}, headers=acme.headers).status_code == 400


@pytest.mark.hosted_routes
def test_coverage_assert_and_preview(client: FlaskClient, make_org: Callable[..., OrgKey]) -> None:
    # No bucket refills while the test runs (the preview's: one every 2 s).
    client.application.extensions["driftgate.ratelimiter"].clock = lambda: 1000.0
    paid = make_org("paid", "pro")
    free = make_org("freebie", "free")
    body = {"mcpJson": MCP_JSON, "fileName": ".mcp.json", "runId": "ci-1", "repo": "acme/app"}
    assert client.post("/api/coverage/assert", json=body, headers=free.headers).status_code == 403
    missing = client.post("/api/coverage/assert", json=body, headers=paid.headers)
    assert missing.status_code == 422
    answer = missing.get_json()
    assert answer["error"] == "missing_watches" and answer["missingCount"] == 2
    assert {m["name"] for m in answer["missing"]} == {"billing", "fs"}
    assert answer["missing"][0]["source"]["file"] == ".mcp.json"
    client.post(
        "/api/watches",
        json={"name": "billing", "url": "https://mcp.billing.example/mcp", "watchType": "mcp"},
        headers=paid.headers,
    )
    still = client.post("/api/coverage/assert", json=body, headers=paid.headers).get_json()
    assert [m["name"] for m in still["missing"]] == ["fs"]  # a stdio server needs its own watch
    remote_only = {"text": "https://mcp.billing.example/mcp"}
    ok = client.post("/api/coverage/assert", json=remote_only, headers=paid.headers)
    assert ok.status_code == 200 and ok.get_json()["covered"] is True
    # The preview: no key, no org data (nothing says the billing watch exists), rate limited.
    preview = client.post("/api/coverage/preview", json=remote_only)
    assert preview.status_code == 200
    assert all(c["existingWatchId"] is None for c in preview.get_json()["candidates"])
    # The gate's names for the same analysis (the hosted CLI's fail-on-missing reads them).
    both = client.post("/api/coverage/preview", json=body).get_json()
    assert both["missingCount"] == both["asserted"] == 2
    assert [m["name"] for m in both["missing"]] == [m["name"] for m in answer["missing"]]
    assert both["discovered"] == both["candidates"] and len(both["candidates"]) == 2
    assert both["message"].startswith("2 contract(s) found")
    statuses = [
        client.post("/api/coverage/preview", json=remote_only).status_code for _ in range(40)
    ]
    assert 429 in statuses
    limited = client.post("/api/coverage/preview", json=remote_only)
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1


def repository(tmp_path: Path) -> dict[str, Any]:
    """A repository tree as a team has it: configs at their real paths."""
    return {
        ".mcp.json": MCP_JSON,
        ".vscode/mcp.json": json.dumps(
            {"servers": {"docs": {"type": "sse", "url": "https://docs.example/sse"}}}
        ),
        "package.json": json.dumps({"dependencies": {"stripe": "^14.0.0", "left-pad": "1.0.0"}}),
        "requirements.txt": "flask==3.0\nopenai>=1.0\n",
        ".env.example": "PAYMENTS_BASE_URL=https://api.payments.example/v2\nDEBUG=true\n",
        "openapitools.json": json.dumps(
            {
                "generator-cli": {
                    "generators": {
                        "client": {"inputSpec": "https://specs.example/orders/openapi.yaml"}
                    }
                }
            }
        ),
        "docs/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00binary",
        "README.md": "nothing to see at https://example.com/blog",
    }


def checkout(tmp_path: Path) -> Path:
    """A git checkout with the repository's files at their real paths and a .gitignore."""
    import pygit2

    root = tmp_path / "app"
    pygit2.init_repository(str(root))
    for path, content in {
        **repository(tmp_path),
        ".gitignore": "ignored/\n",
        "ignored/.mcp.json": MCP_JSON.replace("billing", "hidden"),
    }.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content if isinstance(content, bytes) else content.encode())
    return root


def test_repo_scan_of_a_real_tree_through_the_api_and_the_cli(
    tmp_path: Path, client: FlaskClient, acme: OrgKey
) -> None:
    from click.testing import CliRunner

    from cli.commands.discovery import checkout_files
    from cli.main import main

    root = checkout(tmp_path)
    files = checkout_files(str(root))
    assert not any(path.startswith("ignored/") for path, _ in files)  # .gitignore respected
    body = {"files": [{"path": path, "content": data.decode("latin-1")} for path, data in files]}
    answer = client.post("/api/repo/scan", json=body, headers=acme.headers)
    assert answer.status_code == 200, answer.get_json()
    result = answer.get_json()
    found = {(c["name"], c["source"]["file"]) for c in result["candidates"]}
    assert ("billing", ".mcp.json") in found and ("docs", ".vscode/mcp.json") in found
    assert ("stripe", "package.json") in found and ("openai", "requirements.txt") in found
    assert ("payments", ".env.example") in found and ("specs", "openapitools.json") in found
    assert result["skippedBinary"] == 1
    lines = {c["name"]: c["source"]["line"] for c in result["candidates"]}
    assert lines["payments"] == 1 and lines["stripe"] is not None
    stripe = next(c for c in result["candidates"] if c["name"] == "stripe")
    assert stripe["url"] == VENDORS["stripe"][1]
    cli = CliRunner().invoke(main, ["scan", str(root), "--format", "json"])
    assert cli.exit_code == 0, cli.output
    offline = json.loads(cli.output)
    assert offline["candidates"] == result["candidates"]  # identical results
    fragment = CliRunner().invoke(main, ["scan", str(root), "--emit", "watch-set"]).output
    assert fragment.startswith("version: 1\nwatchSets:\n- name: discovered\n")
    assert "https://mcp.billing.example/mcp" in fragment
    sarif = json.loads(CliRunner().invoke(main, ["scan", str(root), "--format", "sarif"]).output)
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"]
    too_many = {"files": [{"path": f"f{i}", "content": ""} for i in range(5001)]}
    assert client.post("/api/repo/scan", json=too_many, headers=acme.headers).status_code in (
        400,
        413,
    )


@pytest.mark.hosted_routes
def test_secret_values_never_come_back_or_stay(
    client: FlaskClient, acme: OrgKey, database: Any, capfd: Any
) -> None:
    from sqlalchemy import text

    from tests.conftest import ON_POSTGRES

    marker = "MARKERsecret9f31"
    config = json.dumps(
        {
            "mcpServers": {
                "api": {
                    "type": "http",
                    "url": "https://secret.example/mcp",
                    "headers": {"Authorization": f"Bearer {marker}", "X-Key": marker},
                },
                "local": {
                    "command": "npx",
                    "args": ["-y", "tool", f"API_KEY={marker}"],
                    "env": {"TOKEN": marker},
                },
            }
        }
    )
    answers = [
        client.post(
            "/api/watches/suggest", json={"mcpJson": config, "create": True}, headers=acme.headers
        ),
        client.post(
            "/api/repo/scan",
            json={"files": [{"path": ".mcp.json", "content": config}]},
            headers=acme.headers,
        ),
        client.post("/api/coverage/assert", json={"mcpJson": config}, headers=acme.headers),
        client.post("/api/coverage/preview", json={"config": config}),
    ]
    for answer in answers:
        assert answer.status_code in (200, 422), answer.get_json()
        assert marker not in answer.get_data(as_text=True)
    out, err = capfd.readouterr()
    assert marker not in out + err
    with database.engine.connect() as conn:
        query = (
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            if ON_POSTGRES
            else "SELECT name FROM sqlite_master WHERE type = 'table'"
        )
        for (table,) in conn.execute(text(query)).all():
            rows = conn.execute(text(f'SELECT * FROM "{table}"')).fetchall()
            assert marker not in repr(rows), table


def test_a_watch_from_a_reconciled_watch_set_covers_the_contract(
    client: FlaskClient, acme: OrgKey, repo: Any, make_reconciler: Any
) -> None:
    from cli.commands.discovery import watch_set_fragment
    from tests.factories import run

    body = {"mcpJson": MCP_JSON, "fileName": ".mcp.json"}
    missing = client.post("/api/coverage/assert", json=body, headers=acme.headers).get_json()
    remote = [m for m in missing["missing"] if m["url"]]
    # The fix of a failing coverage job is a commit: the fragment scan --emit watch-set prints.
    fragment = watch_set_fragment([{**m, "watchType": m["watchType"]} for m in remote])
    repo.commit({".driftgate/watch-sets.yaml": fragment})
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    assert run(reconciler, settings).result == "applied"
    after = client.post(
        "/api/coverage/assert",
        json={**body, "minConfidence": 0.9},  # the remote server only (stdio is 0.8)
        headers=acme.headers,
    )
    assert after.status_code == 200, after.get_json()
    assert [c["name"] for c in after.get_json()["watched"]] == ["billing"]
