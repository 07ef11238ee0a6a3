"""`RunTaskStore`: the A2A task store whose tasks are the runs behind them.

A task is one `AgentWorkflow` run, workflow id `a2a-<task id>` (`executor.workflow_id_for`), with
the task's context id in the run's memo (`executor.CONTEXT_MEMO`). Reading a task asks Temporal
where the run is now:

- running, a call waiting for a person: `input-required`, with the waiting message the executor
  shows (the call, its argument digest, `Shown` in the metadata: the next message answers it);
- running, nothing waiting: `working`;
- completed: `completed`, with the `answer` artifact; failed, terminated or timed out: `failed`
  naming why; cancelled: `canceled`.

So a task outlives the gateway process: after a restart of `agent a2a`, or on a second gateway
in front of the same Temporal namespace, `GetTask`, `ListTasks`, `CancelTask` and the answer to
a task that waits all work on what the run says. What this process saved last (the messages of
the task's history, the progress line of a `working` task) is kept in a bounded cache and used
while it agrees with the run; the run's state always wins.

Only runs started through an A2A gateway (their memo says `started_via: a2a`) are tasks here:
any other workflow id answers as an unknown task.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from typing import Any

from a2a.helpers.proto_helpers import new_text_part
from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types.a2a_pb2 import (
    Artifact,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
)
from temporalio.client import WorkflowExecutionDescription

from durable_agents.client import RunHandle
from durable_agents.client.connection import is_running
from durable_agents.client.outcome import RunOutcome
from durable_agents.client.workflow_calls import WORKFLOW_TYPE
from durable_agents.errors import AgentError, NotStartedHere, NoWorker, RunNotFound
from durable_agents.servers.a2a_gateway.access import call_principal
from durable_agents.servers.a2a_gateway.answers import Shown
from durable_agents.servers.a2a_gateway.executor import (
    ANSWER_ARTIFACT,
    CONTEXT_MEMO,
    WORKFLOW_PREFIX,
    answer_metadata,
    answer_parts,
    ended_text,
    message_metadata,
    waiting_parts,
    workflow_id_for,
)
from durable_agents.servers.run_control import RunControl

MAX_CACHED_TASKS = 1_000
"""Tasks this process remembers what it saved of (their history); older ones are rebuilt from
their runs alone."""
MAX_LISTED_RUNS = 100
"""`ListTasks` reads the newest this many A2A runs (each is one task)."""
WORKING_TEXT = "the run goes on (workflow {workflow_id})"


def _copy(task: Task) -> Task:
    copied = Task()
    copied.CopyFrom(task)
    return copied


def agent_message(task: Task, parts: list[Part], metadata: dict[str, Any] | None = None) -> Message:
    """A message from the agent on `task`, as `TaskUpdater.new_agent_message` makes one."""
    message = Message(
        role=Role.ROLE_AGENT,
        task_id=task.id,
        context_id=task.context_id,
        message_id=str(uuid.uuid4()),
        parts=parts,
    )
    if metadata:
        message.metadata.update(metadata)
    return message


def _set_status(task: Task, state: int, message: Message) -> None:
    status = TaskStatus(state=state, message=message)  # type: ignore[arg-type]
    status.timestamp.GetCurrentTime()
    task.status.CopyFrom(status)


class RunTaskStore(TaskStore):
    """A2A tasks as the runs of `control` (see the module docstring)."""

    def __init__(self, control: RunControl, max_cached: int = MAX_CACHED_TASKS) -> None:
        self.control = control
        self.max_cached = max_cached
        self._saved: OrderedDict[str, Task] = OrderedDict()
        self._tenants: dict[str, str] = {}
        """The tenant of the principal that saved each remembered task."""

    async def save(self, task: Task, context: ServerCallContext) -> None:
        """Remember what this process made of the task (its run holds its state)."""
        self._saved[task.id] = _copy(task)
        self._tenants.setdefault(task.id, call_principal(context).tenant)
        self._saved.move_to_end(task.id)
        while len(self._saved) > self.max_cached:
            dropped, _ = self._saved.popitem(last=False)
            self._tenants.pop(dropped, None)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        """The task as its run is now; a task whose run has not started yet (just submitted)
        as it was saved; None for a task no A2A run stands behind."""
        agents = self.control.of(call_principal(context)).agents
        saved = self._saved.get(task_id)
        if agents.tenant is not None and self._tenants.get(task_id, agents.tenant) != agents.tenant:
            saved = None  # another tenant's task: as missing
        run = agents.run(workflow_id_for(task_id))
        try:
            description = await run.describe()
        except (RunNotFound, NotStartedHere):
            return _copy(saved) if saved is not None else None
        task = _copy(saved) if saved is not None else await self._new_task(task_id, description)
        await self._read_state(task, run, description)
        return task

    async def _new_task(self, task_id: str, description: WorkflowExecutionDescription) -> Task:
        context_id = (await description.memo()).get(CONTEXT_MEMO)
        return Task(id=task_id, context_id=context_id if isinstance(context_id, str) else task_id)

    async def _read_state(
        self, task: Task, run: RunHandle, description: WorkflowExecutionDescription
    ) -> None:
        if not is_running(description):
            outcome = await run.outcome(wait=False)
            assert outcome is not None
            self._ended(task, outcome)
            return
        try:
            pending = await run.pending()
        except NoWorker:  # nothing can tell now: as saved, else working
            pending = []
            if task.status.state != TaskState.TASK_STATE_UNSPECIFIED:
                return
        if pending:
            shown = Shown.of_metadata(message_metadata(task.status.message))
            if task.status.state != TaskState.TASK_STATE_INPUT_REQUIRED or (
                shown is None or shown.call_id != pending[0].call_id
            ):
                parts, metadata = waiting_parts(pending[0])
                message = agent_message(task, parts, metadata)
                _set_status(task, TaskState.TASK_STATE_INPUT_REQUIRED, message)
        elif task.status.state != TaskState.TASK_STATE_WORKING:
            text = WORKING_TEXT.format(workflow_id=run.id)
            _set_status(
                task, TaskState.TASK_STATE_WORKING, agent_message(task, [new_text_part(text)])
            )

    @staticmethod
    def _ended(task: Task, outcome: RunOutcome) -> None:
        result = outcome.result
        if result is None:
            state = (
                TaskState.TASK_STATE_CANCELED
                if outcome.ending == "cancelled"
                else TaskState.TASK_STATE_FAILED
            )
            if task.status.state != state:
                text = ended_text(outcome)
                _set_status(task, state, agent_message(task, [new_text_part(text)]))
            return
        if not any(artifact.name == ANSWER_ARTIFACT for artifact in task.artifacts):
            artifact = Artifact(
                artifact_id=str(uuid.uuid4()), name=ANSWER_ARTIFACT, parts=answer_parts(result)
            )
            artifact.metadata.update(answer_metadata(outcome))
            task.artifacts.append(artifact)
        if task.status.state != TaskState.TASK_STATE_COMPLETED:
            message = agent_message(task, [new_text_part(result.answer)])
            _set_status(task, TaskState.TASK_STATE_COMPLETED, message)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """The newest `MAX_LISTED_RUNS` A2A runs of the caller's tenant as tasks
        (`AgentClient.listed`), filtered, ordered and paged by the SDK's own rules
        (`InMemoryTaskStore.list` over them)."""
        query = f"WorkflowId STARTS_WITH '{WORKFLOW_PREFIX}'"
        agents = self.control.of(call_principal(context)).agents
        listed = InMemoryTaskStore()
        seen: set[str] = set()  # a run continued as new is listed once per execution
        async for run in agents.listed(query, types=(WORKFLOW_TYPE,)):
            if len(seen) >= MAX_LISTED_RUNS:
                break
            if run.workflow_id in seen:
                continue
            seen.add(run.workflow_id)
            try:
                task = await self.get(run.workflow_id.removeprefix(WORKFLOW_PREFIX), context)
            except AgentError:  # a run that cannot be read now is left out of this page
                continue
            if task is not None:
                await listed.save(task, context)
        return await listed.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Forget what this process saved (the run and its history stay in Temporal)."""
        self._saved.pop(task_id, None)
