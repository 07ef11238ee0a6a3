"""Settings that children inherit (issue 19): a sub-agent and a plan step run with their parent's
settings (model timeouts and attempts, fallback models, context settings, MCP servers, ...)
unless the profile names its own; a new setting is inherited with no line of copying; a plan
step whose goal needs an MCP tool calls it. Real worker and server; the scripted model."""

from __future__ import annotations

import json
import sys
import uuid
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.mcp_config import parse_mcp_config
from durable_agents.activities.mcp_servers import McpServers
from durable_agents.contracts.agent_input import (
    OWN_RUN_SETTINGS,
    AgentInput,
    AgentSettings,
    inherited_settings,
)
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.agents import AgentProfile, ParentLink
from durable_agents.contracts.mcp import MCP_LIST_TOOLS_ACTIVITY
from durable_agents.contracts.model_io import ModelRequest
from durable_agents.contracts.scratchpad import Scratchpad
from durable_agents.tools.agents import RESEARCHER
from durable_agents.workflows.delegation import child_input
from tests.conftest import ScriptedHarness, activity_types, started_workers
from tests.scripted_model import Completion, ScriptedChatModel, call, tool_calls

PARENT_SETTINGS: dict[str, Any] = {
    "model_timeout_seconds": 7.5,
    "model_max_attempts": 2,
    "fallback_models": ["backup-model"],
    "max_context_tokens": 5_000,
    "context_strategy": "summarize",
    "context_transfer": "full",
    "parallel_tool_calls": False,
    "max_observation_chars": 1_234,
    "approval_timeout_seconds": 60.0,
    "approval_timeout_action": "approve",
    "continue_as_new_after_events": 999,
}
"""Settings a child must get from its parent (all differ from their defaults)."""


def test_every_setting_but_the_run_own_is_inherited() -> None:
    # the tenant, the starter, recorded tool outputs and the model call's kind are left out of
    # the JSON at their defaults: set them (a child of a run replaying recorded outputs replays
    # them too)
    settings = AgentSettings(tenant="acme", starter="ann", tool_fixtures=[], model_call="local")
    assert set(inherited_settings(settings)) == set(AgentSettings.model_fields) - OWN_RUN_SETTINGS
    assert set(AgentSettings.model_fields) >= OWN_RUN_SETTINGS


def test_a_childs_input_takes_the_parents_settings_and_the_profiles_own() -> None:
    parent = AgentInput.model_validate(
        {
            "prompt": "p",
            "mcp_servers": ["time"],
            "mode": "plan_and_execute",
            "plan_approval": True,
            "output_schema": {"type": "object"},
            "max_total_tokens": 1_000,
            **PARENT_SETTINGS,
        }
    )
    profile = AgentProfile(
        name="step",
        description="d",
        system_prompt="You are a step.",
        tools=["calculator", "time__get_current_time"],
        max_iterations=3,
    )
    child = child_input(
        parent, Scratchpad(messages=[]), profile, "do it", ParentLink(workflow_id="w", call_key="k")
    )
    for name, value in PARENT_SETTINGS.items():
        assert getattr(child, name) == value, name
    assert child.mcp_servers == ["time"]  # the profile names one of its tools
    assert child.tools == ["calculator", "time__get_current_time"]
    link = ParentLink(workflow_id="w", call_key="k")
    local_only = profile.model_copy(update={"tools": ["calculator"]})
    child_of_local = child_input(parent, Scratchpad(messages=[]), local_only, "t", link)
    assert (child_of_local.tools, child_of_local.mcp_servers) == (["calculator"], None)
    every_tool = profile.model_copy(update={"tools": None})
    child_of_all = child_input(parent, Scratchpad(messages=[]), every_tool, "t", link)
    assert (child_of_all.tools, child_of_all.mcp_servers) == (None, ["time"])
    assert (child.system_prompt, child.max_iterations, child.prompt) == (
        "You are a step.", 3, "do it",
    )  # fmt: skip
    assert (child.mode, child.plan_approval, child.output_schema) == ("react", False, None)
    assert (child.depth, child.parent) == (1, ParentLink(workflow_id="w", call_key="k"))
    assert child.max_total_tokens == 1_000


async def child_start_input(client: Client, workflow_id: str) -> dict[str, Any]:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    start = history.events[0].workflow_execution_started_event_attributes
    return dict(json.loads(start.input.payloads[0].data))


async def test_a_sub_agent_runs_with_its_parents_settings(scripted_agent: ScriptedHarness) -> None:
    def script(request: ModelRequest) -> Completion | str:
        system = request.messages[0].content or ""
        done = any(m.role == "tool" for m in request.messages)
        if system == RESEARCHER.system_prompt:
            return "researched"
        return "ok" if done else tool_calls(call("researcher", {"task": "look"}, id="d1"))

    scripted_agent.model.set_handler(script)
    handle = await scripted_agent.start(
        {"prompt": "go", "agents": ["researcher"], **PARENT_SETTINGS}
    )
    result = await handle.result()
    assert result.answer == "ok"
    sent = await child_start_input(scripted_agent.client, f"{handle.id}/researcher-d1")
    for name, value in PARENT_SETTINGS.items():
        assert sent[name] == value, name
    assert sent["system_prompt"] == RESEARCHER.system_prompt


async def test_a_plan_step_runs_with_its_parents_settings(scripted_agent: ScriptedHarness) -> None:
    def script(request: ModelRequest) -> Completion | str:
        if request.purpose == "plan":
            return tool_calls(call("submit_plan", {"steps": [{"goal": "say hi"}]}, id="p"))
        return "hi" if request.purpose != "synthesis" else "Final: hi"

    scripted_agent.model.set_handler(script)
    handle = await scripted_agent.start(
        {"prompt": "greet", "mode": "plan_and_execute", **PARENT_SETTINGS}
    )
    assert (await handle.result()).answer == "Final: hi"
    sent = await child_start_input(scripted_agent.client, f"{handle.id}/step-1")
    for name, value in PARENT_SETTINGS.items():
        assert sent[name] == value, name
    assert sent["mode"] == "react"


TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


async def test_a_plan_step_that_needs_an_mcp_tool_calls_it(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    def script(request: ModelRequest) -> Completion | str:
        if request.purpose == "plan":
            offered = request.messages[-1].content or ""
            assert "time__get_current_time" in offered  # the planner is shown the MCP tool
            step = {"goal": "Find the time in Tokyo", "tools": ["time__get_current_time"]}
            return tool_calls(call("submit_plan", {"steps": [step]}, id="p"))
        if request.purpose == "synthesis":
            return "Final: " + (request.messages[-1].content or "")
        results = [m.content or "" for m in request.messages if m.role == "tool"]
        if not results:
            assert [t.name for t in request.tools] == ["time__get_current_time"]  # as planned
            return tool_calls(call("time__get_current_time", {"timezone": "Asia/Tokyo"}, id="t1"))
        return f"It is {json.loads(results[0])['datetime']} in Tokyo"

    model = ScriptedChatModel()
    model.set_handler(script)
    servers = McpServers(parse_mcp_config({"mcpServers": {"time": TIME}}))
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, temporal_env.client, model, tmp_path, mcp=servers)
        handle = await temporal_env.client.start_workflow(
            "AgentWorkflow",
            {
                "prompt": "What time is it in Tokyo?",
                "mode": "plan_and_execute",
                "mcp_servers": ["time"],
            },
            id=f"plan-mcp-{uuid.uuid4()}",
            task_queue=queue,
            result_type=AgentResult,
        )
        result = await handle.result()
        step_types = await activity_types(
            temporal_env.client.get_workflow_handle(f"{handle.id}/step-1")
        )
    assert result.plan is not None and result.plan.status == ["done"]
    assert "in Tokyo" in result.answer and "+09:00" in result.answer
    assert step_types == [
        MCP_LIST_TOOLS_ACTIVITY,
        "call_model",
        "time__get_current_time",
        "call_model",
    ]
