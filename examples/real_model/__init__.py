"""An agent on a real OpenAI-compatible model, configured on the worker (issue 34)."""
