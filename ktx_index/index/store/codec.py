"""A document's stored body: its fields as JSON, compressed with a preset dictionary of the field names.

Small documents compress ~4x that way, which keeps a 100k-column index within its disk budget. The
identity columns (``COLUMN_FIELDS``) are held as table columns instead, so they are left out.
"""

from __future__ import annotations

import json
import zlib

from indexers.models import Document

#: Held in columns, so left out of the compressed body.
COLUMN_FIELDS = {"uid", "kind", "connection_id", "path", "content_hash"}
#: The compression dictionary: field names seen in documents. Frozen; changing it needs a FORMAT_VERSION bump.
_DICTIONARY_KEYS = (
    "attrs body cardinality catalog column_name columns comment constraintName db description dimensionType "
    "display distinctCount driver estimatedRows expr exprOnly extractedAt files foreignKeys frequencyTier "
    "fromColumn id joins key measures mentions name nativeType normalizedType nullCount nullRate nullable origin "
    "primaryKey profileSyncId profiledRows refs rowCount sample_values scanRunId scope sections heading text "
    "slRefs snapshot source sourceName sql summary syncId table table_ref tags toCatalog toColumn toDb toTable "
    "type usage_mode yaml"
).split()
ZDICT = ('{"' + '":"","'.join(_DICTIONARY_KEYS) + '":""}').encode()


def pack(doc: Document) -> bytes:
    raw = doc.model_dump_json(exclude_defaults=True, exclude=COLUMN_FIELDS).encode()
    compressor = zlib.compressobj(6, zdict=ZDICT)
    return compressor.compress(raw) + compressor.flush()


def unpack(body: bytes) -> dict:
    decompressor = zlib.decompressobj(zdict=ZDICT)
    return json.loads(decompressor.decompress(body) + decompressor.flush())


def document(uid: str, kind: str, connection: str | None, path: str, content_hash: str, body: bytes) -> Document:
    """The document of one row of ``DOC_COLUMNS`` (documents.py)."""
    fields = unpack(body)
    fields.update(uid=uid, kind=kind, connection_id=connection, path=path, content_hash=content_hash)
    return Document.model_validate(fields)
