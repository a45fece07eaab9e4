"""The write path: project files planned, turned into documents, stored, indexed by words and embedded."""
