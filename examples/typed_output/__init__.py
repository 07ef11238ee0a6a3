"""An agent whose answer is a typed pydantic model (issue 34)."""
