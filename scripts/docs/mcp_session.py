"""An MCP client session with `agent mcp`, as an MCP host (Claude Desktop, Cursor) has it.

    python scripts/docs/mcp_session.py        # with make run's worker up

The official `mcp` client (`ClientSession` over `stdio_client`) starts `agent mcp` as a
subprocess, the way the configuration in docs/mcp-and-a2a.md does, then: lists the tools, runs
the assistant on a sum (with progress notifications), starts a run whose `write_file` waits for
approval, approves it with the digest `run_agent` showed, and asks for an agent that does not
exist. What it prints is the page's transcript (`scripts/doc_excerpts.py`, recipe
`mcp-session`), so the page shows what this client gets today.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult, TextContent


# --8<-- [start:mcp-client]
def agent_mcp() -> StdioServerParameters:
    """`agent mcp` as `claude_desktop_config.json` starts it: the venv's `agent`, with the
    Temporal address in its environment (an MCP host passes a subprocess little else)."""
    return StdioServerParameters(
        command=str(Path(sys.executable).with_name("agent")),
        args=["mcp"],
        env={"TEMPORAL_ADDRESS": os.environ.get("TEMPORAL_ADDRESS", "localhost:7233")},
    )


async def on_progress(progress: float, total: float | None, message: str | None) -> None:
    print(f"  progress {progress:g}: {message}")


async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> Any:
    """Call a tool with progress notifications; print and return its structured reply."""
    result = await session.call_tool(tool, arguments, progress_callback=on_progress)
    if result.is_error:
        print(f"{tool} -> error: {text_of(result)}")
        return None
    print(f"{tool} -> {json.dumps(result.structured_content)}")
    return result.structured_content


async def main() -> None:
    async with (
        stdio_client(agent_mcp()) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        print("tools:", [tool.name for tool in (await session.list_tools()).tools])
        await call(session, "run_agent", {"prompt": "What is 17 * 25?"})
        waiting = await call(session, "run_agent", {"prompt": "Write hello world to notes.txt"})
        [pending] = waiting["pending"]  # the write waits for a person: approve what was shown
        decision = {"call_id": pending["call_id"], "decision": "approve", "by": "alice"}
        decision |= {"workflow_id": waiting["workflow_id"], "args_digest": pending["args_digest"]}
        await call(session, "decide", decision)
        await call(session, "run_agent", {"prompt": "Hello", "agent": "writer"})


# --8<-- [end:mcp-client]


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


if __name__ == "__main__":
    asyncio.run(main())
