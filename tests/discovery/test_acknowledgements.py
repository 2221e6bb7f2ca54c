"""Repository scan details and acknowledged local servers: a dependency is cited at its own
line and a vendor's OpenAPI description is typed `openapi` wherever it is found; the
coverage gate (assert and preview) accepts a local stdio server acknowledged in
`.driftgate/coverage.yaml` for its exact command line, and refuses a file it cannot read."""

from __future__ import annotations

import json

import pytest
from flask.testing import FlaskClient

from controller.discovery.acknowledgements import parse_acknowledgements, render
from controller.discovery.extract import ConfigInvalid, from_text, from_urls
from controller.discovery.scan import VENDORS, scan_files
from tests.conftest import OrgKey

PACKAGE_JSON = """{
  "name": "openai-stripe-bot",
  "description": "uses stripe",
  "dependencies": {"openai": "^4"},
  "devDependencies": {
    "stripe": "^14"
  }
}
"""
REQUIREMENTS = "# stripe and twilio are the vendors\nrequests==2.32\ntwilio>=9\n"
PYPROJECT = (
    '[project]\nname = "pygithub-tools"\ndependencies = [\n  "httpx",\n  "PyGithub>=2",\n]\n'
)


def test_a_dependency_is_cited_at_its_own_line_and_typed_openapi() -> None:
    result = scan_files(
        [
            ("package.json", PACKAGE_JSON),
            ("requirements.txt", REQUIREMENTS),
            ("pyproject.toml", PYPROJECT),
        ]
    )
    found = {(c.name, c.file, c.line, c.watch_type) for c in result.candidates}
    assert found == {
        ("openai", "package.json", 4, "openapi"),
        ("stripe", "package.json", 6, "openapi"),
        ("twilio", "requirements.txt", 3, "openapi"),
        ("github", "pyproject.toml", 5, "openapi"),
    }
    # Every vendor URL is an OpenAPI description, whatever its file name looks like.
    everything = json.dumps({"dependencies": dict.fromkeys(VENDORS, "1")}, indent=2)
    vendors = scan_files([("package.json", everything)]).candidates
    assert {c.url for c in vendors} == {url for _, url in VENDORS.values()}
    assert {c.watch_type for c in vendors} == {"openapi"}


def test_the_same_url_gets_the_same_type_as_the_watch_created_from_it() -> None:
    from controller.model.watch import infer_watch_type

    urls = [
        "https://raw.githubusercontent.com/stripe/openapi/master/openapi/spec3.json",
        "https://api.example.com/v3/api-docs",
        "https://docs.example.com/swagger/v1/swagger.json",
        "https://mcp.example.com/",
        "https://example.com/spec.yaml",
    ]
    for url in urls:
        (candidate,) = from_urls([url])
        inferred = infer_watch_type(url)
        assert inferred is not None and candidate.watch_type == inferred.value, url
    (text,) = from_text("see https://raw.githubusercontent.com/acme/openapi/main/spec.json")
    assert text.watch_type == "openapi"
    (plain,) = from_urls(["https://api.example.com/v1/charges"])
    assert plain.watch_type == "rest"


def test_the_acknowledgements_file_is_read_strictly() -> None:
    text = render([])
    assert parse_acknowledgements(text) == []
    assert parse_acknowledgements("") == []
    with pytest.raises(ConfigInvalid, match=r"coverage.yaml:1: /version: must be 1"):
        parse_acknowledgements("version: 2\n")
    with pytest.raises(ConfigInvalid, match=r"coverage.yaml:2: invalid YAML"):
        parse_acknowledgements("version: 1\n  bad: x\n")
    bomb = "version: 1\nx: &a [1, 1]\nacknowledged:\n  - *a\n"
    with pytest.raises(ConfigInvalid, match=r"coverage.yaml:4: YAML aliases are not allowed"):
        parse_acknowledgements(bomb)
    with pytest.raises(ConfigInvalid, match=r":3: /acknowledged: Input should be a valid list"):
        parse_acknowledgements("version: 1\n\nacknowledged: fs\n")


MCP = json.dumps(
    {
        "mcpServers": {
            "billing": {"type": "http", "url": "https://mcp.billing.example/mcp"},
            "fs": {"command": "npx", "args": ["-y", "fs-server@1.2.0", "/srv"]},
        }
    },
    indent=2,
)
ACK = (
    "version: 1\nacknowledged:\n  - name: fs\n    command: npx -y fs-server@1.2.0 /srv\n"
    "    reason: reviewed\n"
)


@pytest.mark.hosted_routes
def test_coverage_accepts_an_acknowledged_local_server(client: FlaskClient, acme: OrgKey) -> None:
    def files(ack: str | None, config: str = MCP) -> list[dict[str, str]]:
        listed = [{"path": ".mcp.json", "content": config}]
        if ack is not None:
            listed.append({"path": ".driftgate/coverage.yaml", "content": ack})
        return listed

    def assert_coverage(body: dict[str, object]) -> tuple[int, dict[str, object]]:
        answer = client.post("/api/coverage/assert", json=body, headers=acme.headers)
        return answer.status_code, answer.get_json()

    client.post(
        "/api/watches",
        json={"name": "billing", "url": "https://mcp.billing.example/mcp", "watchType": "mcp"},
        headers=acme.headers,
    )
    status, missing = assert_coverage({"files": files(None)})
    assert status == 422 and missing["missingCount"] == 1, missing
    (local,) = missing["missing"]  # type: ignore[misc]
    assert local["transport"] == "stdio" and local["command"] == "npx -y fs-server@1.2.0 /srv"
    assert missing["acknowledged"] == []

    status, covered = assert_coverage({"files": files(ACK)})
    assert status == 200, covered
    assert [c["name"] for c in covered["acknowledged"]] == ["fs"]  # type: ignore[index]
    assert [c["name"] for c in covered["watched"]] == ["billing"]  # type: ignore[index]
    fs = next(c for c in covered["discovered"] if c["name"] == "fs")  # type: ignore[union-attr]
    assert fs["acknowledged"] is True
    # The acknowledgement also answers for the same server sent as a configuration (agents).
    status, _ = assert_coverage({"mcpJson": MCP, "files": files(ACK, config="{}")})
    assert status == 200
    # Another command line (a new version) is another contract.
    bumped = MCP.replace("fs-server@1.2.0", "fs-server@1.3.0")
    status, again = assert_coverage({"files": files(ACK, config=bumped)})
    assert status == 422 and again["missing"][0]["name"] == "fs"  # type: ignore[index]
    # A file the gate cannot read is refused with its line, nothing is guessed.
    status, broken = assert_coverage({"files": files("version: 1\nacknowledged:\n  - fs\n")})
    assert status == 422 and broken["error"] == "config_invalid", broken
    assert str(broken["message"]).startswith(".driftgate/coverage.yaml:3: /acknowledged/0:")

    preview = client.post("/api/coverage/preview", json={"files": files(ACK)}).get_json()
    assert preview["asserted"] == 1  # billing; fs is acknowledged
    assert {c["name"]: c["acknowledged"] for c in preview["candidates"]} == {
        "billing": False,
        "fs": True,
    }
    scanned = client.post(
        "/api/repo/scan", json={"files": files("version: [")}, headers=acme.headers
    ).get_json()
    assert scanned["problems"][0].startswith(".driftgate/coverage.yaml:1: invalid YAML")
    # Its text is never read for URLs: a reason may name one.
    urls = client.post(
        "/api/repo/scan",
        json={"files": files(ACK.replace("reviewed", "see https://wiki.example/fs"))},
        headers=acme.headers,
    ).get_json()
    assert {c["name"] for c in urls["candidates"]} == {"billing", "fs"}
