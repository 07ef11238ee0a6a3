"""Built-in tools: calculator, current_time, read_file."""
