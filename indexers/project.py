"""Finding a KTX project and reading its ``ktx.yaml``.

``ktx.yaml`` belongs to KTX, so unknown keys are tolerated and only two things
are read from it: the ``connections`` map (id and driver) and the optional
``index:`` section holding ktx-index's own settings (see docs/configuration.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from indexers.files import SAFE_ID, SourceError, UnlistedFolder, is_dir, list_dirs, read_yaml
from indexers.models import Diagnostic

CONFIG_FILE = "ktx.yaml"
PROJECT_TREES = ("wiki", "semantic-layer", "raw-sources")  # what a project folder holds besides ktx.yaml


class ProjectNotFound(Exception):
    pass


class IndexSettings(BaseModel):
    """The ``index:`` section of ktx.yaml. Every key is optional.

    Declared once: the types and bounds are what ``_settings`` checks ktx.yaml against (a bad value is reported
    with what to send instead, and its default is used), and each Field's description is that key's row in
    docs/configuration.md (``settings_table``; tests/test_docs.py fails when they differ)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    user: str = Field(
        "local",
        pattern=SAFE_ID.pattern,
        description="whose `wiki/user/<id>/` pages are searched beside `wiki/global/` (KTX's MCP server uses `local`)",
    )
    max_file_mb: float = Field(
        64.0,
        gt=0,
        allow_inf_nan=False,
        description="files larger than this many MB are reported as diagnostics and skipped",
    )
    embeddings: bool = Field(True, description="`false` keeps the index lexical-only; no model is loaded")
    model: Literal["tuned", "base"] = Field(
        "tuned",
        description="`tuned`: all-MiniLM-L6-v2 fine-tuned on public text-to-SQL questions and written business and "
        "wiki questions, shipped in "
        "`ktx_index/embedding/weights/` (see [ranking.md](ranking.md#the-fine-tuned-model)); `base`: the model as "
        "packaged. Changing it re-embeds once. Without the shipped file the base model is used and `status` says "
        "why",
    )
    precision: Literal["int8", "float32"] = Field(
        "int8",
        description="`int8`: the model's matrix products quantised to int8 once, on first use (per-channel dynamic "
        "quantization by ONNX Runtime, cached beside the exported model): ~2.5x faster query embeddings and "
        "builds, within 0.005 nDCG@10 of `float32` on the judged sets (see "
        "[ranking.md](ranking.md#the-fine-tuned-model)); `float32`: as trained. The fingerprint names it, so "
        "changing it re-embeds once",
    )

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_mb * 1_000_000)


def yaml_value(value: object) -> str:
    """A setting's value as ktx.yaml spells it (``true``, ``64``, ``local``)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def expected(key: str) -> str:
    """What a setting accepts, in words, from its declaration: told to whoever sent something else."""
    field_info = IndexSettings.model_fields[key]
    kind = field_info.annotation
    if get_origin(kind) is Literal:
        return "one of " + ", ".join(get_args(kind))
    if kind is bool:
        return "true or false"
    if kind is float:
        above = next((m.gt for m in field_info.metadata if getattr(m, "gt", None) is not None), None)
        return "a number" + ("" if above is None else f" above {yaml_value(above)}")
    pattern = next((m.pattern for m in field_info.metadata if getattr(m, "pattern", None)), None)
    return "a name" + ("" if pattern is None else f" matching {pattern}")


def settings_table() -> str:
    """docs/configuration.md's table of the ``index:`` keys, from the declaration (key, default, meaning)."""
    rows = ["| key | default | meaning |", "|---|---|---|"]
    for key, field_info in IndexSettings.model_fields.items():
        rows.append(f"| `{key}` | `{yaml_value(field_info.default)}` | {field_info.description} |")
    return "\n".join(rows) + "\n"


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
    #: Paths listing left out because their names are not valid UTF-8 (files.py; reported by the planner).
    undecodable_names: set[str] = field(default_factory=set)

    @cached_property
    def real_root(self) -> Path:
        return self.root.resolve()

    @property
    def max_file_bytes(self) -> int:
        return self.settings.max_file_bytes

    @property
    def connection_ids(self) -> list[str]:
        return sorted(self.connections)

    @overload
    def declared_id(self, connection_id: str) -> str: ...
    @overload
    def declared_id(self, connection_id: None) -> None: ...
    @overload
    def declared_id(self, connection_id: str | None) -> str | None: ...

    def declared_id(self, connection_id: str | None) -> str | None:
        """The connection id as ktx.yaml spells it: ``connection_id`` itself, or the one declared id equal to it but
        for case (``AdventureWorks`` for ``adventureworks``; an agent copies a name from a question or a page).
        Unchanged when it names none, or several."""
        if connection_id is None or connection_id in self.connections:
            return connection_id
        same = [c for c in self.connections if c.casefold() == connection_id.casefold()]
        return same[0] if len(same) == 1 else connection_id


def find_project_root(explicit: str | Path | None = None, start: Path | None = None) -> Path:
    """``--project DIR``, else the nearest ancestor holding ktx.yaml, else the current directory."""
    if explicit is not None:
        root = Path(explicit).expanduser()
        if not root.is_dir():
            what = "is a file, not a folder" if root.exists() else "does not exist"
            raise ProjectNotFound(
                f"project directory '{root}' {what}; pass --project DIR, the folder that holds ktx.yaml"
            )
        root = root.resolve()
    else:
        here = (start or Path.cwd()).resolve()
        root = next((c for c in (here, *here.parents) if (c / CONFIG_FILE).is_file()), here)
    if not any(os.path.lexists(root / name) for name in (CONFIG_FILE, *PROJECT_TREES)):
        # else an index of nothing is built there, and every question is answered "the project holds nothing"
        raise ProjectNotFound(
            f"'{root}' is not a KTX project (or cannot be read): it holds no {CONFIG_FILE}, wiki/, semantic-layer/ "
            "or raw-sources/; pass --project DIR, the folder that holds ktx.yaml"
        )
    return root


def _settings(raw: Any, diagnostics: list[Diagnostic]) -> IndexSettings:
    """ktx.yaml's ``index:`` section; each unknown key or bad value is reported (the file, the key, what to send)
    and left out, so the rest of the section still applies."""
    if raw is None:
        return IndexSettings()
    if not isinstance(raw, dict):
        diagnostics.append(Diagnostic(path=CONFIG_FILE, message="'index:' must be a mapping; using defaults"))
        return IndexSettings()
    known = IndexSettings.model_fields
    for key in raw:
        if key not in known:
            diagnostics.append(
                Diagnostic(
                    path=CONFIG_FILE,
                    code="warning",
                    message=f"unknown index setting '{key}' ignored; known: {', '.join(known)}",
                )
            )
    values = {key: value for key, value in raw.items() if key in known}
    try:
        return IndexSettings.model_validate(values)
    except ValidationError as exc:
        bad = {str(error["loc"][0]) for error in exc.errors()}
    for key in known:  # in declaration order, so the diagnostics read in the documentation's order
        if key in bad:
            default = yaml_value(known[key].default)
            diagnostics.append(
                Diagnostic(
                    path=CONFIG_FILE,
                    message=f"index.{key}: invalid value {values[key]!r}; send {expected(key)} "
                    f"(using the default, {default})",
                )
            )
    return IndexSettings.model_validate({key: value for key, value in values.items() if key not in bad})


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
        try:
            names = list_dirs(project, family)
        except UnlistedFolder as exc:  # declared connections are still indexed; the indexers report the rest
            diagnostics.append(exc.diagnostic())
            continue
        for name in names:
            if name in project.connections:
                continue
            try:
                if family == "raw-sources" and not is_dir(project, f"{family}/{name}/live-database"):
                    continue  # other raw material (notes, CSV exports), not a warehouse scan
            except UnlistedFolder as exc:  # what it held (a scan or not) is kept; no connection is made up
                diagnostics.append(exc.diagnostic())
                continue
            if not SAFE_ID.match(name):
                diagnostics.append(
                    Diagnostic(path=f"{family}/{name}", message="unsafe connection folder name; not indexed")
                )
                continue
            project.connections[name] = Connection(name, None, declared=False)
    return project
