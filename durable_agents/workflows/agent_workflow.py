"""`AgentWorkflow`: the tool-calling loop as a deterministic Temporal workflow.

A small shell: the loop is `AgentLoop` (`workflows/agent_loop.py`), hosted as a run of its own
(`RunHost`: links confirmed against Temporal, the run's memo and current details, pending calls
told to a session or parent by signal, continue-as-new). What people send it is registered by
`PeopleHandlers`; the `status` query is the run's own. Its event stream (`RunEvents` on a
`WorkflowStream`, carried across continue-as-new) is built here, before any handler runs.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.contrib.workflow_streams import WorkflowStream

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.agent_result import AgentResult
    from durable_agents.contracts.agent_status import AgentStatus
    from durable_agents.workflows.agent_loop import AgentLoop
    from durable_agents.workflows.input_guard import one_payload
    from durable_agents.workflows.people import PeopleHandlers
    from durable_agents.workflows.refusals import NO_INPUT
    from durable_agents.workflows.run_events import RunEvents, carried_stream_state
    from durable_agents.workflows.run_host import RunHost


@workflow.defn(name="AgentWorkflow")
class AgentWorkflow(PeopleHandlers):
    """Runs one agent task to an answer. Input: `AgentInput` as JSON; result: `AgentResult`."""

    @workflow.init
    @one_payload
    def __init__(self, raw_input: RawValue = NO_INPUT, *extra: RawValue) -> None:
        self.stream = WorkflowStream(prior_state=carried_stream_state(raw_input))
        self.events = RunEvents(self.stream)
        self.loop = AgentLoop(RunHost(self.events), self.events)
        self.people = self.loop

    @workflow.run
    @one_payload
    async def run(self, raw_input: RawValue = NO_INPUT, *extra: RawValue) -> AgentResult:
        # The input arrives raw on purpose: if the SDK decoded it into AgentInput, bad CLI JSON
        # (or none at all) would fail the workflow *task* and retry forever; here it fails the
        # run at once, naming the problem.
        try:
            result = await self.loop.run_input(raw_input)
        except BaseException:
            # A failed or cancelled run closes as it is; its subscribers read the rest of the
            # stream by query (continue-as-new detached them already).
            self.events.detach()
            raise
        await self.events.close()  # subscribers released, every handler finished
        return result

    @workflow.query(name="status")
    def status(self) -> AgentStatus:
        """Where the run is: phase, iteration, usage, pending requests, recent steps."""
        return self.loop.status()
