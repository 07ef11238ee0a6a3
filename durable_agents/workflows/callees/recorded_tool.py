"""`RecordedTool`: a callee whose calls are answered from recorded outputs
(`AgentSettings.tool_fixtures`, what `agent eval --from-runs` replays) instead of running.

It wraps the callee the run would have called, so the model is told the same schema and the
same approval rules apply (the run's policy, the tool's definition, its precheck): a call that
waited for a person in the recorded run waits again, for the evaluation's scripted people. Only
the run itself is replaced: no activity, child run, MCP request or client round trip. Tools
that ask the user a question are left as they are (the scripted people answer them).
"""

from __future__ import annotations

from collections.abc import Sequence

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.agent_result import StepStatus
    from durable_agents.contracts.model_io import ToolSchema
    from durable_agents.contracts.tool_fixtures import ToolFixture
    from durable_agents.loop.tool_fixtures import FixtureBook
    from durable_agents.loop.tool_requests import ArgsSchema
    from durable_agents.tools.definition import Tool, ToolOptions
    from durable_agents.workflows.callees.protocol import CallContext, Callee, CallResult


class RecordedTool:
    """A `Callee` answering `inner`'s calls from the run's recorded outputs."""

    def __init__(self, inner: Callee, book: FixtureBook) -> None:
        self._inner = inner
        self._book = book

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def options(self) -> ToolOptions:
        return self._inner.options

    @property
    def args_schema(self) -> ArgsSchema:
        return self._inner.args_schema

    @property
    def definition(self) -> Tool | None:
        return self._inner.definition

    @property
    def asks_user(self) -> bool:
        return self._inner.asks_user

    def schema(self) -> ToolSchema:
        return self._inner.schema()

    async def invoke(self, context: CallContext) -> CallResult:
        answer = self._book.answer(self.name, context.args)
        status: StepStatus = "ok" if answer.status == "ok" else "error"
        return CallResult(answer.observation, status)


def recorded_callees(callees: list[Callee], fixtures: Sequence[ToolFixture] | None) -> list[Callee]:
    """`callees` as they are (no fixtures), or each answered from `fixtures` (one book for the
    run, so identical calls take the recorded outputs in order); questions stay."""
    if fixtures is None:
        return callees
    book = FixtureBook(fixtures)
    return [c if c.asks_user else RecordedTool(c, book) for c in callees]
