"""The call log: one JSON line per event (a tool call, a watcher batch or error), via stdlib logging.

The library only emits records (``log_event``) on loggers under ``ktx_index``; where they go
is decided by the commands (``configure``): stderr by default, or ``--log-file PATH``, at
``--log-level``. Arguments are cut (long values) and scrubbed (anything that looks like a
token, password or connection secret never reaches the log).
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

ROOT = "ktx_index"
#: Longest string value kept whole in a log line; longer ones are cut with a marker of their length.
MAX_VALUE = 200
MAX_ITEMS = 20
SECRET_KEY = re.compile(r"token|secret|password|passwd|authorization|api[_-]?key|credential|dsn|url", re.I)
#: Secrets embedded in values: bearer tokens and credentials in connection URLs (scheme://user:pass@host).
BEARER = (re.compile(r"(?i)\bbearer\s+\S+"), "Bearer [redacted]")
URL_CREDENTIALS = (re.compile(r"(\w+://[^/\s:@]+):[^@\s/]+@"), r"\1:[redacted]@")
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def timestamp(epoch: float | None = None) -> str:
    """UTC ISO 8601 to the millisecond (``2026-12-03T06:35:05.123Z``), now by default: every time the library
    writes (log lines, the error and state files, the last rebuild) has this one form, so they compare as text."""
    epoch = time.time() if epoch is None else epoch
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch)) + f".{int(epoch * 1000) % 1000:03d}Z"


def write_atomic(path: Path, data: str | bytes, *, durable: bool = False) -> None:
    """Replace a file whole: write a temp file beside it, then ``os.replace`` it over the target, so another
    process reads the old content or the new, never part of either. ``durable`` also syncs the temp file to
    disk first (the vector sidecar, which a crash must not leave empty). The temp file is a dotfile named by
    process and thread (the watcher ignores it; two writers never share one); it is removed if writing fails."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def log_event(logger: logging.Logger, level: int, event: str, **fields: Any) -> None:
    """Emit one structured record; cheap when the level is off (nothing is formatted)."""
    if logger.isEnabledFor(level):
        logger.log(level, event, extra={"ktx_fields": fields})


def cut(value: Any, depth: int = 0) -> Any:
    """A log-safe copy: long strings and lists cut, secret-looking keys and values redacted."""
    if isinstance(value, str):
        # Each pattern only where it could match: the regexes cost microseconds per string, and every call
        # logged runs this on each of its strings (the gateway's upstream command line among them).
        if "bearer" in value.lower():
            value = BEARER[0].sub(BEARER[1], value)
        if "://" in value and "@" in value:
            value = URL_CREDENTIALS[0].sub(URL_CREDENTIALS[1], value)
        return value if len(value) <= MAX_VALUE else f"{value[:MAX_VALUE]}…[{len(value)} chars]"
    if isinstance(value, dict):
        if depth > 3:
            return "{…}"
        return {
            str(k): "[redacted]" if SECRET_KEY.search(str(k)) else cut(v, depth + 1) for k, v in list(value.items())
        }
    if isinstance(value, list | tuple):
        items = [cut(v, depth + 1) for v in list(value)[:MAX_ITEMS]]
        return [*items, f"…[{len(value)} items]"] if len(value) > MAX_ITEMS else items
    if value is None or isinstance(value, bool | int | float):
        return value
    return cut(str(value), depth)


class JsonLines(logging.Formatter):
    """``{"ts", "level", "logger", "event", ...fields}`` on one line; a plain record keeps its message."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": timestamp(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        fields = getattr(record, "ktx_fields", None)
        if fields:
            line.update(cut(fields))
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def client_went_away(record: logging.LogRecord) -> bool:
    """Keep a record unless it is the SDK's error for a client that left mid-request (its body cut off: a
    disconnect, not the server's fault), which is kept as an INFO line without its traceback."""
    error = record.exc_info[1] if record.exc_info else None
    if error is not None and type(error).__name__ == "ClientDisconnect":
        record.levelno, record.levelname, record.exc_info, record.exc_text = logging.INFO, "INFO", None, None
        record.msg, record.args = "client disconnected mid-request", ()
        return logging.getLogger(record.name).isEnabledFor(logging.INFO)
    return True


def configure(level: str = "WARNING", path: str | Path | None = None) -> logging.Handler:
    """Send ktx_index's records to stderr (or append them to path) as JSON lines, and the MCP SDK's warnings (a
    request refused for its Origin) with them, rather than as the SDK's own formatted lines; returns the handler."""
    handler: logging.Handler = logging.FileHandler(path, encoding="utf-8") if path else logging.StreamHandler()
    handler.ktx_index = True  # type: ignore[attr-defined]
    handler.setFormatter(JsonLines())
    handler.addFilter(client_went_away)
    for name, at in ((ROOT, level.upper()), (SDK, "WARNING")):  # the SDK's INFO says every request it handles
        logger = logging.getLogger(name)
        for old in [h for h in logger.handlers if getattr(h, "ktx_index", False)]:
            logger.removeHandler(old)
            if name == ROOT:  # the same handler serves both: closed once
                old.close()
        logger.addHandler(handler)
        logger.setLevel(at)
        logger.propagate = False
    return handler


#: The MCP SDK's loggers (mcp.server.…), whose warnings go to the same JSON lines.
SDK = "mcp"


#: Tool errors kept for ``status`` (the newest last).
RECENT_ERRORS = 10
_errors_lock = threading.Lock()


def record_error(path: Path, tool: str, kind: str, message: str) -> None:
    """Keep the last tool errors in a small file beside the index, so ``status`` (another process) can
    show them. Only on errors; a file that cannot be written is logged, never raised."""
    entry = {"at": timestamp(), "pid": os.getpid(), "tool": tool, "kind": kind, "message": cut(message)}
    with _errors_lock:
        try:
            recent = json.loads(path.read_text()) if path.is_file() else []
            recent = [*(recent if isinstance(recent, list) else []), entry][-RECENT_ERRORS:]
            write_atomic(path, json.dumps(recent))
        except (OSError, ValueError) as exc:
            log_event(logging.getLogger(ROOT), logging.WARNING, "errors.unwritable", error=str(exc))


def recent_errors(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return data if isinstance(data, list) else []
