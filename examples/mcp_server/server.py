"""A small MCP server over stdio, with the official `mcp` SDK: one tool, `convert`, that
converts between metric and imperial lengths. The worker starts it as a process (`mcp.json`)
and offers its tools to the runs that ask for the server.

    python -m examples.mcp_server.server       # speaks MCP on stdin/stdout
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

METRES = {"m": 1.0, "km": 1000.0, "cm": 0.01, "mi": 1609.344, "ft": 0.3048, "in": 0.0254}
"""Each unit's size in metres."""

server = MCPServer("units")


@server.tool()
def convert(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a length between units: m, km, cm, mi, ft, in."""
    unknown = [u for u in (from_unit, to_unit) if u not in METRES]
    if unknown:
        raise ValueError(f"unknown unit {unknown[0]!r}; units: {', '.join(METRES)}")
    result = value * METRES[from_unit] / METRES[to_unit]
    return f"{value:g} {from_unit} = {result:.4g} {to_unit}"


if __name__ == "__main__":
    server.run("stdio")
