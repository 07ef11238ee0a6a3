"""What each route of the HTTP API does with a run, in terms of HTTP statuses.

Everything goes through `AgentClient` (`durable_agents.client`; runs started here are marked
`started_via: serve`, and any run of the namespace can be reached). Its typed errors
(`durable_agents.errors`) become an `ApiError` with the status an HTTP client can act on
(`errors.api_error_for`):

- 404: no such workflow, or no such call waiting in it;
- 409: the run has ended, the call was already decided (or a client tool call answered), the
  digest does not match the call's arguments, a run with that id is already running, the
  workflow refused the request;
- 422: what was sent cannot apply (an answer to an approval, edited arguments that are invalid,
  a client tool's result that breaks its `result_schema`);
- 503 / 504: no worker answered in time.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable
from typing import Any, TypeVar

from temporalio.client import Client, WorkflowExecutionDescription

from durable_agents.client import AgentClient, RunHandle
from durable_agents.client.connection import QUERY_TIMEOUT, is_running, status_name
from durable_agents.client.run_handle import DIGEST_FIELD, STARTED_VIA
from durable_agents.client.workflow_calls import CLOSED_QUERY_TIMEOUT_SECONDS, status_from_result
from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.principals import Principal
from durable_agents.errors import AgentError, InvalidInput, RunNotFound
from durable_agents.servers.http_api.bodies import Decision, StartRun, Steer, ToolResult
from durable_agents.servers.http_api.errors import ApiError, api_error_for
from durable_agents.servers.run_control import as_caller, digest_problem

VIA = "serve"
"""`started_via` in the memo of the runs and sessions `agent serve` starts."""
T = TypeVar("T")


async def http(work: Awaitable[T], *, answered: str = "decided") -> T:
    """`await work`, with the client's typed error as the `ApiError` it means."""
    try:
        return await work
    except RunNotFound as error:
        raise ApiError(404, f"no workflow with id {error.workflow_id!r}") from None
    except AgentError as error:
        raise api_error_for(error, answered=answered) from None


class Runs:
    """The run routes' work (see the module docstring)."""

    def __init__(self, client: Client, task_queue: str) -> None:
        self.agents = AgentClient(client, task_queue=task_queue, via=VIA, only_own=False)
        self.task_queue = task_queue

    def of(self, principal: Principal | None) -> Runs:
        """These routes for one request of `principal` (`run_control.as_caller`: its tenant's
        runs only, another's answering 404 as a missing one; its decisions signed by it)."""
        scoped = copy.copy(self)
        scoped.agents = as_caller(self.agents, principal)
        return scoped

    def run(self, workflow_id: str) -> RunHandle:
        return self.agents.run(workflow_id)

    async def described(self, workflow_id: str) -> tuple[RunHandle, WorkflowExecutionDescription]:
        """The workflow's handle and description, or 404."""
        run = self.run(workflow_id)
        return run, await http(run.describe())

    # -- starting and reading ------------------------------------------------------------------

    async def start(self, body: StartRun) -> RunHandle:
        """Start an `AgentWorkflow` run (409 if one with the id runs)."""
        return await http(self.agents.start_input(body.workflow_input(), id=body.id))

    async def listed(self, limit: int) -> list[dict[str, Any]]:
        """The newest runs and sessions this request's principal reaches."""
        return [run.shown() for run in await http(self.agents.list_runs(limit=limit))]

    async def status(self, workflow_id: str) -> dict[str, Any]:
        """As `agent status --json`: the execution status and the `status` query's answer."""
        run, description = await self.described(workflow_id)
        running = is_running(description)
        timeout = QUERY_TIMEOUT.total_seconds() if running else CLOSED_QUERY_TIMEOUT_SECONDS
        state = await run.query_status(timeout)
        data: dict[str, Any] = {
            "workflow_id": workflow_id,
            "execution_status": status_name(description),
            "workflow_type": description.workflow_type,
            "static_summary": await description.static_summary(),
            "started_via": (await description.memo()).get(STARTED_VIA),
        }
        if not running:
            outcome = await http(run.outcome())
            assert outcome is not None
            if state is None and outcome.result is not None:
                state = status_from_result(outcome.result)
            if outcome.result is None:
                data["error"] = {"type": outcome.error_type, "message": outcome.message}
        elif state is None:
            raise ApiError(
                503,
                f"{workflow_id!r} is running but no worker answered the status query; is a "
                f"worker polling task queue {description.task_queue!r}?",
            )
        if state is not None:
            data.update(state.model_dump(mode="json"))
        return data

    async def result(self, workflow_id: str, wait: bool) -> dict[str, Any] | None:
        """The result as `agent result --json` shows it; None while the run goes on."""
        outcome = await http(self.run(workflow_id).outcome(wait=wait))
        return None if outcome is None else dict(outcome.to_json())

    async def pending(self, workflow_id: str) -> list[PendingRequest]:
        """What waits for a person ([] once the run has ended)."""
        return await http(self.run(workflow_id).pending())

    # -- answering -----------------------------------------------------------------------------

    async def decide(self, workflow_id: str, body: Decision) -> dict[str, Any]:
        """Approve, reject, edit (approve with `args`) or reply; the recorded decision."""
        problem = digest_problem(body.decision, body.args_digest)
        if problem is not None:
            error = InvalidInput(f"invalid input: {DIGEST_FIELD}: {problem}", field=DIGEST_FIELD)
            raise api_error_for(error)
        run = self.run(workflow_id)
        if body.decision == "reply":
            if not body.text:
                raise ApiError(422, "text: a reply needs the text of the answer", field="text")
            answered = await http(run.reply(body.call_id, body.text, by=body.by))
            return {"call_id": body.call_id, "kind": answered.kind.value, "outcome": "answered"}
        if body.decision == "approve":
            approving = run.approve(
                body.call_id,
                digest=body.args_digest,
                edit=body.args,
                by=body.by,
                comment=body.comment,
            )
            return (await http(approving)).model_dump(mode="json")
        rejecting = run.reject(body.call_id, reason=body.reason, by=body.by)
        return (await http(rejecting)).model_dump(mode="json")

    async def tool_result(self, workflow_id: str, body: ToolResult) -> dict[str, Any]:
        """The `tool_result` update: a client tool's result or error; the recorded answer.
        Its validator refuses an unknown or answered call and a result that breaks the tool's
        `result_schema` before anything enters history (404 / 409 / 422 naming the problem)."""
        given = body.model_dump(mode="json", exclude_unset=True)
        given.pop("call_id")
        answering = self.run(workflow_id).tool_result(body.call_id, **given)
        return (await http(answering, answered="answered")).model_dump(mode="json")

    async def steer(self, workflow_id: str, body: Steer) -> dict[str, Any]:
        """The `steer` update: where the message went and how many wait for the model."""
        steered = await http(self.run(workflow_id).steer(body.text, by=body.by))
        return {"workflow_id": steered.workflow_id, "queued": steered.queued}

    async def cancel(self, workflow_id: str) -> dict[str, Any]:
        await http(self.run(workflow_id).cancel())
        return {"workflow_id": workflow_id, "cancel_requested": True}
