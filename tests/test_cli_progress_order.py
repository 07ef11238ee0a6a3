"""`agent run`'s live view keeps each turn's text under its own turn: a look at the event
stream that spans the end of one turn and the start of the next prints the end of the first
turn's text, then its tool steps, then the next turn's header (issue 31, item 7).

The CLI is a real subprocess following a real run on the real worker, the model the fake
OpenAI server streaming over real HTTP. To make one look span two turns without racing a
timer, the test pauses the CLI (SIGSTOP) while the model finishes turn 2 and the run starts
turn 3, and lets it go on (SIGCONT) once turn 3's model call is in flight: the CLI's next look
then reads the end of turn 2's text, its tool call and the start of turn 3 at once, which is
what a fast tool between two model calls does to a view that looks three times a second.
"""

from __future__ import annotations

import asyncio
import io
import os
import signal
import threading
import uuid
from datetime import UTC, datetime

from temporalio.testing import WorkflowEnvironment

from durable_agents.cli.progress import Console, ProgressView
from durable_agents.contracts.agent_result import ToolStep
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.events import (
    AgentEvent,
    ModelCallFinished,
    ModelCallStarted,
    TextDelta,
)
from durable_agents.contracts.usage import TokenUsage
from durable_agents.testing import fake_openai as fake
from testkit.eventually import eventually
from tests.conftest import AgentHarness
from tests.test_cli_run import AgentCli
from tests.test_live_tokens import read_until_text

TURN_2_TEXT = (
    "The first echo worked. Now I will echo a second time, and this sentence goes on for a "
    "while so that it streams in many pieces: THE END OF TURN TWO."
)
SHOWN_BEFORE_PAUSE = TURN_2_TEXT[:24]


async def test_the_end_of_a_turns_text_stays_under_that_turn(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    cli = AgentCli.of(agent, temporal_env)
    turn_2_rest = threading.Event()
    turn_3_reply = threading.Event()
    agent.fake.enqueue(
        fake.tool_calls(fake.call("echo", {"text": "one"}, id="e1")),
        fake.streamed(
            fake.tool_calls(fake.call("echo", {"text": "two"}, id="e2"), content=TURN_2_TEXT),
            piece_chars=4,
            hold_after=7,  # the role chunk, then 24 characters
            release=turn_2_rest,
        ),
        fake.hold(turn_3_reply, fake.tool_calls(fake.call("echo", {"text": "three"}, id="e3"))),
        fake.text("All three echoes done."),
    )
    process = await cli.spawn("run", "Echo three times", "--tool", "echo", "--id",
                              f"cli-order-{uuid.uuid4()}")  # fmt: skip
    assert process.stdout is not None
    seen = await read_until_text(process.stdout, SHOWN_BEFORE_PAUSE)

    os.kill(process.pid, signal.SIGSTOP)
    try:
        turn_2_rest.set()

        async def turn_3_in_flight() -> bool:
            return len(agent.fake.requests) == 3

        await eventually(turn_3_in_flight, what="turn 3's model call in flight")
    finally:
        os.kill(process.pid, signal.SIGCONT)
    await asyncio.sleep(1)  # the CLI's look at turn 2's end and turn 3's start
    turn_3_reply.set()
    out, err = await asyncio.wait_for(process.communicate(), 30)

    assert process.returncode == 0, err
    printed = seen + out.decode()
    lines = printed.splitlines()
    turn_3 = next(i for i, line in enumerate(lines) if line.startswith("turn 3"))
    end_of_turn_2 = next(i for i, line in enumerate(lines) if "THE END OF TURN TWO" in line)
    echo_two = next(i for i, line in enumerate(lines) if 'echo {"text": "two"}' in line)
    assert end_of_turn_2 < echo_two < turn_3, printed
    assert printed.rstrip().endswith("All three echoes done.")


def test_a_look_that_spans_several_turns_prints_each_in_its_place() -> None:
    """The status is read after the events, so it can be two turns ahead of the text the look
    brought: each turn's text, then its steps, then the next turn's header."""
    at = datetime(2026, 1, 1, tzinfo=UTC)
    out = io.StringIO()
    view = ProgressView(Console(out), "w", "agent")
    view.turn = 2

    def step(turn: int) -> ToolStep:
        return ToolStep(iteration=turn, call_id=f"c{turn}", tool="echo", raw_arguments="{}",
                        args={}, observation=f"echoed {turn}", status="ok", started_at=at,
                        finished_at=at)  # fmt: skip

    def text(turn: int, words: str) -> list[AgentEvent]:
        base = {"workflow_id": "w", "at": at, "model_call": turn}
        return [TextDelta(**base, text=words), ModelCallFinished(**base, rest=" (end)")]

    events: list[AgentEvent] = [
        *text(2, "text of two"),
        ModelCallStarted(workflow_id="w", at=at, model_call=3),
        *text(3, "text of three"),
        ModelCallStarted(workflow_id="w", at=at, model_call=4),
    ]
    status = AgentStatus(iteration=4, max_iterations=10, usage=TokenUsage(total_tokens=45),
                         recent_steps=[step(2), step(3)])  # fmt: skip

    assert view.new_turn_in(events)
    view.stream(events, status)

    assert out.getvalue().splitlines() == [
        "  ✎ text of two (end)",
        "  ✓ echo {} → echoed 2",
        "turn 3",
        "  ✎ text of three (end)",
        "  ✓ echo {} → echoed 3",
        "turn 4/10 · 45 tokens so far",
    ]
    assert not view.new_turn_in(events)
