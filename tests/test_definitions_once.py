"""What a run's definition record costs (issue 37 part 1, issue 36 part 3: cheaper approvals), on
a real dev server with the real workers and the scripted model.

Under the patch `agent-definition-once` (every new run):

- a run holds its definition once in its history: the `record_definition` activity gets the
  run's settings that differ from the defaults (`DefinitionRequest`) and its result is the
  definition, where `agent-definition` sent the whole definition and got it back;
- a run that waited for an approval ends without recording anything: from the approval to its
  end, the tool and the next model call in three workflow tasks, as OpenAI Agents' approval.

A run recorded under `agent-definition` alone (the worker before this change), waiting for an
approval as the new worker takes over, goes on as it recorded: the definition echoed, and the
end record as it ends. The session's records and `agent diff` are in
tests/test_definition_deploys.py; the recorded histories of both shapes replay in
tests/test_replay_histories.py (`definitions`, `definitions_once`, `definitions_approval`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowHandle
from temporalio.common import RawValue
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import PatchActivationInput, Worker

from durable_agents.cli.definitions import record_inputs
from durable_agents.contracts.definition import DefinitionRecord, DefinitionRequest
from durable_agents.runtime.inbound_payloads import worker_client
from durable_agents.runtime.workers import WorkerTuning, engine_workers
from durable_agents.workflows.definitions import DEFINITION_MARKER, DEFINITION_ONCE_MARKER
from tests import scripted_model as sm
from tests.catalog import TEST_CATALOG
from tests.conftest import FAKE_MODEL, ScriptedHarness, started_workers
from tests.hitl_support import wait_for_pending
from tests.scripted_model import ScriptedChatModel

E = EventType
WRITE = {"path": "once.txt", "content": "x", "overwrite": True}


async def record_activities(
    client: Client, events: Sequence[HistoryEvent]
) -> list[tuple[Any, DefinitionRecord]]:
    """Each `record_definition` activity's input (as JSON) and result."""
    scheduled = record_inputs(events)
    found = []
    for event in events:
        done = event.activity_task_completed_event_attributes
        if event.event_type == E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED and (
            done.scheduled_event_id in scheduled
        ):
            given = scheduled[done.scheduled_event_id]
            assert given is not None
            sent, got = await client.data_converter.decode(
                [given, done.result.payloads[0]],
                [RawValue, DefinitionRecord],
            )
            found.append((client.data_converter.payload_converter.from_payload(sent.payload), got))
    return found


def patch_markers(events: Sequence[HistoryEvent]) -> list[str]:
    return [
        json.loads(e.marker_recorded_event_attributes.details["patch-data"].payloads[0].data)["id"]
        for e in events
        if e.event_type == E.EVENT_TYPE_MARKER_RECORDED
        and "patch-data" in e.marker_recorded_event_attributes.details
    ]


def after_the_approval(events: Sequence[HistoryEvent]) -> tuple[list[str], int]:
    """The activities scheduled and the workflow tasks completed from the approval on."""
    signal = next(
        i for i, e in enumerate(events) if e.event_type == E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    )
    rest = events[signal:]
    activities = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in rest
        if e.event_type == E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    return activities, sum(e.event_type == E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED for e in rest)


async def approved_run(
    client: Client, queue: str, model: ScriptedChatModel
) -> WorkflowHandle[Any, Any]:
    """A run that calls `write_file`, waiting for its approval."""
    model.enqueue(sm.tool_calls(sm.call("write_file", WRITE, id="w1")), sm.text("Written."))
    handle = await client.start_workflow(
        "AgentWorkflow",
        {"prompt": "write it", "tools": ["write_file"]},
        id=f"defs-once-{uuid.uuid4()}",
        task_queue=queue,
    )
    await wait_for_pending(handle)
    return handle


async def test_a_run_records_its_definition_once_and_its_approval_records_nothing(
    scripted_agent: ScriptedHarness,
) -> None:
    client = scripted_agent.client
    handle = await approved_run(client, scripted_agent.task_queue, scripted_agent.model)
    await handle.signal("approve", {"call_id": "w1"})
    assert (await handle.result())["answer"] == "Written."
    events = (await handle.fetch_history()).events

    [(sent, started)] = await record_activities(client, events)
    assert DefinitionRequest.model_validate(sent) == DefinitionRequest(
        settings={"tools": ["write_file"]}
    )  # the settings that differ from the defaults: no prompt, no schema, no definition
    assert started.outcome == "started" and started.definition is not None
    assert [tool.name for tool in started.definition.tools] == ["write_file"]
    assert "path" in started.definition.tools[0].parameters["properties"]
    memo = await (await handle.describe()).memo()
    assert (memo["definition"], memo["definition_digest"]) == (started.label, started.current)
    assert patch_markers(events).count(DEFINITION_ONCE_MARKER) == 1
    assert DEFINITION_MARKER not in patch_markers(events)

    # the approval: the tool and the model's answer, in three workflow tasks; no record
    assert after_the_approval(events) == (["write_file", "call_model"], 3)


def answering_as_before(options: dict[str, Any]) -> Any:
    """The worker's patch answers, as a worker from before `agent-definition-once` gave them:
    it did not know that patch, and took `agent-definition`."""
    configured = options["patch_activation_callback"]

    def answer(asked: PatchActivationInput) -> bool:
        if asked.patch_id in (DEFINITION_MARKER, DEFINITION_ONCE_MARKER):
            return asked.patch_id == DEFINITION_MARKER
        return bool(configured(asked))

    return answer


async def test_a_run_recorded_before_goes_on_as_it_recorded(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = temporal_env.client
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    queue = f"defs-before-{uuid.uuid4()}"
    tuning = WorkerTuning(cache_affinity=False)  # (the model call waits for no gone worker)
    engine = engine_workers(
        worker_client(client), task_queue=queue, model=model, catalog=TEST_CATALOG,
        workspace=tmp_path, tuning=tuning,
    )  # fmt: skip
    options = {**engine.options, "patch_activation_callback": answering_as_before(engine.options)}
    async with AsyncExitStack() as stack:  # the worker from before
        await stack.enter_async_context(Worker(
            worker_client(client), task_queue=queue, workflows=engine.workflows,
            activities=engine.activities, **options,
        ))  # fmt: skip
        for other, activities in engine.queues.items():
            await stack.enter_async_context(
                Worker(worker_client(client), task_queue=other, activities=activities, **options)
            )
        handle = await approved_run(client, queue, model)
    async with AsyncExitStack() as stack:  # the new worker takes the waiting run over
        await started_workers(stack, client, model, tmp_path, queue, tuning=tuning)
        await handle.signal("approve", {"call_id": "w1"})
        assert (await handle.result())["answer"] == "Written."
    events = (await handle.fetch_history()).events
    assert patch_markers(events) == [DEFINITION_MARKER]
    (sent, started), (_, ended) = await record_activities(client, events)
    assert DefinitionRecord.model_validate(sent) == started  # the definition echoed, as then
    assert started.definition is not None and started.outcome == "started"
    assert (ended.outcome, ended.previous, ended.current) == ("same", started.current,
                                                             started.current)  # fmt: skip
    # (the new worker lacks the run's context cache: its first model call asks for it whole)
    scheduled = after_the_approval(events)[0]
    assert (scheduled[0], scheduled[-1]) == ("write_file", "record_definition")
