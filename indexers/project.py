"""Finding a KTX project and reading its ``ktx.yaml``.

``ktx.yaml`` belongs to KTX, so unknown keys are tolerated and only two things
are read from it: the ``connections`` map (id and driver) and the optional
``index:`` section holding ktx-index's own settings (see docs/configuration.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from indexers.files import SAFE_ID, SourceError, list_dirs, read_yaml
from indexers.models import Diagnostic

CONFIG_FILE = "ktx.yaml"


class ProjectNotFound(Exception):
    pass


@dataclass(frozen=True)
class IndexSettings:
    """The ``index:`` section of ktx.yaml. Every key is optional."""

    #: Whose ``wiki/user/<id>/`` pages are searched beside the global ones (KTX's MCP server uses "local").
    user: str = "local"
    #: Files larger than this are reported and skipped.
    max_file_mb: float = 64.0
    #: ``false`` keeps the index lexical-only (no model is loaded).
    embeddings: bool = True
    #: ``tuned``: MiniLM fine-tuned on text-to-SQL questions (shipped); ``base``: all-MiniLM-L6-v2 as packaged.
    model: str = "tuned"
    #: ``int8``: the model quantised (~2.5x faster queries and builds); ``float32``: as trained.
    precision: str = "int8"

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_mb * 1_000_000)


SETTINGS_HELP: dict[str, str] = {
    "user": "wiki/user/<id>/ folder searched beside wiki/global (default: local)",
    "max_file_mb": "files larger than this many MB are reported and skipped (default: 64)",
    "embeddings": "false keeps the index lexical-only; no model is loaded (default: true)",
    "model": "tuned (MiniLM fine-tuned on text-to-SQL questions, shipped) or base (as packaged) (default: tuned)",
    "precision": "int8 (the model quantised: ~2.5x faster) or float32 (as trained) (default: int8)",
}
CHOICES = {"model": ("tuned", "base"), "precision": ("int8", "float32")}


@dataclass(frozen=True)
class Connection:
    id: str
    driver: str | None = None
    #: Declared in ktx.yaml (a folder without an entry is still indexed).
    declared: bool = True
    #: ktx.yaml's ``query_policy`` (KTX's ``semantic-layer-only`` turns raw SQL off for the connection).
    query_policy: str | None = None


@dataclass
class Project:
    root: Path
    connections: dict[str, Connection] = field(default_factory=dict)
    settings: IndexSettings = field(default_factory=IndexSettings)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @cached_property
    def real_root(self) -> Path:
        return self.root.resolve()

    @property
    def max_file_bytes(self) -> int:
        return self.settings.max_file_bytes

    @property
    def connection_ids(self) -> list[str]:
        return sorted(self.connections)


def find_project_root(explicit: str | Path | None = None, start: Path | None = None) -> Path:
    """``--project DIR``, else the nearest ancestor holding ktx.yaml, else the current directory."""
    if explicit is not None:
        root = Path(explicit).expanduser()
        if not root.is_dir():
            raise ProjectNotFound(f"project directory '{root}' does not exist; pass --project DIR")
        return root.resolve()
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / CONFIG_FILE).is_file():
            return candidate
    return here


def _settings(raw: Any, diagnostics: list[Diagnostic]) -> IndexSettings:
    if raw is None:
        return IndexSettings()
    if not isinstance(raw, dict):
        diagnostics.append(Diagnostic(path=CONFIG_FILE, message="'index:' must be a mapping; using defaults"))
        return IndexSettings()
    values: dict[str, Any] = {}
    defaults = IndexSettings()
    for key, value in raw.items():
        if key not in SETTINGS_HELP:
            diagnostics.append(
                Diagnostic(
                    path=CONFIG_FILE,
                    code="warning",
                    message=f"unknown index setting '{key}' ignored; known: {', '.join(SETTINGS_HELP)}",
                )
            )
            continue
        expected = type(getattr(defaults, key))
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        invalid_number = expected is float and not (isinstance(value, float) and math.isfinite(value) and value > 0)
        invalid_choice = key in CHOICES and value not in CHOICES[key]
        if (
            not isinstance(value, expected)
            or (expected is str and not SAFE_ID.match(value))
            or invalid_number
            or invalid_choice
        ):
            diagnostics.append(
                Diagnostic(path=CONFIG_FILE, message=f"index.{key}: invalid value {value!r}; using the default")
            )
            continue
        values[key] = value
    return IndexSettings(**values)


def load_project(root: str | Path) -> Project:
    """Read ktx.yaml (if any) and the connection folders. Never raises for bad content."""
    project = Project(root=Path(root).resolve())
    diagnostics = project.diagnostics
    config: Any = {}
    if (project.root / CONFIG_FILE).exists():
        try:
            config = read_yaml(project, CONFIG_FILE) or {}
        except SourceError as exc:
            diagnostics.append(Diagnostic(path=CONFIG_FILE, message=str(exc)))
            config = {}
    if not isinstance(config, dict):
        diagnostics.append(Diagnostic(path=CONFIG_FILE, message="ktx.yaml must be a mapping"))
        config = {}
    project.settings = _settings(config.get("index"), diagnostics)

    raw_connections = config.get("connections") or {}
    if not isinstance(raw_connections, dict):
        diagnostics.append(Diagnostic(path=CONFIG_FILE, message="'connections' must be a mapping of id → settings"))
        raw_connections = {}
    for conn_id, body in raw_connections.items():
        conn_id = str(conn_id)
        if not SAFE_ID.match(conn_id):
            diagnostics.append(
                Diagnostic(
                    path=CONFIG_FILE,
                    message=f"unsafe connection id {conn_id!r} skipped; ids match {SAFE_ID.pattern}",
                )
            )
            continue
        driver = body.get("driver") if isinstance(body, dict) else None
        policy = body.get("query_policy") if isinstance(body, dict) else None
        project.connections[conn_id] = Connection(
            conn_id, str(driver) if driver else None, query_policy=policy if isinstance(policy, str) else None
        )

    for family in ("semantic-layer", "raw-sources"):
        for name in list_dirs(project, family):
            if name in project.connections:
                continue
            if family == "raw-sources" and not (project.root / family / name / "live-database").is_dir():
                continue  # other raw material (notes, CSV exports), not a warehouse scan
            if not SAFE_ID.match(name):
                diagnostics.append(
                    Diagnostic(path=f"{family}/{name}", message="unsafe connection folder name; not indexed")
                )
                continue
            project.connections[name] = Connection(name, None, declared=False)
    return project
