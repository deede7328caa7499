"""Frozen copies of retrieval as it once was, kept so a benchmark goes on measuring the old behaviour."""
