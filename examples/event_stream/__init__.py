"""Following a run's typed event stream from code (issue 34)."""
