"""The MCP server: seven read tools over stdio or streamable HTTP, one service behind them."""

from ktx_index.mcp.server import build_server

__all__ = ["build_server"]
