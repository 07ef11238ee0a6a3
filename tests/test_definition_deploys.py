"""A deploy while runs wait (issue 37 part 1), on a real dev server with real workers.

Worker A serves the agent `support` version 1 (its prompt, a `lookup` tool that needs approval).
A one-shot run waits for approval of a `lookup` call and a session answers its first turn; then
worker A stops and worker B starts, serving version 2 (another prompt, a `lookup` with another
schema; `on_new_definition` left at `keep`):

- the waiting run finishes on version 1: the model is told version 1's tool schema after the
  approval, and its history holds the definition it started with (once: a one-shot run has no
  turn boundary, so it records nothing as it ends);
- the session's next turn keeps version 1 and records `kept` (the worker's digest and label);
- worker C (version 3, `on_new_definition: migrate_at_turn`) replaces B: the session's next turn
  migrates, records `migrated` from version 1's digest to version 3's, and the model is told
  version 3's prompt and schema.

The runs' histories then replay on version 3's workers, and `agent diff` (the CLI in a
subprocess, then in this process) shows what changed between the run's definition and the
session's.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from durable_agents.agent import Agent
from durable_agents.cli.commands import Context
from durable_agents.cli.definitions import record_payloads
from durable_agents.cli.errors import CLI_ERROR, CliError
from durable_agents.cli.main import build_parser
from durable_agents.client.connection import Target
from durable_agents.contracts.definition import DefinitionRecord
from durable_agents.contracts.model_io import ModelRequest
from durable_agents.errors import AgentError
from durable_agents.plugin import with_agents
from durable_agents.runtime import search_attributes
from durable_agents.runtime.settings import EnvironmentSettings
from durable_agents.tools.catalog import Catalog
from durable_agents.workflows.search_attributes import AGENT_DEFINITION, AGENT_DEFINITION_DIGEST
from tests import scripted_model as sm
from tests.catalog import TEST_CATALOG
from tests.conftest import FAKE_MODEL, started_workers
from tests.hitl_support import wait_for_pending
from tests.replaying import assert_replays
from tests.scripted_model import ScriptedChatModel
from tests.session_support import send_with_start
from tests.test_cli_run import AgentCli, Done

PROMPTS = {
    "1": "You answer questions about orders.",
    "2": "You answer questions about orders, briefly.",
    "3": "You answer questions about orders and refunds.",
}


def support(version: str, **settings: Any) -> Agent[None]:
    """The agent `support` as deploy `version` defines it: from version 2 on, `lookup` takes
    a `detail` flag too."""
    agent: Agent[None] = Agent(
        "support", instructions=PROMPTS[version], version=version, **settings
    )
    if version == "1":

        @agent.tool(name="lookup", requires_approval=True)
        async def lookup(order: str) -> str:
            """Look an order up.

            Args:
                order: The order's id.
            """
            return f"order {order}: shipped"

    else:

        @agent.tool(name="lookup", requires_approval=True)
        async def lookup_detailed(order: str, detail: bool = False) -> str:
            """Look an order up.

            Args:
                order: The order's id.
                detail: Whether to say more.
            """
            return f"order {order}: shipped" + (" on Monday" if detail else "")

    return agent


def catalog_of(agent: Agent[None]) -> Catalog:
    return with_agents(TEST_CATALOG, [agent]).with_search_attributes()


V1, V2 = support("1"), support("2")
V3 = support("3", on_new_definition="migrate_at_turn")


async def records(client: Client, handle: WorkflowHandle[Any, Any]) -> list[DefinitionRecord]:
    """What the run recorded about its definition (the `record_definition` results)."""
    payloads = record_payloads((await handle.fetch_history()).events)
    decoded = await client.data_converter.decode(payloads, [DefinitionRecord] * len(payloads))
    return [r for r in decoded if isinstance(r, DefinitionRecord)]


def told(request: ModelRequest) -> tuple[str | None, dict[str, Any]]:
    """The system prompt and `lookup`'s parameter names a model call was given."""
    schemas = {tool.name: tool.parameters for tool in request.tools}
    return request.messages[0].content, schemas["lookup"]["properties"]


async def serving(
    stack: AsyncExitStack, client: Client, model: ScriptedChatModel, tmp: Path, queue: str,
    agent: Agent[None],
) -> None:  # fmt: skip
    await started_workers(stack, client, model, tmp, queue, catalog=catalog_of(agent))


async def test_runs_waiting_across_deploys_keep_then_migrate_and_replay(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = temporal_env.client
    assert await search_attributes.ensure(client)
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    queue = f"defs-{uuid.uuid4()}"
    session_id = f"defs-session-{uuid.uuid4()}"
    session_input = {"agent": V1.input("x").settings().model_dump(mode="json")}
    send: Callable[[str], Any] = lambda text: send_with_start(  # noqa: E731
        client, session_id, queue, text, session_input
    )

    async with AsyncExitStack() as stack:  # deploy A: version 1
        await serving(stack, client, model, tmp_path, queue, V1)
        model.enqueue(sm.tool_calls(sm.call("lookup", {"order": "7"}, id="l1")))
        run = await client.start_workflow(
            "AgentWorkflow",
            V1.input("Where is order 7?").model_dump(mode="json", exclude_unset=True),
            id=f"defs-run-{uuid.uuid4()}",
            task_queue=queue,
        )
        await wait_for_pending(run)
        model.enqueue(sm.text("Hello."))
        first, session = await send("hi")
        assert first.answer == "Hello."
    [started] = await records(client, run)
    assert (started.outcome, started.label) == ("started", "support@1")
    v1_digest = started.current
    found = (await run.describe()).typed_search_attributes
    assert (found.get(AGENT_DEFINITION), found.get(AGENT_DEFINITION_DIGEST)) == (
        "support@1", v1_digest,
    )  # fmt: skip
    listed = [w.id async for w in client.list_workflows('AgentDefinition="support@1"')]
    assert run.id in listed

    async with AsyncExitStack() as stack:  # deploy B: version 2, keep
        await serving(stack, client, model, tmp_path, queue, V2)
        model.enqueue(sm.text("Order 7 has shipped."))
        await run.signal("approve", {"call_id": "l1"})
        assert (await run.result())["answer"] == "Order 7 has shipped."
        assert told(model.last_request) == (PROMPTS["1"], {"order": {"type": "string",
            "description": "The order's id.", "title": "Order"}})  # fmt: skip
        model.enqueue(sm.text("Still here."))
        assert (await send("still there?"))[0].answer == "Still here."
        assert told(model.last_request)[0] == PROMPTS["1"]
        assert set(told(model.last_request)[1]) == {"order"}

    async with AsyncExitStack() as stack:  # deploy C: version 3, migrate_at_turn
        await serving(stack, client, model, tmp_path, queue, V3)
        model.enqueue(sm.text("Refunds too."))
        assert (await send("and refunds?"))[0].answer == "Refunds too."
        assert told(model.last_request)[0] == PROMPTS["3"]
        assert set(told(model.last_request)[1]) == {"order", "detail"}

    # (a one-shot run has no turn boundary: it records the definition it started with, once,
    # and nothing as it ends, `agent-definition-once`; tests/test_definitions_once.py)
    run_records = [(r.outcome, r.label, r.previous) for r in await records(client, run)]
    assert run_records == [("started", "support@1", None)]
    session_records = await records(client, session)
    assert [(r.outcome, r.turn, r.label) for r in session_records] == [
        ("started", None, "support@1"),
        ("kept", 2, "support@2"),
        ("migrated", 3, "support@3"),
    ]
    kept, migrated = session_records[1:]
    assert (kept.previous, migrated.previous) == (v1_digest, v1_digest)
    assert migrated.definition is not None and migrated.current == migrated.definition.digest
    found = (await session.describe()).typed_search_attributes
    assert found.get(AGENT_DEFINITION) == "support@3"

    for handle in (run, session):  # the old runs replay after the definition changed
        await assert_replays(await handle.fetch_history(), catalog_of(V3))

    cli = AgentCli(client.service_client.config.target_host, queue)
    shown = await cli("diff", run.id, session.id)  # the real CLI, once (seconds of start-up)
    assert shown.code == 0, shown.err
    assert shown.out.startswith("definitions: support@1 (")
    assert "tool changed: lookup" in shown.out and f"  +{PROMPTS['3']}" in shown.out
    done = await agent_diff(cli, run.id, session.id, "--json")
    assert done.code == 0, done.err
    diff = json.loads(done.out)
    assert (diff["a"], diff["b"], diff["same"]) == ("support@1", "support@3", False)
    assert f"+{PROMPTS['3']}" in diff["prompt_diff"]
    assert [t["name"] for t in diff["tools_changed"]] == ["lookup"]
    assert diff["on_new_definition"] == {"before": "keep", "after": "migrate_at_turn"}
    same = await agent_diff(cli, run.id, run.id)
    assert same.out.startswith("same definition: support@1"), same.out
    missing = await agent_diff(cli, run.id, "no-such-run")
    assert missing.code == 4 and "no-such-run" in missing.err, missing.err


async def agent_diff(cli: AgentCli, *argv: str) -> Done:
    """`agent diff ...` in this process: its exit code, stdout and stderr."""
    args = build_parser().parse_args(
        ["--address", cli.address, "--task-queue", cli.task_queue, "diff", *argv]
    )
    target = Target.resolve(
        EnvironmentSettings.from_env(), args.address, args.namespace, args.task_queue
    )
    out, err = io.StringIO(), io.StringIO()
    try:
        code = await args.handler(args, Context(target, json=args.json, out=out, err=err))
    except (CliError, AgentError) as error:
        code = CLI_ERROR
        err.write(f"agent: {error}\n")
    return Done(code, out.getvalue(), err.getvalue())
