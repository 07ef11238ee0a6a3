"""`agent mcp`: durable agents served to MCP clients (Claude Desktop, Cursor, an IDE) with the
official `mcp` SDK, over stdio or streamable HTTP at `/mcp`. See docs/mcp-and-a2a.md."""
