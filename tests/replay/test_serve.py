"""`replay serve`: a fixture's after contract on 127.0.0.1, answering with its mocks. OpenAPI
fixtures are called with httpx (mock answers, 400 for requests that do not fit the after
document); MCP fixtures with the official SDK client, over Streamable HTTP and stdio."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from controller.errors import ConfigError
from controller.replay import catalog, serve
from controller.replay.fixtures import build_fixture
from tests.processes import DRIFTGATE, spawn, stop_process
from tests.replay.conftest import payments_spec, write


def openapi_fixture(tmp_path: Path, after: dict[str, Any]) -> Path:
    fixture = build_fixture(
        fixture_id="payments:evt",
        watch_type="openapi",
        before=after,
        after=after,
        changes=[],
        content_kind="hosted-curated",
        source="test",
        created_at="2026-11-25T00:00:00Z",
    )
    return write(tmp_path / "payments", fixture.files)


def test_an_openapi_fixture_answers_with_its_mocks_and_checks_requests(tmp_path: Path) -> None:
    served = serve.load(openapi_fixture(tmp_path, payments_spec()))
    assert served.kind == "openapi" and serve.describe(served) == "openapi, 5 operations"
    with serve.ReplayServer(served) as server, httpx.Client(base_url=server.url) as http:
        one = http.get("/v1/charges/ch_9")
        assert one.status_code == 200 and one.headers["X-Driftgate-Replay"] == "payments:evt"
        # Generated from the schema: the same bytes every time.
        assert one.json() == {"amount": 1, "currency": "usd", "id": "string", "note": "string"}
        # With the server's base path too; the literal path beats the template.
        assert http.get("/api/v1/charges/ch_9").json() == one.json()
        searched = http.get("/v1/charges/search", headers={"Authorization": "Bearer anything"})
        assert searched.status_code == 200
        assert http.get("/v1/charges/search", headers={"X-Api-Key": "k"}).status_code == 200
        anonymous = http.get("/v1/charges/search")
        assert anonymous.status_code == 401 and anonymous.json()["error"] == "unauthorized"
        assert "(apiKey or bearer)" in anonymous.json()["message"]
        listed = http.get("/v1/charges", params={"limit": 3})
        assert listed.status_code == 200 and isinstance(listed.json(), list)
        created = http.post("/v1/charges", json={"amount": 250, "currency": "eur", "note": None})
        assert created.status_code == 201
        assert created.json() == {"id": "ch_1", "amount": 500, "currency": "usd"}
        assert http.delete("/v1/charges/ch_9").status_code == 204

        bad = http.post("/v1/charges", json={"amount": 0, "currency": "gbp"})
        assert bad.status_code == 400
        body = bad.json()
        assert body["error"] == "validation_error" and "POST /v1/charges" in body["message"]
        assert {(d["in"], d["path"]) for d in body["details"]} == {
            ("body", "/amount"),
            ("body", "/currency"),
        }
        missing = http.post("/v1/charges", json={"currency": "usd"}).json()["details"]
        assert [d["in"] for d in missing] == ["body"] and "amount" in missing[0]["message"]
        no_limit = http.get("/v1/charges")
        assert no_limit.status_code == 400
        assert [d["in"] for d in no_limit.json()["details"]] == ["query"]
        assert "limit" in no_limit.json()["details"][0]["message"]
        too_many = http.get("/v1/charges", params={"limit": 500})
        assert too_many.status_code == 400

        unknown = http.get("/v2/nothing")
        assert unknown.status_code == 404 and unknown.json()["error"] == "not_found"
        wrong = http.put("/v1/charges/ch_9")
        assert wrong.status_code == 405 and wrong.headers["Allow"] == "DELETE, GET"


def test_a_swagger_2_fixture_is_served_unchecked_and_says_so(tmp_path: Path) -> None:
    swagger = {
        "swagger": "2.0",
        "info": {"title": "old", "version": "1"},
        "basePath": "/v1",
        "paths": {
            "/pets": {
                "get": {"responses": {"200": {"description": "ok", "schema": {"type": "array"}}}}
            }
        },
    }
    served = serve.load(openapi_fixture(tmp_path, swagger))
    with serve.ReplayServer(served) as server, httpx.Client(base_url=server.url) as http:
        for path in ("/pets", "/v1/pets"):
            answer = http.get(path)
            assert answer.status_code == 200 and answer.json() == [None]
            assert answer.headers[serve.VALIDATION_HEADER] == "off"


def test_a_deep_object_array_parameter_is_not_held_against_the_request(tmp_path: Path) -> None:
    """Stripe's `expand[]`: `style: deepObject` on an array, which OpenAPI defines for objects
    only and openapi-core cannot read; the operation still answers."""
    spec = payments_spec()
    spec["paths"]["/v1/charges/{id}"]["get"]["parameters"].append(
        {
            "name": "expand",
            "in": "query",
            "style": "deepObject",
            "explode": True,
            "schema": {"type": "array", "items": {"type": "string"}},
        }
    )
    served = serve.load(openapi_fixture(tmp_path, spec))
    with serve.ReplayServer(served) as server, httpx.Client(base_url=server.url) as http:
        assert http.get("/v1/charges/ch_1").status_code == 200
        assert http.get("/v1/charges/ch_1", params={"expand[]": "customer"}).status_code == 200


@pytest.fixture
def context7(tmp_path: Path) -> Path:
    entry = catalog.shipped()["oss-context7-1.0.14-to-1.0.33"]
    return write(tmp_path / "context7", entry.files)


async def _list_and_call(target: Any, tool: str, arguments: dict[str, Any]) -> tuple[Any, ...]:
    async with Client(target) as client:
        listed = await client.list_tools()
        called = await client.call_tool(tool, arguments)
        wrong = await client.call_tool(tool, {})
        unknown = await client.call_tool("no-such-tool", {})
    return listed, called, wrong, unknown


def _after_tools(directory: Path) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in serve.tools_of(serve.load(directory).after)}


def _check_mcp_answers(directory: Path, answers: tuple[Any, ...], tool: str) -> None:
    listed, called, wrong, unknown = answers
    after = _after_tools(directory)
    assert sorted(t.name for t in listed.tools) == sorted(after)
    declared = next(t for t in listed.tools if t.name == tool)
    assert declared.input_schema == after[tool]["inputSchema"]
    mock = serve.load(directory).mocks[tool]["result"]
    assert not called.is_error
    assert [c.text for c in called.content] == [c["text"] for c in mock["content"]]
    assert wrong.is_error and "input schema" in wrong.content[0].text
    assert unknown.is_error and "no such tool" in unknown.content[0].text


def test_an_mcp_fixture_is_an_mcp_server_over_streamable_http(context7: Path) -> None:
    after = _after_tools(context7)
    tool = "resolve-library-id"
    assert tool in after
    arguments = {"libraryName": "react"}
    with serve.ReplayServer(serve.load(context7)) as server:
        assert server.url.endswith("/mcp")
        answers = anyio.run(_list_and_call, server.url, tool, arguments)
    _check_mcp_answers(context7, answers, tool)


def test_an_mcp_fixture_over_stdio_through_the_cli(context7: Path) -> None:
    params = StdioServerParameters(
        command=DRIFTGATE[0],
        args=[*DRIFTGATE[1:], "replay", "serve", str(context7), "--stdio"],
        cwd=str(Path(__file__).resolve().parents[2]),
    )
    tool = "resolve-library-id"
    answers = anyio.run(_list_and_call, params, tool, {"libraryName": "react"})
    _check_mcp_answers(context7, answers, tool)


def test_the_cli_serves_until_interrupted_and_prints_its_url(tmp_path: Path) -> None:
    directory = openapi_fixture(tmp_path, payments_spec())
    with spawn(
        [*DRIFTGATE, "replay", "serve", str(directory)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        try:
            url = process.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:")
            assert httpx.get(f"{url}/v1/charges/ch_1", timeout=60).status_code == 200
        finally:
            assert stop_process(process) == 0
        assert "serving payments:evt (openapi, 5 operations)" in process.stderr.read()


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda d: None, "not a directory"),
        (lambda d: d.mkdir(), "after.schema.json: missing"),
        (lambda d: write(d, {"after.schema.json": '{"a": \n'}), "after.schema.json:2: not JSON"),
        (lambda d: write(d, {"after.schema.json": '{"a": 1}'}), "nothing to serve"),
        (
            lambda d: write(
                d, {"after.schema.json": '{"tools": []}', "mock-responses/x.json": "[]"}
            ),
            "a mock response is a JSON object",
        ),
    ],
)
def test_a_broken_fixture_directory_is_a_clear_error(
    tmp_path: Path, setup: Any, message: str
) -> None:
    directory = tmp_path / "fixture"
    setup(directory)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        serve.load(directory)
    run = subprocess.run(
        [*DRIFTGATE, "replay", "serve", str(directory)], capture_output=True, text=True
    )
    assert run.returncode == 2 and message in run.stderr


def test_stdio_is_for_mcp_fixtures(tmp_path: Path) -> None:
    directory = openapi_fixture(tmp_path, payments_spec())
    run = subprocess.run(
        [*DRIFTGATE, "replay", "serve", str(directory), "--stdio"], capture_output=True, text=True
    )
    assert run.returncode == 2 and "--stdio serves MCP fixtures only" in run.stderr
