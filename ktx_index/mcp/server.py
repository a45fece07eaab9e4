"""Build the MCP server around one KtxIndex service."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from mcp.types import TextContent, ToolExecution
from pydantic import ValidationError

from ktx_index import __version__
from ktx_index.errors import echoed
from ktx_index.mcp import read_tools, search_tools
from ktx_index.mcp.arguments import argument_errors, key_tree, unknown_keys
from ktx_index.mcp.common import KTX_TOOLS, ToolFailure, log_call
from ktx_index.service import KtxIndex

if TYPE_CHECKING:
    from mcp import types

    from ktx_index.mcp.gateway import Gateway

#: Upstream KTX lists every tool with ``execution: {taskSupport: "forbidden"}`` (reference/ktx-upstream-contract.md
#: §1), and ktx-index runs no MCP tasks either. The field exists in the 2025-11-25 revision only: the SDK leaves it
#: out of a 2026-07-28 session's list.
EXECUTION = ToolExecution(task_support="forbidden")

TOOL_NAMES = (
    "connection_list", "discover_data", "wiki_search", "wiki_read", "entity_details", "dictionary_search",
    "sl_read_source",
)  # fmt: skip


class KtxMCPServer(MCPServer):
    """MCPServer that logs every tool call, and whose argument errors are tool results the model can read
    (``isError``, MCP 2025-11-25 / SEP-1303, as upstream KTX answers): one line per field, naming what to send.
    Unknown keys are dropped, as upstream does, and named in the call log."""

    async def list_tools(self) -> list[types.Tool]:
        """Our seven tools, then (with a gateway) upstream's tools we do not serve, as upstream lists them."""
        tools = [tool.model_copy(update={"execution": EXECUTION}) for tool in await super().list_tools()]
        return tools if self.gateway is None else self.gateway.merged(tools)

    def __init__(
        self,
        *args: Any,
        tools: list[Tool] | None = None,
        errors_path: Path | None = None,
        gateway: Gateway | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, tools=tools, **kwargs)
        #: Where the last tool errors are kept for ``status`` (None: not kept).
        self.errors_path = errors_path
        #: With ``serve --upstream``: the upstream KTX server fronted (gateway.py).
        self.gateway = gateway
        #: The tools this server defines, by name (the SDK's tool manager is not reached into).
        self.own_tools: dict[str, Tool] = {tool.name: tool for tool in tools or []}
        self._keys = {tool.name: key_tree(tool.parameters) for tool in tools or []}
        #: Set once ``serve``'s warm-up is done (None: nothing to wait for). A call arriving before waits for it:
        #: the warm-up holds the GIL for ~0.5 s, and the first questions answered beside it paid it in their p95.
        self.ready: threading.Event | None = None

    async def run_stdio_async(self) -> None:
        """The SDK's stdio server, over stdio.py's thread-free streams when stdin and stdout are pipes."""
        from ktx_index.mcp.stdio import fd_stdio

        async with fd_stdio() as (read_stream, write_stream):
            lowlevel = self._lowlevel_server
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        """Run and log the call (one JSON line: tool, arguments cut, keys dropped, duration, count, error kind);
        with a gateway, a tool this server does not define is upstream's and is forwarded as it is."""
        if self.gateway is not None and self.gateway.forwards(name):
            return await self.gateway.call(name, arguments, context)
        started = time.perf_counter()  # before the warm-up wait: the log's ms is what the client waited
        if self.ready is not None and not self.ready.is_set():
            await anyio.to_thread.run_sync(self.ready.wait, READY_WAIT_S)
        tool = self.own_tools.get(name)
        if tool is None:  # neither ours nor (with a gateway) upstream's
            served = [listed.name for listed in await self.list_tools()]
            message = unknown_tool(name, served, self.gateway is not None)
            self._failed(name, arguments, started, {}, "UnknownTool", message)
            return ToolFailure.of(message, "UnknownTool")
        keys = self._keys.get(name)
        ignored = [] if keys is None else unknown_keys(keys, arguments)
        if ignored:
            read = read_tools.read_beyond_schema(name, arguments)
            ignored = [key for key in ignored if key not in read]
        dropped = {"ignored": ignored} if ignored else {}
        try:
            result = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                self._failed(name, arguments, started, dropped, error_kind(exc), _message(exc))
                raise
            # The SDK found the arguments outside the schema (it would answer with pydantic's dump): say instead
            # which field is wrong and what to send.
            result = ToolFailure.of(argument_errors(name, exc.__cause__, tool.parameters, arguments), INVALID)
        except Exception as exc:
            self._failed(name, arguments, started, dropped, error_kind(exc), _message(exc))
            raise
        if getattr(result, "is_error", False):
            text = next((c.text for c in result.content if isinstance(c, TextContent)), "")
            self._failed(name, arguments, started, dropped, getattr(result, "kind", "") or "ToolError", text)
        else:
            log_call(started, None, tool=name, arguments=arguments, **dropped, results=result_count(name, result))
        return result

    def _failed(
        self, name: str, arguments: dict[str, Any], started: float, dropped: dict[str, Any], kind: str, message: str
    ) -> None:
        log_call(started, self.errors_path, kind, message, tool=name, arguments=arguments, **dropped)


#: The longest a tool call waits for the warm-up (KtxMCPServer.ready); the engine's own lock orders what follows.
READY_WAIT_S = 30.0


def unknown_tool(name: str, served: list[str], fronting: bool) -> str:
    """What a call to a tool no one here serves is told: the tools there are (``served``: ours, and upstream's
    while listed), and for one of KTX's own tools without ``serve --upstream``, how to serve them. (With a gateway,
    KTX's tool names are always forwarded: Gateway.forwards.)"""
    if name in KTX_TOOLS and not fronting:
        return (
            f"Unknown tool: {name}. It is upstream KTX's tool; this server answers {', '.join(served)}. Run "
            f"`ktx-index serve --upstream 'ktx mcp stdio'` to serve KTX's tools ({', '.join(KTX_TOOLS)}) beside them."
        )
    return (
        f"Unknown tool: {echoed(name)}. Send one of: {', '.join(served)}."  # quoted short: 10,000 characters came back
    )


def _origin(exc: BaseException) -> BaseException:
    """The library error behind the SDK's wrappers (NotFound, IndexUnavailable…), else exc itself."""
    cause = exc.__cause__
    while cause is not None and type(cause).__module__.startswith("mcp."):
        cause = cause.__cause__
    return cause or exc


#: The error kind of a call whose arguments do not fit the tool's inputSchema (call log, ``status``).
INVALID = "InvalidArguments"


def _message(exc: BaseException) -> str:
    """For the log (server side): the library's or the crash's own text, which the client is not sent."""
    return str(exc if isinstance(exc, MCPError) else _origin(exc))


def error_kind(exc: BaseException) -> str:
    return type(_origin(exc)).__name__


def result_count(tool: str, result: Any) -> int | None:
    """How many items a result holds: refs, pages, value matches, entities or connections; one for a read of one
    page or source (a wiki page's ``refs`` are its frontmatter's)."""
    data = getattr(result, "structured_content", None)
    if not isinstance(data, dict):
        return None
    if tool in ("wiki_read", "sl_read_source"):
        return 1
    if name := next((k for k in ("refs", "results", "connections") if isinstance(data.get(k), list)), None):
        items = data[name]
        if name == "results" and items and isinstance(items[0], dict) and "matches" in items[0]:
            return sum(len(item.get("matches") or []) for item in items)  # dictionary_search: matches found
        return len(items)
    return 1


def instructions(service: KtxIndex) -> str:
    """Live state for the agent: what is indexed and how fresh it is."""
    try:
        status = service.status()
        counts = ", ".join(f"{n} {k}" for k, n in sorted(status.counts.items()) if k != "snapshot")
        semantic = status.semantic + (f" ({status.semantic_reason})" if status.semantic_reason else "")
        state = f"Indexed: {counts or 'nothing yet'}. Connections: {', '.join(c.id for c in status.connections)}. Semantic search: {semantic}."
    except Exception as exc:
        state = f"Index state unavailable: {exc}"
    return (
        "ktx-index serves search over this KTX project's wiki, semantic layer and warehouse scans. "
        "Start with discover_data (or wiki_search for business definitions, dictionary_search to find which column "
        "holds a value), then hydrate refs with wiki_read, sl_read_source or entity_details. " + state
    )


def build_server(service: KtxIndex, gateway: Gateway | None = None) -> KtxMCPServer:
    """The server; with a gateway (``serve --upstream``) it also lists and forwards upstream KTX's tools."""
    tools = [*search_tools.tools(service), *read_tools.tools(service)]
    for tool in tools:  # FuncMetadata's fields are public and read live (the SDK documents reassigning them)
        tool.parameters = without_null_defaults(tool.parameters)
        if tool.fn_metadata.output_schema is not None:
            tool.fn_metadata.output_schema = without_null_defaults(flat_schema(tool.fn_metadata.output_schema))
    fronting: dict[str, Any] = {}
    if gateway is not None:
        fronting = {"lifespan": gateway.lifespan, "subscriptions": gateway.bus, "middleware": gateway.middleware}
    text = instructions(service) + (gateway.instructions() if gateway is not None else "")
    server = KtxMCPServer(
        name="ktx-index", instructions=text, version=__version__, log_level="WARNING", tools=tools,
        errors_path=service.layout.errors, gateway=gateway, **fronting,
    )  # fmt: skip
    if gateway is not None:
        from ktx_index.mcp.gateway import advertise_list_changed

        gateway.local = frozenset(server.own_tools)
        # SDK gap (mcp 2.3.0): MCPServer.run_stdio_async and streamable_http_app build the handshake's
        # capabilities with Server.create_initialization_options() and no NotificationOptions, and MCPServer takes
        # none (no constructor argument, no property; lowlevel/server.py's TODO(L53) plans deriving listChanged
        # from server state). So tools.listChanged is declared on the low-level server, which MCPServer exposes
        # only as _lowlevel_server.
        advertise_list_changed(server._lowlevel_server)
    return server


def without_null_defaults(schema: Any) -> Any:
    """The same schema without ``"default": null`` where the field's own type refuses null: an optional argument
    (``connectionId``, ``kinds``) or an output field left out when empty is advertised by its type alone, as
    upstream advertises it, rather than with a default its type rejects (a client that fills in defaults would
    then send an argument its own validator refuses). Defaults a node's type admits are kept."""
    if isinstance(schema, list):
        return [without_null_defaults(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: without_null_defaults(value) for key, value in schema.items()}
    if "default" in out and out["default"] is None and not _admits_null(out):
        del out["default"]
    return out


def _admits_null(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(isinstance(o, dict) and _admits_null(o) for o in node.get("anyOf", []))


def flat_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The same output schema without `$ref`s and with `anyOf [X, null]` as `type: [X, "null"]`: it accepts
    exactly what the pydantic schema accepts, and a client validating every result against it (the Python SDK
    does, with jsonschema) no longer resolves references, a third to a half of that cost (docs/benchmarks.md).
    A recursive schema is returned as it is."""
    defs = schema.get("$defs", {})

    def walk(node: Any, inside: tuple[str, ...] = ()) -> Any:
        if isinstance(node, list):
            return [walk(item, inside) for item in node]
        if not isinstance(node, dict):
            return node
        out = {key: walk(value, inside) for key, value in node.items() if key not in ("$defs", "$ref")}
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            if name in inside:
                raise RecursionError(name)
            out = {**walk(defs[name], (*inside, name)), **out}
        options = out.get("anyOf")
        if (
            isinstance(options, list)
            and len(options) == 2
            and {"type": "null"} in options
            and all(set(o) == {"type"} and isinstance(o["type"], str) for o in options)
        ):
            del out["anyOf"]
            out["type"] = [next(o["type"] for o in options if o["type"] != "null"), "null"]
        return out

    try:
        return walk(schema)
    except RecursionError:
        return schema
