"""ktx-index: a hybrid search index and MCP server over KTX projects."""

__version__ = "0.1.0"
