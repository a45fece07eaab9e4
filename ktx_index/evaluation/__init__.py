"""Scoring judged questions against the index: the metrics and the judged-query files."""
