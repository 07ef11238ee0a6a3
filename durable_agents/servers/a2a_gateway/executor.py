"""The A2A agent executor: a task is one `AgentWorkflow` run (workflow id `a2a-<task id>`).

A new task starts the run and follows it, each tool call as it starts and reports progress,
each new turn, tool step and wait as a `working` status update (what a streaming client
sees); the answer becomes the task's `answer` artifact and the task completes (or fails,
with the run's error). A new task past its principal's limits (`client.limits`) is
`rejected` before any run starts, its message saying which limit and when to try again
(`limit` and `retry_after` in its metadata). When the run waits for a person, the task goes
to `input-required` with the first waiting request (text for people, a data part with the
call for programs, and the call id and argument digest in the message metadata); the next
message on the task answers it (`answers.read_answer`), and the task follows the run on.
An answer that cannot apply leaves the task in `input-required`, saying why.

Runs are followed through their event stream, read by query (nothing recorded in history),
and their `status` when the stream shows a change (`RunControl.follow_run`).
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from a2a.helpers.proto_helpers import (
    get_data_parts,
    new_data_part,
    new_task_from_user_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import Message, Part, TaskState
from google.protobuf import json_format

from durable_agents.client import RunHandle, RunOutcome, render
from durable_agents.client.run_input import run_input
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.errors import AgentError, InvalidInput, LimitExceeded
from durable_agents.servers.a2a_gateway.access import call_principal
from durable_agents.servers.a2a_gateway.answers import Shown, read_answer, whole_numbers
from durable_agents.servers.run_control import Paused, RunControl

WORKFLOW_PREFIX = "a2a-"
DEFAULT_BY = "a2a client"
CONTEXT_MEMO = "a2a_context_id"
"""The run's memo entry holding its task's context id (`task_store.RunTaskStore` reads it)."""
ANSWER_ARTIFACT = "answer"


def workflow_id_for(task_id: str) -> str:
    """The run behind an A2A task."""
    return f"{WORKFLOW_PREFIX}{task_id}"


def message_metadata(message: Message | None) -> dict[str, Any]:
    if message is None or not message.HasField("metadata"):
        return {}
    return whole_numbers(json_format.MessageToDict(message.metadata))


def request_of(context: RequestContext) -> tuple[str, str | None, dict[str, Any] | None]:
    """A new task's prompt, agent and options (see `answers`)."""
    metadata = message_metadata(context.message)
    agent, options = metadata.get("agent"), metadata.get("options")
    return (
        context.get_user_input(),
        agent if isinstance(agent, str) else None if agent is None else str(agent),
        options,
    )


def by_of(context: RequestContext) -> str:
    by = message_metadata(context.message).get("by")
    return by if isinstance(by, str) and by.strip() else DEFAULT_BY


def waiting_text(request: PendingRequest) -> str:
    """What the `input-required` message says, for a person."""
    shown = "\n".join(line.strip() for line in render.pending_block(request, full=True))
    if request.kind.decided_by is RequestKind.QUESTION:
        return f"{shown}\nReply with your answer."
    return (
        f"{shown}\nargs_digest: {request.args_digest}\n"
        "Reply 'approve' or 'reject: <why>' (this applies to exactly these arguments)."
    )


def waiting_parts(
    request: PendingRequest, problem: str | None = None
) -> tuple[list[Part], dict[str, Any]]:
    """The `input-required` message for `request`: its parts (text, and the call as data) and
    its metadata (`Shown`: what the next message on the task answers)."""
    text = waiting_text(request)
    if problem:
        text = f"Not applied: {problem}\n{text}"
    call = request.model_dump(
        mode="json",
        include={"call_id", "kind", "tool", "args", "args_digest", "question", "expires_at"},
    )
    shown = Shown(request.call_id, request.kind, request.args_digest)
    return [new_text_part(text), new_data_part({"pending": call})], shown.metadata()


def answer_parts(result: AgentResult) -> list[Part]:
    """The `answer` artifact's parts: the text, and the typed output as data when there is one."""
    parts: list[Part] = [new_text_part(result.answer)]
    if result.output is not None:
        parts.append(new_data_part(result.output))
    return parts


def answer_metadata(outcome: RunOutcome) -> dict[str, Any]:
    assert outcome.result is not None
    return {"workflow_id": outcome.workflow_id, "stop_reason": outcome.result.stop_reason.value}


def ended_text(outcome: RunOutcome) -> str:
    """What a failed task says about a run that ended without an answer."""
    return f"the run {outcome.ending}: {outcome.error_type}: {outcome.message}"


class RunExecutor(AgentExecutor):
    """Runs A2A tasks as durable agent runs (see the module docstring)."""

    def __init__(self, control: RunControl) -> None:
        self.control = control

    def of(self, context: RequestContext) -> RunExecutor:
        """This executor for one call, as its principal (`RunControl.of`): a task starts in
        the principal's tenant, an answer is signed by it, another tenant's run is missing."""
        scoped = copy.copy(self)
        scoped.control = self.control.of(call_principal(context.call_context))
        return scoped

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        await self.of(context).run_task(context, event_queue)

    async def run_task(self, context: RequestContext, event_queue: EventQueue) -> None:
        """`execute`, as the call's principal."""
        assert context.task_id is not None and context.context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        workflow_id = workflow_id_for(context.task_id)
        task = context.current_task
        try:
            if task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
                await self._answer(context, updater, workflow_id, task.status.message)
                return
            prompt, agent, options = request_of(context)
            payload = run_input(prompt, agent, options, self.control.profiles)
            if task is None and context.message is not None:
                await event_queue.enqueue_event(new_task_from_user_message(context.message))
            handle = await self.control.start(
                payload,
                workflow_id=workflow_id,
                by=by_of(context),
                memo={CONTEXT_MEMO: context.context_id},
            )
            await updater.start_work(
                updater.new_agent_message([new_text_part(f"started run {handle.id}")])
            )
            await self._follow(updater, handle)
        except LimitExceeded as error:  # refused before anything started: try again later
            metadata = {"limit": error.limit, "retry_after": error.retry_after}
            message = updater.new_agent_message([new_text_part(str(error))], metadata=metadata)
            await updater.reject(message)
        except AgentError as error:  # the task fails, naming why (nothing runs on)
            await updater.failed(updater.new_agent_message([new_text_part(str(error))]))

    async def _answer(
        self, context: RequestContext, updater: TaskUpdater, workflow_id: str, shown_in: Message
    ) -> None:
        shown = Shown.of_metadata(message_metadata(shown_in))
        if shown is None:
            await updater.failed(
                updater.new_agent_message([new_text_part("this task waits for nothing known")])
            )
            return
        answer = read_answer(
            context.get_user_input(),
            get_data_parts(context.message.parts) if context.message else [],
            shown,
            by_of(context),
        )
        try:
            if isinstance(answer, str):
                raise InvalidInput(answer)
            decided = await self.control.decide(workflow_id, answer)
        except AgentError as error:  # the task stays in input-required, saying why
            await self._ask_again(updater, workflow_id, shown, str(error))
            return
        note = (
            render.decision_line(decided.decision)
            if decided.decision is not None
            else f"replied to {decided.call_id}"
        )
        await updater.start_work(updater.new_agent_message([new_text_part(note)]))
        await self._follow(updater, await self.control.open(workflow_id), ignore={shown.call_id})

    async def _ask_again(
        self, updater: TaskUpdater, workflow_id: str, shown: Shown, problem: str
    ) -> None:
        """The answer did not apply: stay in `input-required`, saying why (the run may have
        moved on meanwhile: then follow it)."""
        pending = await self.control.pending(workflow_id)
        request = next((p for p in pending if p.call_id == shown.call_id), None)
        if request is None:
            run = await self.control.open(workflow_id)
            await self._follow(updater, run, ignore={shown.call_id})
            return
        await self._wait_for_person(updater, request, problem=problem)

    async def _follow(
        self, updater: TaskUpdater, run: RunHandle, ignore: set[str] | None = None
    ) -> None:

        async def on_note(line: str) -> None:
            await updater.update_status(
                TaskState.TASK_STATE_WORKING, updater.new_agent_message([new_text_part(line)])
            )

        ended = await self.control.follow_run(run, on_note, ignore or set())
        if isinstance(ended, Paused):
            await self._wait_for_person(updater, ended.pending[0])
            return
        await self._finish(updater, ended)

    async def _wait_for_person(
        self, updater: TaskUpdater, request: PendingRequest, problem: str | None = None
    ) -> None:
        parts, metadata = waiting_parts(request, problem)
        await updater.requires_input(updater.new_agent_message(parts, metadata=metadata))

    async def _finish(self, updater: TaskUpdater, outcome: RunOutcome) -> None:
        result = outcome.result
        if result is None:
            await updater.failed(updater.new_agent_message([new_text_part(ended_text(outcome))]))
            return
        await updater.add_artifact(
            answer_parts(result), name=ANSWER_ARTIFACT, metadata=answer_metadata(outcome)
        )
        await updater.complete(updater.new_agent_message([new_text_part(result.answer)]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Cancel the run (it ends as cancelled in Temporal) and the task."""
        assert context.task_id is not None and context.context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        with contextlib.suppress(AgentError):  # no run behind it (any more): cancelled anyway
            control = self.control.of(call_principal(context.call_context))
            await control.agents.run(workflow_id_for(context.task_id)).cancel()
        await updater.cancel()
