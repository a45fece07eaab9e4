"""Read state: what a query needs in memory, loaded from the store at one generation and kept current by deltas."""
