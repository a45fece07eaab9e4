"""The document store (docstore.py ``DocStore``), one module per table family; the only code that runs SQL."""

from ktx_index.index.store.changes import CHANGE_LOG_GENERATIONS, CHANGE_LOG_MAX
from ktx_index.index.store.codec import pack, unpack
from ktx_index.index.store.docstore import DocStore
from ktx_index.index.store.sql import IN_BATCH

__all__ = ["CHANGE_LOG_GENERATIONS", "CHANGE_LOG_MAX", "IN_BATCH", "DocStore", "pack", "unpack"]
