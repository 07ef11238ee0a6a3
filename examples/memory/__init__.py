"""Long-term memory per user, across runs (issue 34)."""
