"""Typed reports the service returns; the CLI and MCP layers render them."""

from __future__ import annotations

from pydantic import BaseModel, Field

from indexers.models import Diagnostic


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
