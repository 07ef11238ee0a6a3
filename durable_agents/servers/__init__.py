"""Servers that open durable agents to applications: the HTTP API with AG-UI and the console,
MCP and A2A."""
