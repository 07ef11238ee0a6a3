"""MCP tool servers, worker side: real servers, real Temporal activities.

`mcp-server-time` (from PyPI) runs over stdio as a child of the worker; `web`, a small server
made with the SDK's MCPServer, runs over streamable HTTP in a thread; `slow`, a stdio server of
the same kind, takes as long as it is told (to kill or time out a server mid-call). A tiny probe
workflow on its own task queue schedules `list_mcp_tools` and `<server>__<tool>` activities on
the application's real worker (`started_workers` with `mcp=`), as the agent workflow does.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType, PendingActivityState
from temporalio.client import Client, WorkflowHandle
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from durable_agents.activities.mcp_config import McpConfigError, load_mcp_config, parse_mcp_config
from durable_agents.activities.mcp_servers import McpServers
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.errors import TOOL_ERROR
from durable_agents.contracts.mcp import (
    MCP_LIST_TOOLS_ACTIVITY,
    MCP_SERVER_FAILED,
    MCP_SERVER_TIMEOUT,
    MCP_SERVER_UNAVAILABLE,
    UNKNOWN_MCP_SERVER,
    McpCallRequest,
    McpToolSpec,
)
from testkit.eventually import eventually
from tests.conftest import activity_types, started_workers
from tests.mcp_test_servers import SCRIPT, HttpMcpServer
from tests.scripted_model import ScriptedChatModel, call, text, tool_calls

ROOT = Path(__file__).resolve().parent.parent
TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
SLOW = {"command": sys.executable, "args": [str(SCRIPT)]}


@workflow.defn(name="McpProbe", sandboxed=False)
class McpProbe:
    """Runs one activity on the worker's queue; returns its result or how it failed."""

    @workflow.run
    async def run(self, probe: dict[str, Any]) -> dict[str, Any]:
        try:
            result = await workflow.execute_activity(
                probe["activity"],
                probe["input"],
                task_queue=probe["queue"],
                start_to_close_timeout=timedelta(seconds=probe["timeout"]),
                heartbeat_timeout=timedelta(seconds=5),
                retry_policy=RetryPolicy(
                    initial_interval=timedelta(milliseconds=100),
                    backoff_coefficient=1.0,
                    maximum_attempts=probe["attempts"],
                ),
            )
        except ActivityError as error:
            cause = error.cause
            assert isinstance(cause, ApplicationError)
            return {
                "error": {
                    "type": cause.type,
                    "message": cause.message,
                    "non_retryable": cause.non_retryable,
                }
            }
        return {"result": result}


@dataclass
class McpHarness:
    client: Client
    queue: str
    probe_queue: str
    servers: McpServers

    async def start(
        self, activity: str, payload: Any, *, attempts: int = 3, timeout: float = 30
    ) -> WorkflowHandle[Any, Any]:
        probe = {
            "activity": activity,
            "input": payload,
            "queue": self.queue,
            "attempts": attempts,
            "timeout": timeout,
        }
        return await self.client.start_workflow(
            McpProbe.run, probe, id=f"mcp-probe-{uuid.uuid4()}", task_queue=self.probe_queue
        )

    async def run(self, activity: str, payload: Any, **kwargs: Any) -> dict[str, Any]:
        handle = await self.start(activity, payload, **kwargs)
        outcome: dict[str, Any] = await handle.result()
        outcome["attempts"] = await attempts(handle)
        outcome["activity_types"] = await activity_types(handle)
        return outcome

    async def call(
        self,
        server: str,
        tool: str,
        args: dict[str, Any],
        max_output_chars: int = 20_000,
        **kw: Any,
    ) -> dict[str, Any]:
        request = McpCallRequest(
            server=server,
            tool=tool,
            args=args,
            call_id="call_1",
            idempotency_key=f"test/{uuid.uuid4()}",
            max_output_chars=max_output_chars,
        )
        return await self.run(f"{server}__{tool}", request.model_dump(), **kw)


async def attempts(handle: WorkflowHandle[Any, Any]) -> int:
    """The attempt number of the probe's activity's last start."""
    history = await handle.fetch_history()
    started = [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]
    return started[-1] if started else 0


def child_processes(marker: str) -> dict[int, str]:
    """Live (not zombie) child processes of this test process whose command line has `marker`."""
    found: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == os.getpid() and state != "Z" and marker in command:
            found[int(entry)] = command
    return found


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture(scope="module")
def web() -> Iterator[HttpMcpServer]:
    with HttpMcpServer() as server:
        yield server


@asynccontextmanager
async def mcp_worker(
    env: WorkflowEnvironment,
    servers: dict[str, Any],
    workspace: Path,
    model: ScriptedChatModel | None = None,
    **options: Any,
) -> AsyncIterator[McpHarness]:
    """The application's workers with these MCP servers, and a probe worker."""
    manager = McpServers(parse_mcp_config({"mcpServers": servers}), **options)
    async with AsyncExitStack() as stack:
        queue = await started_workers(
            stack, env.client, model or ScriptedChatModel(), workspace, mcp=manager
        )
        probe_queue = f"mcp-probe-{uuid.uuid4()}"
        await stack.enter_async_context(
            Worker(env.client, task_queue=probe_queue, workflows=[McpProbe])
        )
        yield McpHarness(env.client, queue, probe_queue, manager)


async def test_lists_tools_of_stdio_and_http_servers(
    temporal_env: WorkflowEnvironment, web: HttpMcpServer, tmp_path: Path
) -> None:
    async with mcp_worker(temporal_env, {"time": TIME, "web": {"url": web.url}}, tmp_path) as h:
        assert child_processes("mcp_server_time") == {}  # started on first use
        outcome = await h.run(MCP_LIST_TOOLS_ACTIVITY, {"servers": None})
        assert outcome["activity_types"] == [MCP_LIST_TOOLS_ACTIVITY]
        listing = outcome["result"]
        assert listing["servers"] == ["time", "web"]
        tools = [McpToolSpec.model_validate(t) for t in listing["tools"]]
        names = [t.qualified_name for t in tools]
        assert names[:2] == ["time__get_current_time", "time__convert_time"]
        assert names[2:] == ["web__echo", "web__fail", "web__chart", "web__big"]
        current = tools[0]
        assert current.server == "time" and current.name == "get_current_time"
        assert current.description.startswith("Get current time")
        assert current.input_schema["required"] == ["timezone"]  # the server's own schema
        assert tools[2].input_schema["properties"]["text"]["type"] == "string"
        assert len(child_processes("mcp_server_time")) == 1

        only_web = await h.run(MCP_LIST_TOOLS_ACTIVITY, {"servers": ["web"]})
        assert only_web["result"]["servers"] == ["web"]
        assert {t["server"] for t in only_web["result"]["tools"]} == {"web"}


async def test_a_call_is_an_activity_named_for_the_tool(
    temporal_env: WorkflowEnvironment, web: HttpMcpServer, tmp_path: Path
) -> None:
    async with mcp_worker(temporal_env, {"time": TIME, "web": {"url": web.url}}, tmp_path) as h:
        outcome = await h.call("time", "get_current_time", {"timezone": "Europe/Paris"})
        assert outcome["activity_types"] == ["time__get_current_time"]
        output = outcome["result"]
        assert json.loads(output["content"])["timezone"] == "Europe/Paris"
        assert output["truncated"] is False
        assert output["original_chars"] == len(output["content"])
        (pid,) = child_processes("mcp_server_time")

        converted = await h.call(
            "time",
            "convert_time",
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
        )
        assert json.loads(converted["result"]["content"])["target"]["datetime"].endswith(
            "T21:00:00+09:00"
        )
        assert set(child_processes("mcp_server_time")) == {pid}  # one process, reused

        echoed = await h.call("web", "echo", {"text": "héllo over HTTP"})
        assert echoed["activity_types"] == ["web__echo"]
        assert echoed["result"]["content"] == "héllo over HTTP"


async def test_an_agent_run_calls_an_mcp_tool(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Both sides together: the run lists the server's tools, the model calls one, the call is
    an activity named for it, and an isError result is an `Error:` observation."""
    model = ScriptedChatModel()
    model.enqueue(
        tool_calls(call("time__get_current_time", {"timezone": "Asia/Tokyo"}, id="c1")),
        tool_calls(call("time__get_current_time", {"timezone": "Mars/Olympus"}, id="c2")),
        text("It is morning in Tokyo."),
    )
    async with mcp_worker(temporal_env, {"time": TIME}, tmp_path, model=model) as h:
        handle = await h.client.start_workflow(
            "AgentWorkflow",
            {"prompt": "What time is it in Tokyo?", "mcp_servers": ["time"]},
            id=f"agent-mcp-{uuid.uuid4()}",
            task_queue=h.queue,
            result_type=AgentResult,
        )
        result = await handle.result()
    assert result.answer == "It is morning in Tokyo."
    assert await activity_types(handle) == [
        MCP_LIST_TOOLS_ACTIVITY,
        "call_model",
        "time__get_current_time",
        "call_model",
        "time__get_current_time",
        "call_model",
    ]
    offered = {t.name: t for t in model.requests[0].tools}
    assert offered["time__get_current_time"].parameters["required"] == ["timezone"]
    ok, failed = result.steps
    assert ok.tool == "time__get_current_time" and ok.status == "ok"
    assert json.loads(ok.observation)["timezone"] == "Asia/Tokyo"
    assert failed.status == "error"
    assert failed.observation.startswith("Error: ")
    assert "Invalid timezone" in failed.observation


async def test_is_error_results_become_tool_errors(
    temporal_env: WorkflowEnvironment, web: HttpMcpServer, tmp_path: Path
) -> None:
    async with mcp_worker(temporal_env, {"time": TIME, "web": {"url": web.url}}, tmp_path) as h:
        bad_zone = await h.call("time", "get_current_time", {"timezone": "Nowhere/Atlantis"})
        assert bad_zone["error"]["type"] == TOOL_ERROR
        assert bad_zone["error"]["non_retryable"] is True
        assert "Invalid timezone" in bad_zone["error"]["message"]
        assert bad_zone["attempts"] == 1

        failed = await h.call("web", "fail", {"reason": "the printer is on fire"})
        assert failed["error"]["type"] == TOOL_ERROR
        assert "the printer is on fire" in failed["error"]["message"]

        # A call the server refuses (no such tool) goes back to the model too.
        unknown_tool = await h.call("web", "nope", {})
        assert unknown_tool["error"]["type"] == TOOL_ERROR
        assert "Unknown tool: nope" in unknown_tool["error"]["message"]
        assert unknown_tool["attempts"] == 1


async def test_other_content_types_become_placeholders(
    temporal_env: WorkflowEnvironment, web: HttpMcpServer, tmp_path: Path
) -> None:
    async with mcp_worker(temporal_env, {"web": {"url": web.url}}, tmp_path) as h:
        outcome = await h.call("web", "chart", {})
        assert outcome["result"]["content"].splitlines() == [
            "Sales by month:",
            "[image content: image/png, 70 bytes]",
            "[audio content: audio/wav, 100 bytes]",
            "[embedded resource: file:///notes.txt, text/plain, 2 chars]",
            "(source: test)",
        ]


async def test_long_output_is_truncated(
    temporal_env: WorkflowEnvironment, web: HttpMcpServer, tmp_path: Path
) -> None:
    async with mcp_worker(temporal_env, {"web": {"url": web.url}}, tmp_path) as h:
        outcome = await h.call("web", "big", {"chars": 300_000}, max_output_chars=500)
        output = outcome["result"]
        assert output["truncated"] is True
        assert output["original_chars"] == 300_000
        assert len(output["content"]) <= 500
        assert output["content"].startswith("line 000000\nline 000001")
        assert "300000" in output["content"]  # the marker tells how much there was


async def test_an_http_server_gets_the_configured_headers(web: HttpMcpServer) -> None:
    """Every request to a streamable HTTP server carries the config's headers (the httpx client
    is ours, passed to the SDK's transport)."""
    token = f"Bearer {uuid.uuid4().hex}"
    config = {"web": {"url": web.url, "headers": {"Authorization": token, "X-Agent": "test"}}}
    before = len(web.headers)
    async with McpServers(parse_mcp_config({"mcpServers": config})) as servers:
        assert "echo" in {spec.name for spec in await servers.list_tools("web")}
    sent = web.headers[before:]
    assert sent, "no request reached the server"
    assert [(h.get("authorization"), h.get("x-agent")) for h in sent] == [(token, "test")] * len(
        sent
    )


async def test_unknown_server_is_refused(
    temporal_env: WorkflowEnvironment, web: HttpMcpServer, tmp_path: Path
) -> None:
    async with mcp_worker(temporal_env, {"time": TIME, "web": {"url": web.url}}, tmp_path) as h:
        listing = await h.run(MCP_LIST_TOOLS_ACTIVITY, {"servers": ["time", "nope"]})
        assert listing["error"]["type"] == UNKNOWN_MCP_SERVER
        assert listing["error"]["non_retryable"] is True
        assert "'nope'" in listing["error"]["message"]
        assert "configured on this worker: time, web" in listing["error"]["message"]
        assert listing["attempts"] == 1
        assert child_processes("mcp_server_time") == {}  # refused before starting anything

        call = await h.call("nope", "anything", {})
        assert call["error"]["type"] == UNKNOWN_MCP_SERVER
        assert "'nope'" in call["error"]["message"]


async def test_a_server_that_cannot_start_fails_the_listing_clearly(
    temporal_env: WorkflowEnvironment, web: HttpMcpServer, tmp_path: Path
) -> None:
    servers = {
        "broken": {"command": sys.executable, "args": ["-m", "no_such_mcp_server_module"]},
        "missing": {"command": "/nonexistent/bin/mcp-server-x", "args": ["--flag"]},
        "down": {"url": "http://127.0.0.1:9/mcp"},
        "notmcp": {"url": f"{web.base_url}/not-mcp"},
    }
    async with mcp_worker(temporal_env, servers, tmp_path, connect_timeout=10) as h:
        broken = await h.run(MCP_LIST_TOOLS_ACTIVITY, {"servers": ["broken"]})
        error = broken["error"]
        assert error["type"] == MCP_SERVER_FAILED
        assert error["non_retryable"] is True
        assert broken["attempts"] == 1
        assert "MCP server 'broken' could not start" in error["message"]
        assert f"{sys.executable} -m no_such_mcp_server_module" in error["message"]
        assert "No module named no_such_mcp_server_module" in error["message"]  # its stderr

        missing = (await h.run(MCP_LIST_TOOLS_ACTIVITY, {"servers": ["missing"]}))["error"]
        assert missing["type"] == MCP_SERVER_FAILED
        assert "'missing'" in missing["message"]
        assert "/nonexistent/bin/mcp-server-x --flag" in missing["message"]
        assert "command not found" in missing["message"]

        down = (await h.run(MCP_LIST_TOOLS_ACTIVITY, {"servers": ["down"]}))["error"]
        assert down["type"] == MCP_SERVER_FAILED
        assert "MCP server 'down' could not be reached at http://127.0.0.1:9/mcp" in down["message"]

        not_mcp = (await h.run(MCP_LIST_TOOLS_ACTIVITY, {"servers": ["notmcp"]}))["error"]
        assert not_mcp["type"] == MCP_SERVER_FAILED
        assert "Unexpected content type: text/plain" in not_mcp["message"]

        call = await h.call("broken", "anything", {})
        assert call["error"]["type"] == MCP_SERVER_FAILED
    assert child_processes("no_such_mcp_server_module") == {}


async def test_a_killed_server_is_started_again(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    async with mcp_worker(temporal_env, {"time": TIME}, tmp_path) as h:
        first = await h.call("time", "get_current_time", {"timezone": "UTC"})
        assert "result" in first
        (pid,) = child_processes("mcp_server_time")
        os.kill(pid, signal.SIGKILL)

        again = await h.call("time", "get_current_time", {"timezone": "UTC"})
        assert json.loads(again["result"]["content"])["timezone"] == "UTC"
        (new_pid,) = child_processes("mcp_server_time")
        assert new_pid != pid
        assert not running(pid)


async def test_concurrent_calls_share_one_process(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    async with mcp_worker(temporal_env, {"slow": SLOW}, tmp_path) as h:
        outcomes = await asyncio.gather(
            *(h.call("slow", "wait", {"seconds": 0.5 + i / 10}) for i in range(4))
        )
        assert [o["result"]["content"] for o in outcomes] == [
            "waited 0.5s",
            "waited 0.6s",
            "waited 0.7s",
            "waited 0.8s",
        ]
        assert all(o["attempts"] == 1 for o in outcomes)
        assert len(child_processes(SCRIPT.name)) == 1


async def test_a_server_that_closes_its_stderr_is_kept(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A closed stderr usually means the process exited; a server that closes it on purpose
    answers the check and keeps its one process."""
    quiet = {"command": sys.executable, "args": [str(SCRIPT), "--quiet-stderr"]}
    async with mcp_worker(temporal_env, {"quiet": quiet}, tmp_path) as h:
        for _ in range(3):
            outcome = await h.call("quiet", "wait", {"seconds": 0})
            assert outcome["result"]["content"] == "waited 0s"
            assert outcome["attempts"] == 1
        assert len(child_processes("--quiet-stderr")) == 1


async def test_a_server_killed_mid_call_is_retried(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    async with mcp_worker(temporal_env, {"slow": SLOW}, tmp_path) as h:
        warm = await h.call("slow", "wait", {"seconds": 0})  # started and connected
        assert warm["result"]["content"] == "waited 0s"
        (pid,) = child_processes(SCRIPT.name)
        handle = await h.start("slow__wait", _call("slow", "wait", {"seconds": 1.5}))
        await _wait_for_attempt(handle)  # the call is in flight
        os.kill(pid, signal.SIGKILL)

        outcome = await handle.result()
        assert outcome["result"]["content"] == "waited 1.5s"
        history = await handle.fetch_history()
        starts = [
            e.activity_task_started_event_attributes
            for e in history.events
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
        ]
        assert starts[-1].attempt == 2
        last_failure = starts[-1].last_failure
        assert last_failure.application_failure_info.type == MCP_SERVER_UNAVAILABLE
        assert "MCP server 'slow'" in last_failure.message
        assert "the connection was lost" in last_failure.message
        assert set(child_processes(SCRIPT.name)) - {pid}


async def test_a_timed_out_server_is_started_again(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    async with mcp_worker(temporal_env, {"slow": {**SLOW, "timeout": 0.5}}, tmp_path) as h:
        warm = await h.call("slow", "wait", {"seconds": 0})
        assert warm["result"]["content"] == "waited 0s"
        (pid,) = child_processes(SCRIPT.name)

        hung = await h.call("slow", "wait", {"seconds": 30}, attempts=1)
        assert hung["error"]["type"] == MCP_SERVER_TIMEOUT
        assert hung["error"]["non_retryable"] is False  # the workflow's retry policy decides
        assert "MCP server 'slow' did not answer in time" in hung["error"]["message"]

        after = await h.call("slow", "wait", {"seconds": 0})
        assert after["result"]["content"] == "waited 0s"
        assert pid not in child_processes(SCRIPT.name)
        await eventually(lambda: not running(pid) or None, timeout=10)


async def test_a_program_that_does_not_speak_mcp_gets_a_clear_error(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A command that writes something other than JSON-RPC on stdout (here HTML) and never
    answers the handshake: the listing fails, quoting what it sent."""
    html = {"command": "sh", "args": ["-c", "echo '<html>not MCP</html>'; exec sleep 60"]}
    async with mcp_worker(temporal_env, {"html": html}, tmp_path, connect_timeout=2) as h:
        outcome = await h.run(MCP_LIST_TOOLS_ACTIVITY, {"servers": ["html"]})
        error = outcome["error"]
        assert error["type"] == MCP_SERVER_FAILED
        assert "MCP server 'html' could not start (command: sh -c" in error["message"]
        assert "no answer to the MCP handshake within 2s" in error["message"]
        assert "it sent something that is not a valid MCP message" in error["message"]
        assert "<html>not MCP</html>" in error["message"]
    assert child_processes("not MCP") == {}
    assert child_processes("sleep 60") == {}


async def test_no_server_process_outlives_the_worker(
    temporal_env: WorkflowEnvironment, web: HttpMcpServer, tmp_path: Path
) -> None:
    servers = {"time": TIME, "slow": SLOW, "web": {"url": web.url}}
    async with mcp_worker(temporal_env, servers, tmp_path) as h:
        await h.run(MCP_LIST_TOOLS_ACTIVITY, {"servers": None})
        started = {**child_processes("mcp_server_time"), **child_processes(SCRIPT.name)}
        assert len(started) == 2
        # A call still running when the worker stops.
        await _wait_for_attempt(await h.start("slow__wait", _call("slow", "wait", {"seconds": 60})))
    assert child_processes("mcp_server_time") == {}
    assert child_processes(SCRIPT.name) == {}
    assert [pid for pid in started if running(pid)] == []


async def test_a_bad_config_stops_the_worker_at_start(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"time": {"comand": "uvx"}}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "OPENAI_"))}
    done = subprocess.run(
        [sys.executable, "worker.py"],
        cwd=ROOT,
        env={**env, "MCP_CONFIG": str(config), "TEMPORAL_DEV_PORT": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert f"MCP_CONFIG {config}: server 'time': unknown key 'comand'" in done.stderr


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], 'expected a JSON object with "mcpServers"'),
        ({"servers": {}}, "unknown key 'servers'"),
        ({}, '"mcpServers" is missing'),
        ({"mcpServers": []}, '"mcpServers" must be an object'),
        ({"mcpServers": {"a b": {"command": "x"}}}, "server name 'a b'"),
        ({"mcpServers": {"a__b": {"command": "x"}}}, "server name 'a__b'"),
        ({"mcpServers": {"t": "uvx"}}, "server 't': expected an object"),
        ({"mcpServers": {"t": {}}}, 'server \'t\': needs "command" (a stdio server) or "url"'),
        ({"mcpServers": {"t": {"args": ["x"]}}}, "server 't': needs \"command\""),
        ({"mcpServers": {"t": {"command": "x", "url": "http://h/mcp"}}}, "has both"),
        ({"mcpServers": {"t": {"command": "x", "disabled": True}}}, "unknown key 'disabled'"),
        ({"mcpServers": {"t": {"command": ""}}}, '"command" must be a non-empty string'),
        ({"mcpServers": {"t": {"command": "x", "args": "-m y"}}}, '"args" must be a list'),
        ({"mcpServers": {"t": {"command": "x", "env": {"A": 1}}}}, '"env" must be an object'),
        ({"mcpServers": {"t": {"url": "ftp://h"}}}, '"url" must be an http://'),
        ({"mcpServers": {"t": {"url": "http://h", "headers": []}}}, '"headers" must be'),
        ({"mcpServers": {"t": {"url": "http://h", "env": {}}}}, "'env' is only for servers"),
        ({"mcpServers": {"t": {"command": "x", "headers": {}}}}, "'headers' is only for"),
        ({"mcpServers": {"t": {"url": "http://h", "type": "sse"}}}, "\"type\" 'sse' is not"),
        ({"mcpServers": {"t": {"url": "http://h", "type": "stdio"}}}, 'needs "command"'),
        ({"mcpServers": {"t": {"command": "x", "timeout": 0}}}, '"timeout" must be a positive'),
    ],
)
def test_config_errors_name_the_server_and_the_field(data: Any, message: str) -> None:
    with pytest.raises(McpConfigError) as caught:
        parse_mcp_config(data, source="MCP_CONFIG f.json")
    assert str(caught.value).startswith("MCP_CONFIG f.json: ")
    assert message in str(caught.value)


def test_config_file(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "time": {**TIME, "env": {"TZ": "UTC"}, "cwd": "servers", "type": "stdio"},
                    "docs": {
                        "url": "https://docs.example/mcp",
                        "headers": {"Authorization": "Bearer t"},
                        "type": "http",
                        "timeout": 20,
                    },
                }
            }
        )
    )
    servers = load_mcp_config(path)
    assert list(servers) == ["time", "docs"]
    time_server, docs = servers["time"], servers["docs"]
    assert time_server.transport == "stdio" and docs.transport == "http"
    assert time_server.describe() == f"{sys.executable} -m mcp_server_time --local-timezone UTC"
    assert getattr(time_server, "cwd", None) == tmp_path / "servers"
    assert getattr(docs, "headers", None) == {"Authorization": "Bearer t"}
    assert docs.timeout == 20.0

    path.write_text('{"mcpServers": {"time": {"command": "x",}}}')
    with pytest.raises(McpConfigError, match=r"mcp.json: not valid JSON \(line 1, column"):
        load_mcp_config(path)
    with pytest.raises(McpConfigError, match="cannot read it"):
        load_mcp_config(tmp_path / "absent.json")


def _call(server: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return McpCallRequest(
        server=server,
        tool=tool,
        args=args,
        call_id="call_1",
        idempotency_key=f"test/{uuid.uuid4()}",
        max_output_chars=20_000,
    ).model_dump()


async def _wait_for_attempt(handle: WorkflowHandle[Any, Any]) -> None:
    """Until the probe's activity has started."""

    async def started() -> bool | None:
        description = await handle.describe()
        raw = description.raw_description
        pending = raw.pending_activities
        return (
            bool(pending)
            and pending[0].state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
        ) or None

    await eventually(started, timeout=20)


async def test_a_policy_makes_an_mcp_call_wait_for_a_person(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Approvals reach MCP tools through the run's policy; a deny rule keeps one from running."""
    model = ScriptedChatModel()
    model.enqueue(
        tool_calls(
            call("time__get_current_time", {"timezone": "UTC"}, id="ask"),
            call("time__convert_time", {"source_timezone": "UTC", "time": "12:00",
                                         "target_timezone": "Asia/Tokyo"}, id="deny"),
        ),
        text("done"),
    )  # fmt: skip
    policy = {
        "rules": [
            {"tools": "time__get_*", "action": "ask"},
            {"tools": "time__*", "action": "deny"},
        ]
    }
    async with mcp_worker(temporal_env, {"time": TIME}, tmp_path, model=model) as h:
        handle = await h.client.start_workflow(
            "AgentWorkflow",
            {"prompt": "time?", "mcp_servers": ["*"], "approval_policy": policy},
            id=f"agent-mcp-{uuid.uuid4()}",
            task_queue=h.queue,
            result_type=AgentResult,
        )
        [request] = await eventually(
            lambda: handle.query("pending_approvals", result_type=list[PendingRequest]),
            what="the MCP call waiting for approval",
        )
        assert (request.call_id, request.tool) == ("ask", "time__get_current_time")
        await handle.signal("approve", {"call_id": "ask", "by": "alice"})
        result = await handle.result()
    asked, denied = result.steps
    assert (asked.status, asked.policy) == ("ok", "policy rule time__get_* → ask")
    assert asked.human is not None and asked.human.by == "alice"
    assert (denied.status, denied.policy) == ("denied", "policy rule time__* → deny")
    assert "time__convert_time" not in await activity_types(handle)
