"""Ranking and explaining: the three searches over a loaded index snapshot."""
