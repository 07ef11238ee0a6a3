"""One evaluation run on the Temporal server: start it, play its scripted people, read it back.

Each run is a real `AgentWorkflow` on the configured server and task queue, with the workflow
id `<eval id>/<scenario>/<model>/<n>` (the eval id is `eval-<UTC time>-<random>`, new for each
`agent eval`, so runs of different evaluations never mix) and the memo keys `eval_id`,
`eval_scenario`, `eval_model`. Find an evaluation's runs with
`temporal workflow list --query 'WorkflowId STARTS_WITH "eval-..."'`.

While the run goes on, `ScriptedPeople` polls the `pending_approvals` query and answers each
new request with the first matching person of the scenario (the `decide` update for approvals,
the `reply` signal for questions; a child run's requests are its parent's too), and counts the
tool steps of the whole run to cancel after N: the `status` query of the run and of each of its
child runs (`run_tree.RunTree`). A request no person answers cancels the run at once (it would
wait forever), and so does a run past its timeout: both are reported, never waited on.

When it has ended, the record is read as a whole: the run and every child run under it (a
plan's goal steps, sub-agents; `whole_run`), each from its result (or, for a cancelled or failed
one, from the `status` query, which a worker still answers) and from its history (every run of
the continue-as-new chain: failed, timed out and retried activities; the run's latency). Its
answer, stop reason, tokens and cost are the run's own (a parent counts its children's tokens).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from durable_agents.cli.evaluation.run_tree import RunTree, history_failures, history_latency
from durable_agents.cli.evaluation.scoring import RunRecord, check, cost_of
from durable_agents.cli.evaluation.sessions import run_session_job
from durable_agents.cli.evaluation.suite import (
    ApprovePerson,
    RejectPerson,
    ReplyPerson,
    Responder,
    Scenario,
    Suite,
)
from durable_agents.cli.evaluation.whole_run import (
    RunPart,
    part_from_result,
    part_from_status,
    whole_run,
)
from durable_agents.client import AgentClient, RunHandle, render
from durable_agents.client.outcome import RunOutcome
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.errors import AgentError

PEOPLE_NAME = "agent-eval"
"""Who the scripted people's decisions are recorded as (`by`)."""
POLL_SECONDS = 0.2
END_GRACE_SECONDS = 15.0
"""How long a run cancelled by the harness may take to end before it is terminated."""


def new_eval_id(now: datetime | None = None) -> str:
    """`eval-20261130T114109Z-3f9a1c`: sortable by time, unique by its random tail."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return f"eval-{stamp}-{secrets.token_hex(3)}"


def model_slug(model: str | None) -> str:
    """A model name as a workflow id segment (`openai/gpt-4o` -> `openai:gpt-4o`)."""
    if model is None:
        return "default"
    return re.sub(r"[^A-Za-z0-9_.:-]", "_", model.replace("/", ":"))


@dataclass(frozen=True)
class Job:
    """One run to make: a scenario with a model, the n-th time."""

    scenario: Scenario
    model: str | None
    repeat: int
    workflow_id: str
    payload: dict[str, Any]
    timeout_seconds: float


def plan_jobs(
    suite: Suite,
    scenarios: Sequence[Scenario],
    models: Sequence[str | None],
    eval_id: str,
    repeat: int | None = None,
) -> list[Job]:
    """Every run of the evaluation: each model, each scenario, each repeat (interleaved so the
    progress bar moves through all models at once)."""
    jobs = []
    for scenario in scenarios:
        times = repeat or scenario.repeat or suite.repeat
        for n in range(1, times + 1):
            for model in models:
                jobs.append(
                    Job(
                        scenario=scenario,
                        model=model,
                        repeat=n,
                        workflow_id=f"{eval_id}/{scenario.name}/{model_slug(model)}/{n}",
                        payload=suite.payload(scenario, model),
                        timeout_seconds=scenario.timeout_seconds or suite.timeout_seconds,
                    )
                )
    return jobs


# -- the scripted people -----------------------------------------------------------------------


def _matches(person: Responder, request: PendingRequest) -> bool:
    kind = RequestKind.QUESTION if isinstance(person, ReplyPerson) else RequestKind.APPROVAL
    return request.kind.decided_by is kind and person.tool in (None, request.tool)


@dataclass
class ScriptedPeople:
    """The scenario's people, answering one run until it ends (cancel the task to stop)."""

    handle: RunHandle
    scenario: Scenario
    poll_seconds: float = POLL_SECONDS
    count_steps: Callable[[], Awaitable[int | None]] | None = None
    """The tool steps so far, for a cancel after N steps (default: the handle's `status`; a
    run's: its `RunTree`'s, its child runs' steps included)."""
    actions: list[str] = field(default_factory=list)
    error: str | None = None
    _answered: set[str] = field(default_factory=set)
    _uses: dict[int, int] = field(default_factory=dict)
    _cancelled: bool = False

    async def run(self) -> None:
        cancel = self.scenario.cancel
        while True:
            if cancel is not None and not self._cancelled:
                done = await self._steps()
                if done is not None and done >= cancel.after_steps:
                    steps = f"{done} tool step{'s' if done != 1 else ''}"
                    await self._cancel(f"cancelled after {steps}")
            if not self._cancelled:
                for request in await self._pending():
                    if request.call_id not in self._answered:
                        await self._answer(request, waiting_to_cancel=cancel is not None)
            await asyncio.sleep(self.poll_seconds)

    def _person_for(self, request: PendingRequest) -> Responder | None:
        for index, person in enumerate(self.scenario.responders):
            used = self._uses.get(index, 0)
            if _matches(person, request) and (person.times is None or used < person.times):
                self._uses[index] = used + 1
                return person
        return None

    async def _answer(self, request: PendingRequest, *, waiting_to_cancel: bool) -> None:
        person = self._person_for(request)
        what = f"{request.tool} ({request.call_id})"
        if person is None:
            if waiting_to_cancel:
                return  # the person who cancels is still waiting for their moment
            self._answered.add(request.call_id)
            waits = "a reply" if request.kind is RequestKind.QUESTION else "approval"
            self.error = (
                f"{request.tool} waited for {waits} and no scripted person answers it "
                "(agent eval cancelled the run)"
            )
            await self._cancel(None)
            return
        self._answered.add(request.call_id)
        try:
            if isinstance(person, ReplyPerson):
                await self.handle.reply(request.call_id, person.text, by=PEOPLE_NAME)
                self.actions.append(f"replied to {what}: {person.text}")
            elif isinstance(person, RejectPerson):
                await self.handle.reject(request.call_id, reason=person.reason, by=PEOPLE_NAME)
                self.actions.append(f"rejected {what}: {person.reason}")
            else:
                assert isinstance(person, ApprovePerson)
                await self.handle.approve(
                    request.call_id, digest=request.args_digest, edit=person.args,
                    comment=person.comment, by=PEOPLE_NAME,
                )  # fmt: skip
                self.actions.append(f"approved {what}")
        except AgentError as error:
            self.actions.append(f"could not answer {what}: {error}")

    async def _cancel(self, action: str | None) -> None:
        self._cancelled = True
        with contextlib.suppress(AgentError):
            await self.handle.cancel()
            if action:
                self.actions.append(action)

    async def _steps(self) -> int | None:
        if self.count_steps is not None:
            return await self.count_steps()
        status = await self.handle.query_status()
        return status.steps if status is not None else None

    async def _pending(self) -> list[PendingRequest]:
        try:
            return await self.handle.pending()
        except AgentError:
            return []


# -- reading a run back ------------------------------------------------------------------------


def _from_result(result: AgentResult, suite: Suite) -> dict[str, Any]:
    """The run's own ending, as its result says (its steps are its `RunPart`)."""
    cost = result.cost_usd
    if cost is None:
        cost = cost_of(result.model_calls, result.usage, result.model, suite.prices)
    return {
        "stop_reason": result.stop_reason,
        "answer": result.answer,
        "output": result.output,
        "answered_by": result.model,
        "usage": result.usage,
        "cost_usd": cost,
    }


def _from_status(status: AgentStatus, suite: Suite) -> dict[str, Any]:
    """A run without a result: what its last `status` says."""
    return {
        "stop_reason": status.stop_reason,
        "answered_by": status.model,
        "usage": status.usage,
        "cost_usd": cost_of([], status.usage, status.model, suite.prices),
    }


def _details(job: Job, eval_id: str) -> str:
    prompt = render.shorten(job.scenario.prompt, 1000, one_line=False)
    expect = job.scenario.expect.model_dump(exclude_unset=True, mode="json") or "completed"
    return (
        f"**Prompt**\n\n{prompt}\n\nScenario `{job.scenario.name}` of evaluation `{eval_id}`, "
        f"run {job.repeat}, model {job.model or 'worker default'}.\n\nExpected: `{expect}`\n\n"
        "Started by `agent eval`."
    )


async def _await_end(run: RunHandle, timeout: float) -> RunOutcome | None:
    try:
        return await asyncio.wait_for(run.outcome(), timeout)
    except TimeoutError:
        return None


async def run_job(
    agents: AgentClient,
    job: Job,
    *,
    suite: Suite,
    eval_id: str,
    task_queue: str,
    poll_seconds: float = POLL_SECONDS,
) -> RunRecord:
    """Make one run to its end and return its scored record (never raises for the run's
    sake: a run that could not start or end is a record with an `error`)."""
    base: dict[str, Any] = {
        "scenario": job.scenario.name,
        "tags": job.scenario.tags,
        "model": job.model,
        "label": job.model or model_slug(None),
        "repeat": job.repeat,
        "workflow_id": job.workflow_id,
    }
    if job.scenario.session is not None:
        return await run_session_job(
            agents, job, suite=suite, task_queue=task_queue, base=base, poll_seconds=poll_seconds
        )
    try:
        run = await agents.start_input(
            job.payload,
            id=job.workflow_id,
            task_queue=task_queue,
            memo={
                "eval_id": eval_id,
                "eval_scenario": job.scenario.name,
                "eval_model": job.model or "(worker default)",
            },
            summary=f"agent eval {eval_id} · {job.scenario.name} · "
            f"{job.model or 'default model'} #{job.repeat}",
            details=_details(job, eval_id),
        )
    except AgentError as refused:
        record = RunRecord(**base, ending="failed", error=f"could not start: {refused}")
        return record.model_copy(update={"problems": check(job.scenario.expect, record)})
    tree = RunTree(agents, run)
    people = ScriptedPeople(run, job.scenario, poll_seconds, count_steps=tree.steps_so_far)
    playing = asyncio.create_task(people.run())
    error: str | None = None
    try:
        outcome = await _await_end(run, job.timeout_seconds)
        if outcome is None:
            error = f"no end within {job.timeout_seconds:g} s (agent eval cancelled the run)"
            with contextlib.suppress(AgentError):
                await run.cancel()
            outcome = await _await_end(run, END_GRACE_SECONDS)
        if outcome is None:
            with contextlib.suppress(AgentError):
                await run.terminate("agent eval: the run did not end after it was cancelled")
            outcome = await run.outcome()
    finally:
        playing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await playing
    assert outcome is not None
    return await _record(tree, outcome, job, suite, base, people, error)


async def _record(
    tree: RunTree,
    outcome: RunOutcome,
    job: Job,
    suite: Suite,
    base: dict[str, Any],
    people: ScriptedPeople,
    error: str | None,
) -> RunRecord:
    """The ended run's record, read as a whole (its child runs included), and its verdict."""
    run = tree.root
    events = await run.history_events()
    failed, retried = history_failures(events)
    read: dict[str, Any] = {}
    own = RunPart(workflow_id=run.id, activity_failures=failed, activity_retries=retried)
    if outcome.result is not None:
        read = _from_result(outcome.result, suite)
        own = part_from_result(run.id, outcome.result, failed, retried)
    elif (status := await run.query_status()) is not None:
        read = _from_status(status, suite)
        own = part_from_status(run.id, status, failed, retried)
    try:
        parts = [own, *await tree.parts_below(events)]
    except AgentError as unread:
        parts, error = [own], error or f"could not read its child runs: {unread}"
    whole = whole_run(parts)
    failure = None
    if outcome.result is None and outcome.ending not in ("cancelled",):
        failure = f"{outcome.error_type}: {outcome.message}"
    record = RunRecord(
        **base,
        run_id=run.run_id,
        ending=outcome.ending,
        failure=failure,
        latency_seconds=history_latency(events),
        steps=whole.steps,
        turns=whole.turns,
        tools=whole.tools,
        new_calls=whole.new_calls,
        failures=whole.failures,
        people=people.actions,
        error=error or people.error,
        **read,
    )
    return record.model_copy(update={"problems": check(job.scenario.expect, record)})


async def run_all(
    jobs: Sequence[Job],
    run: Callable[[Job], Awaitable[RunRecord]],
    concurrency: int,
    on_done: Callable[[RunRecord], None],
) -> list[RunRecord]:
    """Every job, at most `concurrency` at once; records in the jobs' order."""
    gate = asyncio.Semaphore(concurrency)

    async def one(job: Job) -> RunRecord:
        async with gate:
            record = await run(job)
        on_done(record)
        return record

    return list(await asyncio.gather(*(one(job) for job in jobs)))
