"""The one API every door uses: CLI, MCP server, watcher, tests and benchmarks."""

from __future__ import annotations

from pathlib import Path

from indexers import ProjectRead, load_project, read_project
from indexers.project import Project
from ktx_index.reports import ConnectionInfo, InspectReport


class KtxIndex:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        self.project: Project = load_project(self.root)

    def inspect(self) -> InspectReport:
        """Read the whole project (no index involved): what the index will see."""
        read = read_project(self.project)
        return self._inspect_report(read)

    def _inspect_report(self, read: ProjectRead) -> InspectReport:
        by_conn = read.counts_by_connection()
        connections = [
            ConnectionInfo(id=c.id, driver=c.driver, declared=c.declared, counts=by_conn.get(c.id, {}))
            for c in self.project.connections.values()
        ]
        return InspectReport(
            project=str(self.root),
            counts=read.counts(),
            connections=sorted(connections, key=lambda c: c.id),
            wiki_counts=by_conn.get("(wiki)", {}),
            diagnostics=read.diagnostics,
        )
