"""Ranking and explaining: lanes, fusion and the structural steps over a loaded snapshot (the tools call it)."""
