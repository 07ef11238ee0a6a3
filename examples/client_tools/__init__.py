"""Tools the client runs itself, answered from code (issue 34)."""
