"""`agent mcp`: the MCP gateway as a real subprocess (`python -m cli.main ... mcp`), reached by
the official `mcp` client (`ClientSession` over `mcp.client.stdio` and over
`mcp.client.streamable_http`), in front of the real dev server and the in-process worker whose
model is the real `openai` client talking to the fake model server."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from durable_agents.testing import fake_openai as fake
from durable_agents.tools.agents import RESEARCHER
from testkit.eventually import eventually
from tests.conftest import AgentHarness
from tests.server_process import ROOT, clean_env, gateway_args, server_process


@asynccontextmanager
async def stdio_session(
    agent: AgentHarness, env: WorkflowEnvironment
) -> AsyncIterator[ClientSession]:
    """An MCP client session with `agent mcp` started as Claude Desktop starts it."""
    params = StdioServerParameters(
        command=sys.executable,
        args=gateway_args(agent, env, "mcp"),
        env=clean_env(),
        cwd=str(ROOT),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def http_gateway(
    agent: AgentHarness,
    env: WorkflowEnvironment,
    *command: str,
    environ: dict[str, str] | None = None,
) -> AsyncIterator[int]:
    """`agent <command> --port N` as a subprocess (`server_process`): its port."""
    async with server_process(agent, env, *command, environ=environ) as server:
        yield server.port


@asynccontextmanager
async def http_session(port: int) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=120)) as http,
        streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def structured(result: CallToolResult) -> Any:
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return result.structured_content


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


class Progress:
    """Collects the progress notifications of one call."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.values: list[float] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.values.append(progress)
        self.messages.append(message or "")


async def workflow_ids(env: WorkflowEnvironment, task_queue: str) -> list[str]:
    return [w.id async for w in env.client.list_workflows(f'TaskQueue = "{task_queue}"')]


async def test_stdio_run_with_progress_and_an_approval(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    agent.fake.enqueue(
        fake.tool_calls(fake.call("calculator", {"expression": "17 * 25"}, id="c1")),
        fake.text("17 * 25 = 425."),
        fake.tool_calls(fake.call("write_file", {"path": "notes.txt", "content": "425"}, id="w1")),
        fake.text("Saved."),
    )
    async with stdio_session(agent, temporal_env) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == {"run_agent", "result", "send_message", "pending", "decide"}
        assert "researcher" in (tools["run_agent"].description or "")
        assert tools["run_agent"].input_schema["required"] == ["prompt"]

        progress = Progress()
        reply = structured(
            await session.call_tool(
                "run_agent", {"prompt": "What is 17 * 25?"}, progress_callback=progress
            )
        )
        assert reply["status"] == "completed", reply
        assert reply["answer"] == "17 * 25 = 425."
        assert reply["stop_reason"] == "completed"
        assert any('calculator {"expression": "17 * 25"} → 425' in m for m in progress.messages)
        assert any(m.startswith("turn 1") for m in progress.messages), progress.messages
        assert progress.values == sorted(set(progress.values))  # progress only grows

        paused = structured(
            await session.call_tool("run_agent", {"prompt": "Write 425 to notes.txt"})
        )
        assert paused["status"] == "waiting_for_person", paused
        [call] = paused["pending"]
        assert (call["call_id"], call["tool"], call["kind"]) == ("w1", "write_file", "approval")
        assert call["args"]["path"] == "notes.txt"
        run_id = paused["workflow_id"]
        listed = structured(await session.call_tool("pending", {"workflow_id": run_id}))
        assert [p["call_id"] for p in listed["result"]] == ["w1"]

        refused = await session.call_tool(
            "decide",
            {"workflow_id": run_id, "call_id": "w1", "decision": "approve",
             "args_digest": "0" * 12},
        )  # fmt: skip
        assert refused.is_error
        assert "its arguments are not the ones shown with args_digest 000000000000" in text_of(
            refused
        )  # the tool's argument, not a CLI flag (issue 31 item 10)
        no_digest = await session.call_tool(
            "decide", {"workflow_id": run_id, "call_id": "w1", "decision": "approve"}
        )  # an approval names the digest of the arguments reviewed (issue 40 item 5)
        assert no_digest.is_error
        assert "args_digest: an approval names the args_digest" in text_of(no_digest)
        wrong_kind = await session.call_tool(
            "decide", {"workflow_id": run_id, "call_id": "w1", "decision": "reply", "text": "hi"}
        )
        assert wrong_kind.is_error and "waits for an approval" in text_of(wrong_kind)

        decided = structured(
            await session.call_tool(
                "decide",
                {"workflow_id": run_id, "call_id": "w1", "decision": "approve",
                 "args_digest": call["args_digest"][:12], "by": "alice"},
            )
        )  # fmt: skip
        assert (decided["outcome"], decided["by"]) == ("approved", "alice")
        assert decided["then"]["status"] == "completed"
        assert decided["then"]["answer"] == "Saved."
        assert (agent.workspace / "notes.txt").read_text() == "425"

        again = await session.call_tool(
            "decide", {"workflow_id": run_id, "call_id": "w1", "decision": "reject"}
        )
        assert again.is_error and "w1" in text_of(again) and "decided" in text_of(again)


async def test_bad_requests_are_tool_errors_and_start_nothing(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    outsider = await agent.start({"prompt": "started elsewhere", "tools": ["ask_user"]})
    agent.fake.enqueue(
        fake.tool_calls(fake.call("ask_user", {"question": "Which colour?"}, id="q1"))
    )

    async def listed() -> set[str] | None:  # (the list is eventually consistent)
        ids = set(await workflow_ids(temporal_env, agent.task_queue))
        return ids if outsider.id in ids else None

    before = await eventually(listed, what="the outside run in the workflow list")
    async with stdio_session(agent, temporal_env) as session:
        cases: list[tuple[str, dict[str, Any], str]] = [
            ("run_agent", {"prompt": "hi", "agent": "nope"},
             "unknown agent 'nope'; agents: assistant, researcher"),
            ("run_agent", {}, "prompt"),
            ("run_agent", {"prompt": "x" * 200_001}, "prompt"),
            ("run_agent", {"prompt": "hi", "options": {"max_iterations": 0}},
             "max_iterations: Input should be greater than or equal to 1"),
            ("run_agent", {"prompt": "hi", "options": {"max_iteration": 5}},
             "max_iteration: Extra inputs are not permitted"),
            ("run_agent", {"prompt": "hi", "options": {"depth": 1}},
             "depth: Extra inputs are not permitted"),
            ("run_agent", {"prompt": "hi", "options": {"system_prompt": "x" * 70_000}},
             "more than 65536"),
            ("run_agent", {"prompt": "   "}, "the prompt holds no visible text"),
            ("pending", {"workflow_id": "no-such-run"}, "no run with workflow id 'no-such-run'"),
            ("pending", {"workflow_id": outsider.id}, "was not started through the MCP gateway"),
            ("decide", {"workflow_id": outsider.id, "call_id": "q1", "decision": "reply",
                        "text": "blue"}, "was not started through the MCP gateway"),
            ("decide", {"workflow_id": outsider.id, "call_id": "q1", "decision": "maybe"},
             "decision"),
            ("pending", {"workflow_id": "run\x00x"}, "an id holds only letters, digits"),
            ("result", {"workflow_id": "run-\u202etxt"}, "an id holds only letters, digits"),
            ("run_agent", {"prompt": "hi", "workflow_id": "../../etc/passwd"}, "'..'"),
            ("send_message", {"session_id": "s" * 201, "text": "hi"}, "at most 200"),
        ]  # fmt: skip
        for tool, arguments, expected in cases:
            result = await session.call_tool(tool, arguments)
            assert result.is_error, (tool, arguments, result)
            assert expected in text_of(result), (tool, arguments, text_of(result))
            assert "Traceback" not in text_of(result)
    assert set(await workflow_ids(temporal_env, agent.task_queue)) == before
    description = await outsider.describe()
    assert description.status == WorkflowExecutionStatus.RUNNING  # nobody answered it
    await outsider.terminate("test over")


async def test_http_transport_profiles_no_wait_and_sessions(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    agent.fake.enqueue(
        fake.text("Researched: 42."),
        fake.tool_calls(fake.call("ask_user", {"question": "Which colour?"}, id="q1")),
        fake.text("Blue it is."),
    )
    async with (
        http_gateway(agent, temporal_env, "mcp", "--http") as port,
        http_session(port) as session,
    ):
        started = structured(
            await session.call_tool(
                "run_agent",
                {"prompt": "Find the answer", "agent": "researcher", "wait": False,
                 "workflow_id": f"mcp-http-{uuid.uuid4().hex[:8]}"},
            )
        )  # fmt: skip
        assert started["status"] == "running"
        done = structured(
            await session.call_tool("result", {"workflow_id": started["workflow_id"]})
        )
        assert (done["status"], done["answer"]) == ("completed", "Researched: 42.")
        first = agent.fake.requests[0].messages
        assert first[0] == {"role": "system", "content": RESEARCHER.system_prompt}
        handle = temporal_env.client.get_workflow_handle(started["workflow_id"])
        assert (await (await handle.describe()).memo())["started_via"] == "mcp"

        session_id = f"mcp-chat-{uuid.uuid4().hex[:8]}"
        asked = structured(
            await session.call_tool(
                "send_message", {"session_id": session_id, "text": "Pick a colour with me"}
            )
        )
        assert asked["status"] == "waiting_for_person", asked
        assert asked["pending"][0]["question"] == "Which colour?"
        answered = structured(
            await session.call_tool(
                "decide",
                {"workflow_id": session_id, "call_id": "q1", "decision": "reply",
                 "text": "blue"},
            )
        )  # fmt: skip
        assert answered["outcome"] == "replied"
        assert answered["then"]["status"] == "completed"
        assert (answered["then"]["answer"], answered["then"]["turn"]) == ("Blue it is.", 1)
        observation = agent.fake.requests[-1].messages[-1]
        assert observation["role"] == "tool" and "blue" in json.dumps(observation)
