"""The session's current details are Markdown that render commands literally: every command sits
in a code span (the Web UI would otherwise turn `--` into an en dash and quotes into curly ones,
and the pasted command would fail)."""

from __future__ import annotations

import re
import shlex
import uuid
from datetime import UTC, datetime
from typing import Any

from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.contracts.usage import TokenUsage
from durable_agents.loop.approvals import open_request
from durable_agents.loop.session_details import idle_details, send_command, turn_details
from durable_agents.testing import fake_openai as fake
from tests.conftest import AgentHarness
from tests.session_support import echo_model, send_with_start, wait_status

CODE_SPAN = re.compile(r"(?<!`)`([^`]+)`(?!`)")


def code_spans(markdown: str) -> list[str]:
    return CODE_SPAN.findall(markdown)


def outside_code(markdown: str) -> str:
    return CODE_SPAN.sub("", markdown)


def approval(workflow_id: str) -> PendingRequest:
    return open_request(
        kind=RequestKind.APPROVAL,
        workflow_id=workflow_id,
        call_id="c1",
        tool="write_file",
        args={"path": "a.txt", "content": "it's"},
        now=datetime(2026, 1, 1, tzinfo=UTC),
        timeout_seconds=None,
        on_timeout="reject",
    )


def test_the_send_command_is_a_valid_shell_command() -> None:
    command = send_command("chat 1")
    assert shlex.split(command) == [
        "temporal", "workflow", "update", "execute", "--workflow-id", "chat 1", "--name", "send",
        "--input", '{"text": "..."}',
    ]  # fmt: skip


def test_idle_details_put_the_send_command_in_a_code_span() -> None:
    details = idle_details("chat-1", 3, TokenUsage(total_tokens=220), 1)
    assert details.startswith("3 turns · 220 tokens · 1 queued\n\n")
    assert send_command("chat-1") in code_spans(details)
    assert "--" not in outside_code(details) and '"' not in outside_code(details)


def test_idle_details_say_when_the_last_turn_did_not_complete() -> None:
    details = idle_details("chat-1", 2, TokenUsage(), 0, "it failed: boom")
    assert "the last turn did not complete: it failed: boom" in details.split("\n\n")


def test_turn_details_put_ids_text_and_commands_in_code_spans() -> None:
    request = approval("chat-1/turn-2")
    details = turn_details(2, 'say "hi" -- twice', "chat-1/turn-2", [request])
    spans = code_spans(details)
    assert 'say "hi" -- twice' in spans
    assert "chat-1/turn-2" in spans
    assert request.command in spans
    assert "--" not in outside_code(details) and '"' not in outside_code(details)


def test_a_message_with_backticks_stays_one_code_span() -> None:
    details = turn_details(1, "run `ls` now", "s/turn-1")
    assert details.startswith("turn 1: ``run `ls` now``\n\n")


async def test_session_details_show_the_pending_command_then_the_send_command(
    agent: AgentHarness,
) -> None:
    def model(body: dict[str, Any]) -> Any:
        if body["messages"][-1]["role"] == "user" and "save" in body["messages"][-1]["content"]:
            return fake.tool_calls(fake.call("write_file", {"path": "s.txt", "content": "s"}))
        return echo_model(body)

    agent.fake.set_handler(model)
    session = f"session-{uuid.uuid4()}"
    _, handle = await send_with_start(agent.client, session, agent.task_queue, "hello")
    details = (await handle.query("__temporal_workflow_metadata")).current_details
    # The test's server is on a port of its own: the pasted commands name it (issue 31, item 8).
    send = f"{send_command(session)} --address {agent.client.service_client.config.target_host}"
    assert send in code_spans(details)

    await handle.signal("send", {"text": "save it"})
    status = await wait_status(handle, lambda s: len(s.pending) == 1)
    [request] = status.pending
    details = (await handle.query("__temporal_workflow_metadata")).current_details
    assert request.command in code_spans(details)
    assert "running inside this session" in outside_code(details)
    assert "--" not in outside_code(details)

    await handle.signal("approve", {"call_id": "*"})
    await wait_status(handle, lambda s: s.turns == 2 and s.state == "idle")
    details = (await handle.query("__temporal_workflow_metadata")).current_details
    assert details.startswith("2 turns · ")
    assert send in code_spans(details)
