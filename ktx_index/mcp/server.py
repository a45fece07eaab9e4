"""Build the MCP server around one KtxIndex service."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS
from pydantic import ValidationError

from ktx_index import __version__
from ktx_index.mcp import read_tools, search_tools
from ktx_index.service import KtxIndex

TOOL_NAMES = (
    "connection_list", "discover_data", "wiki_search", "wiki_read", "entity_details", "dictionary_search",
    "sl_read_source",
)  # fmt: skip


class KtxMCPServer(MCPServer):
    """MCPServer whose argument errors stay JSON-RPC InvalidParams errors (the polish spec), with the
    validation message saying which field is wrong, instead of becoming tool results."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            try:
                tool.fn_metadata.validate_arguments(arguments)
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()
                )
                raise MCPError(INVALID_PARAMS, f"invalid arguments for {name}: {problems}") from exc
        return await super().call_tool(name, arguments, context)


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


def build_server(service: KtxIndex) -> KtxMCPServer:
    server = KtxMCPServer(
        name="ktx-index", instructions=instructions(service), version=__version__, log_level="WARNING"
    )
    search_tools.register(server, service)
    read_tools.register(server, service)
    for tool in server._tool_manager.list_tools():  # unknown arguments are an error, not silently dropped
        model = tool.fn_metadata.arg_model
        model.model_config["extra"] = "forbid"
        model.model_rebuild(force=True)
        tool.parameters = model.model_json_schema(by_alias=True)
    return server
