"""Example tool modules: load one into a worker with `AGENT_TOOL_MODULES=examples.<module>`."""
