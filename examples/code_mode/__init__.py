"""An agent that calls its tools from a short Python script (issue 34)."""
