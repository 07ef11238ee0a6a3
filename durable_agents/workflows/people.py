"""What people send to a running agent, defined once: `PeopleHandlers` registers the signals,
updates and the `pending_approvals` query on every workflow that hosts an agent loop
(`AgentWorkflow`, `SessionWorkflow`), and hands each to the workflow's `people`, a `People`.

Signals `approve`, `reject`, `reply` and the update `decide` answer calls waiting for a person,
the update `tool_result` a call of a client-side tool;
`edit_plan` replaces a plan waiting for approval; `steer` (signal or update) adds a message for
the model's next call; `child_pending` is a sub-agent reporting its own pending calls. Each
takes its payload raw (`workflows.refusals`): a signal that cannot apply is logged and ignored,
an update that cannot apply is refused by its validator, so nothing enters history. The
updates are async: a session hands them to its child turn through an activity
(`SessionPeople`); a run's own loop answers them at once, with no await, as a plain handler
would (the same commands, so recorded runs replay unchanged).

Adding a handler people use is one edit here (and its method in `People`'s implementations:
`AgentLoop`, and the session's `SessionPeople`, which hands it to the running turn).
"""

from __future__ import annotations

from typing import Any, Protocol

from temporalio import workflow
from temporalio.common import RawValue

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.agents import CHILD_PENDING_SIGNAL
    from durable_agents.contracts.approvals import HumanDecision, PendingRequest
    from durable_agents.contracts.client_tools import CLIENT_TOOL_RESULT_UPDATE
    from durable_agents.loop.pasted_commands import aimed_requests
    from durable_agents.workflows.refusals import NO_INPUT
    from durable_agents.workflows.worker_catalog import worker_catalog


class People(Protocol):
    """Where a hosting workflow's people-facing handlers land."""

    async def approve(self, raw: Any) -> None: ...

    async def reject(self, raw: Any) -> None: ...

    async def reply(self, raw: Any) -> None: ...

    async def child_pending(self, raw: Any) -> None: ...

    async def steer_signal(self, raw: Any) -> None: ...

    async def decide(self, raw: Any) -> HumanDecision: ...

    def validate_decide(self, raw: Any) -> None: ...

    async def tool_result(self, raw: Any) -> HumanDecision: ...

    def validate_tool_result(self, raw: Any) -> None: ...

    async def edit_plan(self, raw: Any) -> HumanDecision: ...

    def validate_edit_plan(self, raw: Any) -> None: ...

    async def steer(self, raw: Any) -> Any: ...

    def validate_steer(self, raw: Any) -> None: ...

    def pending(self) -> list[PendingRequest]: ...


class PeopleHandlers:
    """The handlers people use, for a workflow whose `people` says where they land."""

    people: People

    @workflow.signal(name="approve")
    async def approve(self, raw: RawValue = NO_INPUT) -> None:
        """`{"call_id": "..."|"*", "args"?: {...}, "args_digest"?, "by"?, "comment"?}`"""
        await self.people.approve(raw)

    @workflow.signal(name="reject")
    async def reject(self, raw: RawValue = NO_INPUT) -> None:
        """`{"call_id": "..."|"*", "reason"?: "...", "by"?: "..."}`"""
        await self.people.reject(raw)

    @workflow.signal(name="reply")
    async def reply(self, raw: RawValue = NO_INPUT) -> None:
        """`{"call_id": "..."|"*", "text": "...", "by"?: "..."}` answers an `ask_user` question."""
        await self.people.reply(raw)

    @workflow.signal(name=CHILD_PENDING_SIGNAL)
    async def child_pending(self, raw: RawValue = NO_INPUT) -> None:
        """From a sub-agent: its calls waiting for a person, shown and answered here."""
        await self.people.child_pending(raw)

    @workflow.signal(name="steer")
    async def steer_signal(self, raw: RawValue = NO_INPUT) -> None:
        """`{"text": "...", "by"?: "..."}`: a message the model sees at its next call."""
        await self.people.steer_signal(raw)

    @workflow.update(name="decide")
    async def decide(self, raw: RawValue = NO_INPUT) -> HumanDecision:
        """`{"call_id", "decision": "approve"|"reject", "args"?, "reason"?, "by"?, "comment"?}`;
        returns the recorded decision."""
        return await self.people.decide(raw)

    @decide.validator
    def validate_decide(self, raw: RawValue = NO_INPUT) -> None:
        """Refuse before anything enters history: unknown/decided ids, bad edited args, ..."""
        self.people.validate_decide(raw)

    @workflow.update(name=CLIENT_TOOL_RESULT_UPDATE)
    async def tool_result(self, raw: RawValue = NO_INPUT) -> HumanDecision:
        """`{"call_id", "result"}` or `{"call_id", "error"}`: the answer to a client tool call
        (`client_tools`); returns the recorded answer."""
        return await self.people.tool_result(raw)

    @tool_result.validator
    def validate_tool_result(self, raw: RawValue = NO_INPUT) -> None:
        """Refuse before anything enters history: unknown or answered call ids, a result that
        breaks the tool's result_schema, ..."""
        self.people.validate_tool_result(raw)

    @workflow.update(name="edit_plan")
    async def edit_plan(self, raw: RawValue = NO_INPUT) -> HumanDecision:
        """`{"steps": [{"goal": "...", "tools"?: [...]}], "by"?}`: replace the plan waiting for
        approval and approve it."""
        return await self.people.edit_plan(raw)

    @edit_plan.validator
    def validate_edit_plan(self, raw: RawValue = NO_INPUT) -> None:
        self.people.validate_edit_plan(raw)

    @workflow.update(name="steer")
    async def steer(self, raw: RawValue = NO_INPUT) -> Any:
        """Like the signal, but refused when it cannot apply."""
        return await self.people.steer(raw)

    @steer.validator
    def validate_steer(self, raw: RawValue = NO_INPUT) -> None:
        self.people.validate_steer(raw)

    @workflow.query(name="pending_approvals")
    def pending_approvals(self) -> list[PendingRequest]:
        """Calls waiting for a person, each with the CLI command that answers it (naming the
        worker's server when it is not the CLI's default: `loop.pasted_commands`)."""
        return aimed_requests(self.people.pending(), worker_catalog().command_server)
