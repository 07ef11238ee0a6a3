"""`agent run` as a real subprocess against the real dev server and the in-process worker: the
live progress view, approvals answered inline on stdin, exit codes, Ctrl-C detaching.

The CLI runs through `asyncio.create_subprocess_exec`, so the event loop that runs the worker
keeps running while a command waits for its run. `AgentCli` is shared with
`tests/test_cli_commands.py`.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from durable_agents.testing import fake_openai as fake
from tests.conftest import AgentHarness

ROOT = Path(__file__).resolve().parent.parent
CLI_ENV_VARIABLES = ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TASK_QUEUE", "AGENT_DEBUG")


@dataclass
class Done:
    """A finished `agent` command."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    def one_error_line(self) -> str:
        """The stderr of a failed command, checked to be one line and no traceback."""
        assert self.code != 0, self
        assert "Traceback" not in self.err + self.out, self.err
        lines = self.err.strip().splitlines()
        assert len(lines) == 1, self.err
        assert lines[0].startswith("agent: "), lines[0]
        return lines[0]


class AgentCli:
    """Runs `python -m cli.main --address <test server> --task-queue <test queue> ...`."""

    def __init__(self, address: str, task_queue: str) -> None:
        self.address = address
        self.task_queue = task_queue
        self.env = {k: v for k, v in os.environ.items() if k not in CLI_ENV_VARIABLES}

    @classmethod
    def of(cls, agent: AgentHarness, env: WorkflowEnvironment) -> AgentCli:
        return cls(env.client.service_client.config.target_host, agent.task_queue)

    async def spawn(self, *args: str, stdin: bool = False) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "durable_agents.cli.main",
            "--address",
            self.address,
            "--task-queue",
            self.task_queue,
            *args,
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=ROOT,
            env=self.env,
        )

    async def __call__(self, *args: str, stdin: str | None = None, timeout: float = 30) -> Done:
        """Run a command to its end; `stdin` is written and then closed (None: /dev/null)."""
        process = await self.spawn(*args, stdin=stdin is not None)
        out, err = await asyncio.wait_for(
            process.communicate(stdin.encode() if stdin is not None else None), timeout
        )
        assert process.returncode is not None
        return Done(process.returncode, out.decode(), err.decode())


async def read_until(stream: asyncio.StreamReader, text: str, timeout: float = 15) -> str:
    """What `stream` printed up to and including the first line containing `text`."""
    seen = ""
    async with asyncio.timeout(timeout):
        while text not in seen:
            line = await stream.readline()
            assert line, f"output ended before {text!r}: {seen}"
            seen += line.decode()
    return seen


def write_call(path: str, content: str, call_id: str = "w1") -> fake.Completion:
    return fake.tool_calls(fake.call("write_file", {"path": path, "content": content}, id=call_id))


async def test_run_shows_progress_and_the_answer(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    cli = AgentCli.of(agent, temporal_env)
    workflow_id = f"cli-run-{uuid.uuid4()}"
    agent.fake.enqueue(
        fake.tool_calls(fake.call("echo", {"text": "hello from the tool"}, id="e1")),
        fake.text("The tool said hello."),
    )

    done = await cli("run", "Say hello via echo", "--tool", "echo", "--id", workflow_id)

    assert done.code == 0, done
    assert f"started {workflow_id}" in done.out
    assert 'echo {"text": "hello from the tool"} → hello from the tool' in done.out
    assert "done · completed · 2 turns · 1 tool call · 30 tokens" in done.out
    assert done.out.rstrip().endswith("The tool said hello.")
    assert agent.fake.requests[0]["tools"][0]["function"]["name"] == "echo"
    description = await temporal_env.client.get_workflow_handle(workflow_id).describe()
    assert await description.static_summary() == "Say hello via echo"
    details = await description.static_details()
    assert details is not None and "| tools | echo |" in details


async def test_run_approves_inline_from_stdin(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    cli = AgentCli.of(agent, temporal_env)
    agent.fake.enqueue(write_call("notes.txt", "hello world"), fake.text("Saved."))

    done = await cli("run", "Save a note", "--by", "alice", stdin="y\n")

    assert done.code == 0, done
    assert "? write_file" in done.out and "waits for approval (call w1)" in done.out
    assert "[y]es/[n]o/[e]dit/[s]kip: y" in done.out
    assert "→ approved w1 by alice" in done.out
    assert "wrote 11 bytes to notes.txt (approved by alice)" in done.out
    assert done.out.rstrip().endswith("Saved.")
    assert (agent.workspace / "notes.txt").read_text() == "hello world"


async def test_run_rejects_and_edits_inline(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    cli = AgentCli.of(agent, temporal_env)
    agent.fake.enqueue(
        write_call("a.txt", "draft", "w1"),
        write_call("b.txt", "draft", "w2"),
        fake.text("Done with both."),
    )
    stdin = 'n\nnot that file\ne\n{"path": "b.txt", "content": "final"}\n'

    done = await cli("run", "Write two files", "--tool", "write_file", stdin=stdin)

    assert done.code == 0, done
    assert "→ rejected w1 by" in done.out and ": not that file" in done.out
    assert "→ edited w2" in done.out
    assert not (agent.workspace / "a.txt").exists()
    assert (agent.workspace / "b.txt").read_text() == "final"
    tool_messages = [m for m in agent.fake.requests[1].messages if m["role"] == "tool"]
    assert tool_messages[0]["content"].startswith("Rejected by ")
    assert "not that file" in tool_messages[0]["content"]


async def test_closed_stdin_prints_the_commands_and_keeps_watching(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    cli = AgentCli.of(agent, temporal_env)
    workflow_id = f"cli-nostdin-{uuid.uuid4()}"
    agent.fake.enqueue(write_call("x.txt", "x"), fake.text("Written."))
    process = await cli.spawn("run", "Write x", "--id", workflow_id)  # stdin: /dev/null
    assert process.stdout is not None
    seen = await read_until(process.stdout, "stdin is closed")
    approve = f"approve {workflow_id} w1"
    assert approve in seen

    decided = await cli("approve", workflow_id, "w1")
    out, _ = await asyncio.wait_for(process.communicate(), 15)

    assert decided.code == 0, decided
    assert process.returncode == 0
    assert "wrote 1 bytes to x.txt" in out.decode()
    assert out.decode().rstrip().endswith("Written.")


async def test_exit_code_2_at_max_iterations_with_json(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    cli = AgentCli.of(agent, temporal_env)
    agent.fake.set_handler(lambda _: fake.tool_calls(fake.call("echo", {"text": "again"})))

    done = await cli("run", "Loop forever", "--tool", "echo", "--max-iterations", "2", "--json")

    assert done.code == 2, done
    result = done.json()  # stdout is only JSON; the progress went to stderr
    assert result["stop_reason"] == "max_iterations"
    assert [step["tool"] for step in result["steps"]] == ["echo"]
    assert "turn 1/2" in done.err


async def test_failed_run_and_bad_input(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    cli = AgentCli.of(agent, temporal_env)

    failed = await cli("run", "Use a tool that is not there", "--tool", "no_such_tool")
    refused = await cli("run", "x", "--max-iterations", "0")
    not_json = await cli("run", "x", "--input-json", "{oops")

    assert failed.code == 1, failed
    assert "failed · InvalidAgentInput: " in failed.out and "no_such_tool" in failed.out
    assert "invalid input: max_iterations" in refused.one_error_line()
    assert refused.code == 4
    assert "--input-json is not valid JSON" in not_json.one_error_line()


async def test_ctrl_c_detaches_without_cancelling(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    cli = AgentCli.of(agent, temporal_env)
    workflow_id = f"cli-detach-{uuid.uuid4()}"
    agent.fake.enqueue(write_call("later.txt", "later"), fake.text("Later."))
    process = await cli.spawn("run", "Write later", "--id", workflow_id, "--no-input")
    assert process.stdout is not None
    await read_until(process.stdout, "waits for approval")

    process.send_signal(signal.SIGINT)
    out, err = await asyncio.wait_for(process.communicate(), 15)

    assert process.returncode == 130, err
    assert f"detached from {workflow_id}; the run goes on" in out.decode()
    assert f"watch {workflow_id}" in out.decode()
    handle = temporal_env.client.get_workflow_handle(workflow_id)
    assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
    await handle.terminate("test over")
