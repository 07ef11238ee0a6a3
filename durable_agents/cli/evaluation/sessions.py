"""A scenario run as a session (`Scenario.session`): a `SessionWorkflow` with the scenario's run
input as its agent settings, the prompt as its first message and `turns` as the next ones, each
sent once the turn before it has answered; the scripted people answer what its turns wait for
(through the session, which forwards each answer to its running turn). Then the session is
ended, and the record sums its turns: the last answer (and every turn's), steps, tokens."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from temporalio.client import WorkflowUpdateFailedError
from temporalio.service import RPCError

from durable_agents.cli.evaluation.run_tree import history_latency
from durable_agents.cli.evaluation.scoring import (
    Failures,
    RunRecord,
    check,
    cost_of,
    new_tool_calls,
)
from durable_agents.contracts.session import TurnResult
from durable_agents.contracts.usage import TokenUsage
from durable_agents.errors import AgentError

if TYPE_CHECKING:
    from durable_agents.cli.evaluation.runner import Job
    from durable_agents.cli.evaluation.suite import Suite
    from durable_agents.client import AgentClient


def session_input(job: Job) -> dict[str, Any]:
    """The `SessionInput` of a session scenario: its session settings, the run input (less
    the prompt, which is the first message) as the agent's settings."""
    agent = {k: v for k, v in job.payload.items() if k != "prompt"}
    return {**(job.scenario.session or {}), "agent": agent}


async def _send_all(agents: AgentClient, job: Job, task_queue: str) -> list[TurnResult]:
    from durable_agents.cli.evaluation.runner import PEOPLE_NAME

    session = await agents.start_session(
        session_input(job), id=job.workflow_id, task_queue=task_queue
    )
    turns: list[TurnResult] = []
    for text in [job.scenario.prompt, *job.scenario.turns]:
        turn = await session.send(text, by=PEOPLE_NAME)
        turns.append(turn)
        if turn.error:
            break
    await session.end(by=PEOPLE_NAME)
    return turns


async def run_session_job(
    agents: AgentClient,
    job: Job,
    *,
    suite: Suite,
    task_queue: str,
    base: dict[str, Any],
    poll_seconds: float,
) -> RunRecord:
    """Make one session scenario to its end and return its scored record (never raises for
    the session's sake: one that could not start, failed or took too long is a record with an
    `error`)."""
    from durable_agents.cli.evaluation.runner import ScriptedPeople

    run = agents.run(job.workflow_id)
    people = ScriptedPeople(run, job.scenario, poll_seconds)
    playing = asyncio.create_task(people.run())
    turns: list[TurnResult] = []
    error: str | None = None
    try:
        turns = await asyncio.wait_for(_send_all(agents, job, task_queue), job.timeout_seconds)
    except TimeoutError:
        error = f"no end within {job.timeout_seconds:g} s (agent eval terminated the session)"
        with contextlib.suppress(AgentError):
            await run.terminate("agent eval: the session did not end in time")
    except (AgentError, RPCError, WorkflowUpdateFailedError) as failed:
        error = f"the session failed: {failed}"
    finally:
        playing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await playing
    steps = [s for t in turns for s in t.steps]
    usage = sum((t.usage for t in turns), TokenUsage())
    failed_turn = next((t.error for t in turns if t.error), None)
    events: list[Any] = []
    with contextlib.suppress(AgentError):
        events = await run.history_events()
    record = RunRecord(
        **base,
        ending="completed" if turns and not failed_turn and error is None else "failed",
        failure=failed_turn,
        stop_reason=turns[-1].stop_reason if turns else None,
        answer=turns[-1].answer if turns else None,
        answers=[t.answer for t in turns],
        steps=len(steps),
        tools=[s.tool for s in steps],
        new_calls=new_tool_calls(steps),
        usage=usage,
        cost_usd=cost_of([], usage, job.model, suite.prices),
        latency_seconds=history_latency(events),
        failures=Failures(tool_errors=sum(s.status == "error" for s in steps)),
        people=people.actions,
        error=error or people.error,
    )
    return record.model_copy(update={"problems": check(job.scenario.expect, record)})
