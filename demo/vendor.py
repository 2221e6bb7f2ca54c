"""The vendor simulator: an OpenAPI-described REST API and an MCP server (the official `mcp`
SDK, Streamable HTTP) on one loopback port, whose contracts follow `demo.contracts.STAGES`.

Routes: `GET /specs/stripe.json` (the OpenAPI document), `/mcp` (the MCP server), and the
demo's own `GET /_demo/stage` and `POST /_demo/next` (the trigger that scripts and tests use;
the console's Enter key and the timer call `advance` directly).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from mcp import types
from mcp.server.lowlevel import Server
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from controller.loopback import ThreadedServer
from demo.contracts import LAST, STAGES, Stage, mcp_tools, openapi_document

SPEC_PATH = "/specs/stripe.json"
MCP_PATH = "/mcp"


class Vendor:
    """The simulated vendors' state: the current stage, and who is told when it moves."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self._stage = STAGES[0]
        self._lock = threading.Lock()
        self._listeners: list[Callable[[Stage], None]] = []

    @property
    def stage(self) -> Stage:
        return self._stage

    def on_change(self, listener: Callable[[Stage], None]) -> None:
        self._listeners.append(listener)

    def advance(self) -> Stage | None:
        """The next stage (None once the script is over); listeners run in this thread."""
        with self._lock:
            if self._stage.number >= LAST:
                return None
            self._stage = STAGES[self._stage.number + 1]
            stage = self._stage
        for listener in self._listeners:
            listener(stage)
        return stage

    def openapi(self) -> dict[str, Any]:
        return openapi_document(self._stage.api_version, self.base_url)

    def tools(self) -> list[dict[str, Any]]:
        return mcp_tools(self._stage.mcp_version)


def mcp_server(vendor: Vendor) -> Server[Any]:
    """The MCP server: its tool list is the vendor's at the current stage."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool.model_validate(t) for t in vendor.tools()])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        names = {tool["name"] for tool in vendor.tools()}
        if params.name not in names:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"unknown tool {params.name}")],
                is_error=True,
            )
        text = f"{params.name} called with {sorted((params.arguments or {}).items())}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server(
        "code-host (driftgate demo)",
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def vendor_app(vendor: Vendor) -> Any:
    """The ASGI app of both vendors and the demo trigger."""

    async def spec(request: Request) -> JSONResponse:
        return JSONResponse(vendor.openapi())

    async def stage(request: Request) -> JSONResponse:
        return JSONResponse(_stage_json(vendor.stage))

    async def advance(request: Request) -> JSONResponse:
        # The listeners call driftgate's API and wait for checks: not on the event loop.
        import anyio

        moved = await anyio.to_thread.run_sync(vendor.advance)
        if moved is None:
            return JSONResponse({"error": "the script is over", "stage": vendor.stage.number}, 409)
        return JSONResponse(_stage_json(moved))

    return mcp_server(vendor).streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=True,
        stateless_http=True,
        custom_starlette_routes=[
            Route(SPEC_PATH, spec, methods=["GET"]),
            Route("/_demo/stage", stage, methods=["GET"]),
            Route("/_demo/next", advance, methods=["POST"]),
        ],
    )


def _stage_json(stage: Stage) -> dict[str, Any]:
    return {"stage": stage.number, "name": stage.name, "says": stage.says}


class VendorServer(ThreadedServer):
    """Serves `vendor_app` with uvicorn in a daemon thread on host:port."""

    def __init__(self, vendor: Vendor, host: str, port: int) -> None:
        # OSError when the port is taken: said by the caller.
        super().__init__(vendor_app(vendor), host, port, name="vendor simulator")
