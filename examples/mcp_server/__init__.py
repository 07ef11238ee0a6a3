"""An agent that calls the tools of an MCP server (issue 34)."""
