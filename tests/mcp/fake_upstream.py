"""A stand-in for upstream KTX's MCP server (`ktx mcp stdio`), run as its own process by the gateway tests.

Written with the SDK's low-level server so every tool is listed exactly as upstream KTX 0.16 lists it (JSON
Schemas, annotations, title, ``execution``), without pydantic rewriting them. It offers the tools ktx-index does
not serve (``sl_query``, ``sql_execution``, ``sql_dialect_notes``, ``memory_ingest``, ``memory_ingest_status``)
and a colliding ``discover_data`` the gateway must hide:

- ``sl_query`` streams progress (upstream's stages), ``sql_execution`` too, and runs for up to 30 s when its
  SQL sleeps (``SELECT pg_sleep(30)``), long enough to be cancelled; a cancellation is written to ``--events``;
- ``sql_dialect_notes`` and ``memory_ingest_status`` fail in-band with upstream's message templates;
- ``memory_ingest`` with content ``enable mongo_query`` registers ``mongo_query`` and sends
  ``notifications/tools/list_changed``, as upstream's conditional registration would.

``--pid-file`` gets this process's PID (the tests kill it); while ``--down-file`` exists the process exits at
once with status 1, which is how a test keeps the upstream down while the gateway retries. Over HTTP,
``--token`` requires a bearer token (ktx-index's own middleware, so the gateway's ``--upstream-header`` is
exercised).

    python tests/mcp/fake_upstream.py [--transport stdio|http --port N [--token T]] [--pid-file F]
        [--down-file F] [--events F]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server

READ_ONLY = {"readOnlyHint": True, "openWorldHint": False}
STRING = {"type": "string", "minLength": 1}
CONNECTION = {"type": "string", "minLength": 1, "description": "Connection id from connection_list."}
DRAFT = "http://json-schema.org/draft-07/schema#"


def _input(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "$schema": DRAFT}


def _output(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object", "properties": properties, "required": required, "additionalProperties": False,
        "$schema": DRAFT,
    }  # fmt: skip


ROWS = {
    "headers": {"type": "array", "items": {"type": "string"}},
    "rows": {"type": "array", "items": {"type": "array", "items": {}}},
}


def _tool(name: str, title: str, description: str, annotations: dict[str, Any], **schemas: Any) -> types.Tool:
    return types.Tool.model_validate(
        {
            "name": name, "title": title, "description": description,
            "inputSchema": schemas["input"], "outputSchema": schemas["output"],
            "annotations": {"title": title, **annotations}, "execution": {"taskSupport": "forbidden"},
        }
    )  # fmt: skip


TOOLS = [
    _tool(
        "sl_query",
        "Semantic layer query",
        "Compile and run a semantic-layer query against a connection.",
        READ_ONLY,
        input=_input(
            {
                "connectionId": CONNECTION,
                "measures": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "anyOf": [
                            STRING,
                            {
                                "type": "object",
                                "properties": {"expr": STRING, "name": STRING},
                                "required": ["expr", "name"],
                            },
                        ]
                    },
                },
                "dimensions": {
                    "type": "array",
                    "default": [],
                    "items": {
                        "type": "object",
                        "properties": {"field": STRING, "granularity": {"type": "string"}},
                        "required": ["field"],
                    },
                },
                "filters": {"type": "array", "default": [], "items": {"type": "string"}},
                "limit": {"type": "integer", "minimum": 0, "default": 1000},
            },
            ["measures"],
        ),
        output=_output(
            {"connectionId": {"type": "string"}, **ROWS, "totalRows": {"type": "number"}},
            ["headers", "rows", "totalRows"],
        ),
    ),
    _tool(
        "sql_execution",
        "SQL execution",
        "Run one parser-checked read-only SQL query.",
        READ_ONLY,
        input=_input(
            {
                "connectionId": CONNECTION,
                "sql": STRING,
                "maxRows": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 1000},
            },
            ["connectionId", "sql"],
        ),
        output=_output({**ROWS, "rowCount": {"type": "number"}}, ["headers", "rows", "rowCount"]),
    ),
    _tool(
        "sql_dialect_notes",
        "SQL dialect notes",
        "The connection engine's SQL conventions, as markdown.",
        {**READ_ONLY, "idempotentHint": True},
        input=_input({"connectionId": CONNECTION}, ["connectionId"]),
        output=_output(
            {"connectionId": {"type": "string"}, "dialect": {"type": "string"}, "notes": {"type": "string"}},
            ["connectionId", "dialect", "notes"],
        ),
    ),
    _tool(
        "memory_ingest",
        "Memory ingest",
        "Queue free-form markdown for the memory agent.",
        {"destructiveHint": True, "openWorldHint": False},
        input=_input({"content": STRING, "connectionId": CONNECTION}, ["content"]),
        output=_output({"runId": {"type": "string"}}, ["runId"]),
    ),
    _tool(
        "memory_ingest_status",
        "Memory ingest status",
        "State of a memory run.",
        READ_ONLY,
        input=_input({"runId": STRING}, ["runId"]),
        output=_output(
            {
                "runId": {"type": "string"},
                "status": {"type": "string", "enum": ["running", "done", "error"]},
                "done": {"type": "boolean"},
            },
            ["runId", "status", "done"],
        ),
    ),
    _tool(
        "discover_data",
        "Discover data",
        "Upstream's discover_data (the gateway must list ktx-index's instead).",
        READ_ONLY,
        input=_input({"query": STRING}, ["query"]),
        output=_output({"refs": {"type": "array"}}, ["refs"]),
    ),
]
MONGO = _tool(
    "mongo_query", "Mongo query", "Run a Mongo aggregation pipeline on a mongodb connection.", READ_ONLY,
    input=_input({"connectionId": CONNECTION, "collection": STRING, "pipeline": {"type": "array"}},
                 ["connectionId", "collection", "pipeline"]),
    output=_output({"connectionId": {"type": "string"}, **ROWS, "rowCount": {"type": "number"}},
                   ["connectionId", "headers", "rows", "rowCount"]),
)  # fmt: skip


class FakeKtx:
    """The tools' behaviour; ``events`` is where cancellations are written for the test to read."""

    def __init__(self, events: Path | None) -> None:
        self.events = events
        self.tools = list(TOOLS)
        self.runs: set[str] = set()

    def note(self, line: str) -> None:
        if self.events is not None:
            with self.events.open("a") as out:
                out.write(line + "\n")

    async def list_tools(self, ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools)

    async def call_tool(self, ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        match params.name:
            case "sl_query":
                for progress, stage in ((0, "Compiling query"), (0.3, "Generating SQL"), (0.6, "Executing")):
                    await ctx.session.report_progress(progress, None, stage)
                await ctx.session.report_progress(1, None, "Fetched 2 rows")
                return ok({"connectionId": args.get("connectionId", "warehouse"), "headers": ["month", "orders"],
                           "rows": [["2026-10", 12], ["2026-11", 15]], "totalRows": 2})  # fmt: skip
            case "sql_execution":
                await ctx.session.report_progress(0, None, "Validating SQL")
                await ctx.session.report_progress(0.3, None, "Executing")
                if "sleep" in str(args.get("sql", "")).lower():
                    try:
                        await anyio.sleep(30)
                    except anyio.get_cancelled_exc_class():
                        self.note(f"cancelled sql_execution {args.get('sql')}")
                        raise
                await ctx.session.report_progress(1, None, "Fetched 1 rows")
                return ok({"headers": ["n"], "rows": [[1]], "rowCount": 1})
            case "sql_dialect_notes":
                if args.get("connectionId") != "warehouse":
                    return failed(f'Connection "{args.get("connectionId")}" is not configured in ktx.yaml')
                return ok({"connectionId": "warehouse", "dialect": "postgres", "notes": '# Postgres\n- quote with "'})
            case "memory_ingest":
                if args.get("content") == "enable mongo_query" and MONGO not in self.tools:
                    self.tools.append(MONGO)
                    await ctx.session.send_tool_list_changed()
                run = f"run-{len(self.runs) + 1}"
                self.runs.add(run)
                return ok({"runId": run})
            case "memory_ingest_status":
                if args.get("runId") not in self.runs:
                    return failed(f'Memory ingest run "{args.get("runId")}" was not found.')
                return ok({"runId": args["runId"], "status": "done", "done": True})
            case "discover_data":
                return ok({"refs": [{"kind": "wiki", "id": "from-upstream"}]})
            case "mongo_query":
                return ok({"connectionId": "mongo", "headers": ["_id"], "rows": [["a"]], "rowCount": 1})
        return failed(f"MCP error -32602: Tool {params.name} not found")


def ok(data: dict[str, Any]) -> types.CallToolResult:
    import json

    text = json.dumps(data, separators=(",", ":"))
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=data)


def failed(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def build(events: Path | None) -> Server:
    fake = FakeKtx(events)
    return Server("ktx", version="0.16.0", on_list_tools=fake.list_tools, on_call_tool=fake.call_tool)


async def serve_stdio(server: Server) -> None:
    from mcp.server.lowlevel.server import NotificationOptions

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options(NotificationOptions(tools_changed=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--pid-file", type=Path)
    parser.add_argument("--down-file", type=Path)
    parser.add_argument("--events", type=Path)
    parser.add_argument("--token", help="over HTTP, require 'Authorization: Bearer <token>'")
    args = parser.parse_args()
    if args.down_file is not None and args.down_file.exists():
        print("fake upstream: down (the down file exists)", file=sys.stderr)
        sys.exit(1)
    if args.pid_file is not None:
        args.pid_file.write_text(str(os.getpid()))
    server = build(args.events)
    if args.transport == "stdio":
        anyio.run(serve_stdio, server)
    else:
        import uvicorn

        app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
        if args.token:
            from ktx_index.mcp.http import BearerAuth

            app = BearerAuth(app, args.token)
        uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=args.port, log_level="warning")).run()


if __name__ == "__main__":
    main()
