"""ktx-index: a hybrid search index and MCP server over KTX projects."""

__version__ = "0.1.0"

import logging

logging.getLogger(__name__).addHandler(logging.NullHandler())  # the library logs; commands choose where (logs.py)
