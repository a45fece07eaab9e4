"""The ``scopes`` table: each scope's file fingerprint (what the planner diffs against) and diagnostics.

A watcher's commit plans against every scope and reports every diagnostic, so the writer keeps the
rows in memory (kept by ``put`` and ``delete``, dropped on rollback); a read-only store reads the table,
which other processes write.
"""

from __future__ import annotations

import json
import sqlite3

from indexers.models import Diagnostic
from ktx_index.index.store.sql import select_in

HELD = "held"  # the fingerprint of a scope kept while its folder cannot be listed


class Scopes:
    def __init__(self, db: sqlite3.Connection, writable: bool) -> None:
        self._db = db
        self._writable = writable
        self._rows: dict[str, tuple[str, str]] | None = None  # the writer's copy: key → (fingerprint, diagnostics)
        self._parsed: dict[str, list[Diagnostic]] = {}  # stored diagnostics text → parsed (``diagnostics``)

    def forget(self) -> None:
        """Drop the writer's copy (a rolled-back transaction may have changed it)."""
        self._rows = None

    def _scope_rows(self) -> dict[str, tuple[str, str]]:
        """Every scope's (fingerprint, diagnostics text). At 1M columns reading the 40k rows was ~0.4 s of a
        one-table edit, so the writer keeps them."""
        if self._rows is not None:
            return self._rows
        sql = "SELECT key, fingerprint, diagnostics FROM scopes"
        rows = {key: (fp, diags) for key, fp, diags in self._db.execute(sql)}
        if self._writable:
            self._rows = rows
        return rows

    def fingerprints(self) -> dict[str, str]:
        return {key: fp for key, (fp, _) in self._scope_rows().items()}

    def put(self, key: str, family: str, fingerprint: str, files: list[str], diags: list[Diagnostic]) -> None:
        raw = json.dumps([d.model_dump() for d in diags])
        self._db.execute(
            "INSERT OR REPLACE INTO scopes(key, family, fingerprint, files, diagnostics) VALUES (?, ?, ?, ?, ?)",
            (key, family, fingerprint, json.dumps(files), raw),
        )
        if self._rows is not None:
            self._rows[key] = (fingerprint, raw)

    def hold(self, key: str) -> None:
        """Keep the scope's row but forget its fingerprint, so it is read again once its folder can be listed
        (its files may be unchanged, and its documents are stale until then)."""
        self._db.execute("UPDATE scopes SET fingerprint = ? WHERE key = ?", (HELD, key))
        if self._rows is not None and key in self._rows:
            self._rows[key] = (HELD, self._rows[key][1])

    def read_again(self, key: str, diagnostic: Diagnostic) -> None:
        """Forget the scope's fingerprint, so the next build reads it whatever its files, and add ``diagnostic``
        to what it reports until then (a scope whose documents another took over: index/ownership.py)."""
        row = self._db.execute("SELECT diagnostics FROM scopes WHERE key = ?", (key,)).fetchone()
        if row is None:
            return
        raw = json.dumps([*json.loads(row[0] or "[]"), diagnostic.model_dump()])
        self._db.execute("UPDATE scopes SET fingerprint = '', diagnostics = ? WHERE key = ?", (raw, key))
        if self._rows is not None:
            self._rows[key] = ("", raw)

    def delete(self, key: str) -> None:
        self._db.execute("DELETE FROM scopes WHERE key = ?", (key,))
        if self._rows is not None:
            self._rows.pop(key, None)

    def diagnostics(self) -> list[Diagnostic]:
        """Every scope's diagnostics, each stored text parsed once while it stays stored: a report after every
        commit reads them all (at 1M columns, 32k per-table diagnostics cost 0.8 s of each targeted commit)."""
        out: list[Diagnostic] = []
        seen: dict[str, list[Diagnostic]] = {}
        for _, raw in self._scope_rows().values():
            if raw == "[]":
                continue
            parsed = seen.get(raw) or self._parsed.get(raw)
            if parsed is None:
                parsed = [Diagnostic(**d) for d in json.loads(raw)]
            seen[raw] = parsed
            out.extend(parsed)
        self._parsed = seen  # texts no longer stored are forgotten
        return out

    def files(self, keys: list[str] | None = None) -> dict[str, list[str]]:
        """Scope key → the project files it was read from (of ``keys`` only, when given)."""
        sql = "SELECT key, files FROM scopes"
        rows = self._db.execute(sql) if keys is None else select_in(self._db, sql + " WHERE key IN ({marks})", keys)
        return {key: json.loads(files) for key, files in rows}
