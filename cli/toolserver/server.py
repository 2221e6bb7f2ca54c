"""`driftgate mcp`: driftgate's tools, resources and prompt as an MCP server (the official
`mcp` SDK), over stdio or Streamable HTTP on 127.0.0.1. It calls a driftgate server's HTTP API
with the org's key and never opens a database. See docs/mcp.md.

- Tools: `tools.TOOLS`, with their input and output schemas and annotations; a wrong input or
  a refusal of the server is an `isError` result that says why.
- Resources: each watch's status plane at `driftgate://watches/<id>`. A poller reads the org's
  watches every `poll_seconds` and tells subscribers when one changes (`resources/updated`)
  or when the list does (`resources/list_changed`): through `subscriptions/listen` streams
  (the 2026-07-28 protocol) and to the sessions that sent `resources/subscribe` (earlier
  ones).
- Prompt: `triage_drift`, which walks an agent through a drifted watch.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from itertools import islice
from typing import Any
from urllib.parse import quote

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ResourcesListChanged,
    ResourceUpdated,
)
from pydantic import ValidationError

from cli.common import pages
from cli.toolserver.tools import TOOLS, Connection, Tool, ToolError
from controller import __version__

log = logging.getLogger("driftgate.mcp")

URI_PREFIX = "driftgate://watches/"
PROMPT = "triage_drift"
INSTRUCTIONS = (
    "driftgate watches the contracts (OpenAPI APIs, MCP servers) this agent depends on. Before "
    "a run, call `preflight`; before relying on a tool or endpoint, `get_watch_status`. When a "
    "watch drifted, use the `triage_drift` prompt: explain the changes, see who is affected, "
    "then fix or `acknowledge_drift` with a note."
)


def tool_annotations(tool: Tool) -> types.ToolAnnotations:
    return types.ToolAnnotations(
        title=tool.title,
        read_only_hint=tool.read_only,
        destructive_hint=False if not tool.read_only else None,
        idempotent_hint=tool.idempotent,
        open_world_hint=False,
    )


def declared(tool: Tool) -> types.Tool:
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema(),
        output_schema=tool.output_schema(),
        annotations=tool_annotations(tool),
    )


def input_errors(exc: ValidationError) -> str:
    """`watchId: ...; limit: ...`: each wrong field by its name in the input schema."""
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error["loc"]) or "input"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def call(connection: Connection, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    """Run one tool (blocking: the API calls are synchronous); errors become `isError`."""
    tool = TOOLS.get(name)
    if tool is None:
        return _error(f"unknown tool {name!r}; the tools are {', '.join(sorted(TOOLS))}")
    try:
        data = tool.input.model_validate(arguments)
    except ValidationError as exc:
        return _error(f"invalid input for {name}: {input_errors(exc)}")
    try:
        out = tool.run(connection, data)
        checked = tool.output.model_validate(out)
    except ToolError as exc:
        return _error(f"{name}: {exc}")
    except ValidationError:
        log.exception("mcp.output_mismatch", extra={"tool": name})
        return _error(f"{name}: the server's answer did not have the documented shape")
    structured = checked.model_dump(by_alias=True, mode="json")
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=tool.text(structured))],
        structured_content=structured,
    )


class Watcher:
    """Polls the org's watches and tells subscribers what changed."""

    def __init__(self, connection: Connection, poll_seconds: float) -> None:
        self.connection = connection
        self.poll_seconds = poll_seconds
        self.bus = InMemorySubscriptionBus()
        self.legacy: dict[Any, set[str]] = {}  # session -> subscribed URIs
        self.seen: dict[str, tuple[Any, ...]] | None = None

    def watches(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        listing = pages(
            lambda cursor: self.connection.call(
                "GET", "/api/watches?limit=200" + (f"&cursor={quote(cursor)}" if cursor else "")
            )
        )
        for page in islice(listing, 10):  # at most 2,000 watches
            found += page["watches"]
        return found

    @staticmethod
    def state(watch: dict[str, Any]) -> tuple[Any, ...]:
        incident = watch.get("incident") or {}
        return (
            watch["driftStatus"],
            watch.get("lastCheckedAt"),
            incident.get("status"),
            watch.get("updatedAt"),
        )

    async def run(self) -> None:
        while True:
            try:
                await self.poll()
            except ToolError as exc:  # the server is away or refuses: try again later
                log.warning("mcp.poll_failed", extra={"error": str(exc)})
            await anyio.sleep(self.poll_seconds)

    async def poll(self) -> None:
        watches = await anyio.to_thread.run_sync(self.watches)
        now = {w["id"]: self.state(w) for w in watches}
        previous, self.seen = self.seen, now
        if previous is None:
            return
        if set(previous) != set(now):
            await self.bus.publish(ResourcesListChanged())
            for session in list(self.legacy):
                await self._tell(session, None)
        for watch_id, state in now.items():
            if previous.get(watch_id, state) != state:
                uri = URI_PREFIX + watch_id
                await self.bus.publish(ResourceUpdated(uri=uri))
                for session, uris in list(self.legacy.items()):
                    if uri in uris:
                        await self._tell(session, uri)

    async def _tell(self, session: Any, uri: str | None) -> None:
        try:
            if uri is None:
                await session.send_resource_list_changed()
            else:
                await session.send_resource_updated(uri)
        except Exception:  # noqa: BLE001 - a session that went away: forget it
            self.legacy.pop(session, None)


def build(connection: Connection, poll_seconds: float = 15.0) -> Server[Any]:
    watcher = Watcher(connection, poll_seconds)

    @asynccontextmanager
    async def lifespan(server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        async with anyio.create_task_group() as tasks:
            if connection.key or connection.url:
                tasks.start_soon(watcher.run)
            yield {}
            tasks.cancel_scope.cancel()

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[declared(t) for t in TOOLS.values()])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        return await anyio.to_thread.run_sync(call, connection, params.name, arguments)

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        try:
            watches = await anyio.to_thread.run_sync(watcher.watches)
        except ToolError:
            watches = []  # without a server there is nothing to list (the tools say why)
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=URI_PREFIX + w["id"],
                    name=w["name"],
                    title=f"{w['name']} ({w['watchType']}): {w['driftStatus']}",
                    description=f"the status plane of the watch {w['name']} ({w['url']})",
                    mime_type="application/json",
                )
                for w in watches
            ]
        )

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=URI_PREFIX + "{watchId}",
                    name="watch-status",
                    description="the status plane of one watch (by id)",
                    mime_type="application/json",
                )
            ]
        )

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> Any:
        uri = str(params.uri)
        if not uri.startswith(URI_PREFIX):
            raise ValueError(f"unknown resource {uri}: driftgate serves {URI_PREFIX}<id>")
        watch_id = uri.removeprefix(URI_PREFIX)
        try:
            status = await anyio.to_thread.run_sync(
                lambda: connection.call("GET", f"/api/watches/{quote(watch_id, safe='')}/status")
            )
        except ToolError as exc:
            raise ValueError(str(exc)) from None
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=uri, mime_type="application/json", text=json.dumps(status, indent=2)
                )
            ]
        )

    async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        watcher.legacy.setdefault(ctx.session, set()).add(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        watcher.legacy.get(ctx.session, set()).discard(str(params.uri))
        return types.EmptyResult()

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=PROMPT,
                    title="Triage a drifted watch",
                    description="Walks through a drifted watch: what changed, who it stops, "
                    "what to do, and how to record the decision.",
                    arguments=[
                        types.PromptArgument(
                            name="watchId", description="the watch's id or name", required=True
                        )
                    ],
                )
            ]
        )

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if params.name != PROMPT:
            raise ValueError(f"unknown prompt {params.name!r}; the prompt is {PROMPT}")
        watch = (params.arguments or {}).get("watchId")
        if not watch:
            raise ValueError("the argument watchId is required")
        return types.GetPromptResult(
            description=f"Triage the drift of watch {watch}",
            messages=[
                types.PromptMessage(
                    role="user", content=types.TextContent(type="text", text=triage_text(watch))
                )
            ],
        )

    return Server(
        "driftgate",
        version=__version__,
        title="driftgate: contract drift for agents",
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_subscriptions_listen=ListenHandler(watcher.bus),
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def triage_text(watch: str) -> str:
    return "\n".join(
        [
            f"The contract watched by driftgate as `{watch}` may have drifted. Triage it:",
            f"1. Call `get_watch_status` with watchId `{watch}`. Note driftStatus, the incident "
            "and the changes of lastDriftEvent (severity, path, message, agentAction).",
            "2. Call `explain_drift` with those changes for what each one means and its fix.",
            f"3. Call `list_affected_agents` with watchId `{watch}`: which agents it stops.",
            "4. Decide, per breaking change: update the client or the agent's tool mapping "
            "(the agentAction says which), or accept the new contract as the baseline "
            "(a person does that in driftgate).",
            "5. When the fix is under way, call `acknowledge_drift` with the watchId (or the "
            "agentId) and a note saying what is being done; then `preflight` tells whether the "
            "agents may run.",
            "Do not call the vendor's changed endpoints or tools until preflight allows it.",
        ]
    )


async def serve_stdio(connection: Connection, poll_seconds: float) -> None:
    from mcp.server.stdio import stdio_server

    server = build(connection, poll_seconds)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def http_app(connection: Connection, poll_seconds: float) -> Any:
    """The Streamable HTTP app at `/mcp` (SSE streams for listen requests)."""
    return build(connection, poll_seconds).streamable_http_app(streamable_http_path="/mcp")
