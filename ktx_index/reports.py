"""Typed reports the service returns; the CLI and MCP layers render them."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Literal, TypedDict

from pydantic import BaseModel, Field

from indexers.models import Diagnostic

#: How far a long operation is: (stage, done, total), e.g. ("embed", 512, 1407); the CLI draws it, MCP reports it.
Progress = Callable[[str, int, int], None]


def no_progress(_stage: str, _done: int, _total: int) -> None:
    """The progress callback of a caller that shows none."""


class ProgressListeners:
    """One operation's progress told to every caller waiting on it: a call that arrives while another builds the
    index waits for that build, and hears its progress from then on (each caller's callback counts its own
    notifications, so each sees its value rise). Callbacks run on the operation's thread."""

    def __init__(self) -> None:
        self._listeners: list[Progress] = []
        self._lock = threading.Lock()

    def add(self, listener: Progress) -> None:
        with self._lock:
            self._listeners.append(listener)

    def remove(self, listener: Progress) -> None:
        with self._lock:
            self._listeners.remove(listener)

    def __call__(self, stage: str, done: int, total: int) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            with contextlib.suppress(Exception):  # one caller's failing callback must not fail the others' build
                listener(stage, done, total)


class ConnectionInfo(BaseModel):
    id: str
    driver: str | None = None
    declared: bool = Field(description="Listed in ktx.yaml (an undeclared folder is still indexed).")
    counts: dict[str, int] = Field(default_factory=dict)


class InspectReport(BaseModel):
    project: str
    counts: dict[str, int]
    connections: list[ConnectionInfo]
    wiki_counts: dict[str, int] = Field(default_factory=dict)
    diagnostics: list[Diagnostic]


class StaleFile(BaseModel):
    path: str
    reason: str


class RebuildReport(BaseModel):
    """What one rebuild (or one watcher batch) did."""

    index_path: str = ""
    force: bool = False
    files: int = Field(0, description="Files the scopes cover.")
    scopes: int = 0
    scopes_read: int = Field(0, description="Scopes parsed because their files changed.")
    targeted: bool = Field(False, description="Planned from a watcher's changed paths alone, not a full listing.")
    added: int = 0
    updated: int = 0
    deleted: int = 0
    deleted_paths: list[str] = Field(
        default_factory=list,
        description="The files whose documents were deleted (``deleted`` counts the documents), sorted: files "
        "removed, and files that no longer give some of theirs (a measure dropped from a source).",
    )
    unchanged: int = 0
    kept_stale: int = Field(0, description="Documents kept from the last good parse of a file that broke.")
    lexical_rewritten: bool = Field(
        False,
        description="The lexical index was written again from every document (not forced): its deleted documents, "
        "which count in idf until tantivy merges them away, had passed a tenth of it.",
    )
    embedded: int = Field(0, description="Texts embedded now (cached vectors are reused).")
    embedding_status: str = "ready"
    words_embedded: int = Field(
        0,
        description="The model's common words embedded for the bridge by the `rebuild` command: once per machine, "
        "0 when already done.",
    )
    generation: int = 0
    parse_ms: float = 0
    lexical_ms: float = 0
    embed_ms: float = 0
    duration_ms: float = 0
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    stale: list[StaleFile] = Field(default_factory=list)


class BatchSummary(BaseModel):
    added: int = 0
    updated: int = 0
    deleted: int = 0
    kept_stale: int = 0
    generation: int = 0


class WatcherError(BaseModel):
    at: str
    during: str = Field(description="What raised: commit, embed, watch or state.")
    error: str = Field(description="Exception type and message.")


class WatcherState(BaseModel):
    """``.ktx/index/watcher.json``: written by the watcher at each change of state, read by ``status``."""

    pid: int | None = Field(None, description="PID of the running watcher, or null when none runs.")
    started: str | None = None
    state: Literal["starting", "running", "retrying", "failed", "stopped", "died"] = Field(
        "starting",
        description="running; retrying (a batch raised and is retried with backoff); failed (the watcher "
        "cannot go on: edits are no longer indexed); stopped; died (its process ended without stopping, killed or "
        "crashed: the edits it had not committed, ``pending``, are indexed by the next rebuild, watch or serve).",
    )
    last_event: str | None = None
    last_commit: str | None = None
    pending: int = Field(0, description="Changed files seen but not committed yet.")
    embedding_backlog: bool = Field(False, description="Texts committed but not embedded yet (a burst's tail).")
    last_report: BatchSummary | None = None
    errors: int = Field(0, description="Batches (or watch restarts) that raised since the watcher started.")
    last_error: str | None = None
    retry_in_s: float | None = Field(None, description="Backoff before the failed batch is tried again.")
    recent_errors: list[WatcherError] = Field(default_factory=list, description="The last few errors, oldest first.")


UpstreamStateName = Literal["connecting", "connected", "unavailable", "stopped"]


class UpstreamChanges(TypedDict, total=False):
    """What a change of the gateway's upstream state may also set (``Upstream._set``); the rest is kept."""

    last_error: str | None
    retry_in_s: float | None


class UpstreamState(BaseModel):
    """``.ktx/index/upstream-<pid>.json``: the gateway's link to upstream KTX (``serve --upstream``), written by the
    server at each change of state, read by ``status``."""

    pid: int | None = Field(None, description="PID of the serving ktx-index, or null when it no longer runs.")
    upstream: str = Field(description="The --upstream command or URL (a URL without its credentials).")
    state: UpstreamStateName = Field(
        "connecting",
        description="connected (its tools are forwarded); unavailable (calls to its tools answer in-band that it "
        "is down, and it is retried with backoff); stopped.",
    )
    since: str | None = Field(None, description="When the current state began (UTC).")
    tools: list[str] = Field(default_factory=list, description="Upstream tools forwarded, in upstream's order.")
    hidden: list[str] = Field(
        default_factory=list, description="Upstream tools not listed because ktx-index serves a tool of that name."
    )
    attempts: int = Field(0, description="Failed connection attempts since it was last connected.")
    retry_in_s: float | None = Field(None, description="Backoff before the next connection attempt.")
    last_error: str | None = None


class ToolCallError(BaseModel):
    at: str
    pid: int | None = None
    tool: str
    kind: str = Field(description="Error kind: NotFound, InvalidArguments, IndexUnavailable, …")
    message: str


class StatusReport(BaseModel):
    project: str
    index_path: str
    index_elsewhere: str | None = Field(
        None, description="Why the index is not in <project>/.ktx/index (KTX_INDEX_HOME, a read-only project)."
    )
    exists: bool
    generation: int = 0
    last_rebuild: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    connections: list[ConnectionInfo] = Field(default_factory=list)
    model: str | None = Field(None, description="Embedding model fingerprint, or null when embeddings are disabled.")
    model_runtime: str | None = Field(None, description="onnx or torch: what runs the model in this process.")
    bridge_words: int = Field(
        0,
        description="Words of the model's word table on this machine, which the bridge looks up instead of "
        "embedding (0 until a rebuild on this machine has embedded them).",
    )
    ranker: str | None = Field(
        None,
        description="The fingerprint of the learned order this project's answers follow (the model file "
        "Params.curated_ranker names for a project with a hand-written semantic layer, else Params.ranker's; by "
        "default search/weights/ranker-curated.json and ranker.json), or null without one: the declared pipeline's "
        "order stands.",
    )
    semantic: str = Field("skipped", description="available, partial (embeddings catching up) or skipped.")
    semantic_reason: str | None = None
    chunks: int = 0
    chunks_embedded: int = 0
    changed_files: int = Field(0, description="Files changed since the last commit (run rebuild or watch).")
    changed_paths: list[str] = Field(default_factory=list)
    deleted_paths: list[str] = Field(
        default_factory=list,
        description="Indexed files no longer in the project (among changed_paths): the next rebuild drops their "
        "documents.",
    )
    writer_pid: int | None = Field(None, description="PID of a rebuild or watcher holding the writer.")
    watcher: WatcherState | None = None
    upstream: UpstreamState | None = Field(
        None, description="The upstream KTX server `serve --upstream` fronts (the latest to change of `upstreams`)."
    )
    upstreams: list[UpstreamState] = Field(
        default_factory=list,
        description="Every running `serve --upstream`'s link (two agents may each run one), else the last one's.",
    )
    recent_errors: list[ToolCallError] = Field(
        default_factory=list,
        description="The MCP server's last tool errors (newest last); watcher errors are in watcher.",
    )
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    stale: list[StaleFile] = Field(default_factory=list)
