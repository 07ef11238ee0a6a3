"""The systems `bench.peers` compares: ours and each peer (with the levers ours uses that the
peer can switch on, as a variant), how each one's worker process starts, how a run starts on it,
and how a waiting run is approved.

A peer's worker runs in the peer's own venv (`bench/peers/.venvs/<venv>/bin/python`), started
through `bench.harness.spawn` like ours, so `Proc` measures its CPU and RSS the same way.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.client import Client, WithStartWorkflowOperation, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy

from bench.harness import Bench, Proc, spawn
from bench.peers.workers.common import model_env
from bench.speed import Side

VENVS = Path(__file__).resolve().parent / ".venvs"
ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class System:
    name: str
    """How tables name it: `ours`, a peer, or a peer `+lever`."""
    venv: str | None = None
    """The peer's venv under `bench/peers/.venvs/` (None: ours, in the project's venv)."""
    module: str = ""
    """Its worker module (`bench.peers.workers.*`)."""
    variant: str = "docs"
    workflow: str = "AgentWorkflow"
    workflows: tuple[tuple[str, str], ...] = ()
    """Pydantic AI: the workflow type of each tool set (one agent per workflow module)."""
    calculator: str = "calculator"
    """Pydantic AI: the tool set the calculator runs use (`calculator+wf`: in the workflow)."""
    config: str = ""
    """What BENCHMARKS.md says it is configured with."""
    settings: tuple[tuple[str, Any], ...] = ()
    """Ours: run settings every run of it adds to its input (`model_call: local`)."""

    @property
    def peer(self) -> bool:
        return self.venv is not None

    @property
    def harness(self) -> bool:
        return self.workflow == "HarnessPeer"

    def python(self) -> str:
        return str(VENVS / str(self.venv) / "bin" / "python")

    def worker(self, bench: Bench, model_url: str | None = None) -> tuple[Proc, str]:
        """A fresh worker process of this system on a fresh task queue; `model_url`: another
        model server than the bench's fake one (the prompt cache's metering proxy)."""
        if not self.peer:
            return bench.worker("ours", model_url=model_url)
        queue = f"bench-{self.venv}-{uuid.uuid4().hex[:8]}"
        args = ["--address", bench.address, "--task-queue", queue, "--variant", self.variant]
        proc = spawn(
            self.module,
            *args,
            timeout=120.0,
            cwd=str(ROOT),
            env=model_env(model_url or bench.model.detail),
            python=self.python(),
        )
        bench.procs.append(proc)
        return proc, queue

    def side(self, proc: Proc, queue: str) -> Side:
        """This system as `bench.speed` runs it: 20-turn calculator runs, 3-turn bursts."""

        async def start(client: Client, turns: int, workflow_id: str) -> Any:
            return await self.start(
                client, queue, calc_prompt(turns), ["calculator"], turns + 1, workflow_id
            )

        return Side(self.name, proc, queue, start=start)

    async def start(
        self,
        client: Client,
        queue: str,
        prompt: str,
        tools: list[str],
        max_turns: int,
        workflow_id: str,
        close: bool = True,
        message: str = "ask",
    ) -> WorkflowHandle[Any, Any]:
        """Start one run of `prompt` with `tools` and at most `max_turns` model calls. The
        harness: a session whose first message (`ask`, or `chat` for a conversation) is the
        run; `close`: closed at once (the harness drains it: it completes when the turn ends),
        else closed once approved (closing denies pending approvals) or by the caller."""
        if not self.peer:
            payload = {
                "prompt": prompt,
                "tools": tools,
                "max_iterations": max_turns,
                **dict(self.settings),
            }
            return await client.start_workflow(
                self.workflow, payload, id=workflow_id, task_queue=queue
            )
        params: dict[str, Any] = {"prompt": prompt, "tools": tools, "max_turns": max_turns}
        if not self.harness:
            key = self.calculator if tools == ["calculator"] else tools[0]
            workflow = dict(self.workflows).get(key, self.workflow)
            return await client.start_workflow(workflow, params, id=workflow_id, task_queue=queue)
        start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
            self.workflow,
            {},
            id=workflow_id,
            task_queue=queue,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
        )
        await client.execute_update_with_start_workflow(
            "send_agent_message",
            {"type": message, "payload": params},
            start_workflow_operation=start,
        )
        handle = await start.workflow_handle()
        if close:
            await handle.signal("close")
        return handle

    async def approve(self, handle: WorkflowHandle[Any, Any]) -> None:
        """Approve every pending call of a waiting run, the way this system takes approvals
        (the harness: a `tool_approval` update per call, then `close`, which it drains)."""
        if not self.harness:
            await handle.signal("approve", {"call_id": "*"} if not self.peer else "*")
            return
        status = await handle.query("agent_status")
        for pending in status["pending_approvals"]:
            await handle.execute_update(
                "tool_approval", {"tool_id": pending["tool_id"], "approved": True}
            )
        await handle.signal("close")

    @property
    def approval_names(self) -> tuple[str, ...]:
        return ("tool_approval",) if self.harness else ("approve",)


def calc_prompt(turns: int) -> str:
    from bench.speed import calc_prompt as prompt

    return prompt(turns)


OA_DOC = "https://github.com/temporalio/ai-integrations/tree/main/python/openai_agents"
PAI_DOC = "https://ai.pydantic.dev/temporal"
HARNESS_DOC = "https://github.com/temporal-community/temporal-agent-harness (0.8.0 README)"

PAI_WORKFLOWS = (
    ("calculator", "PydanticAICalc"),
    ("calculator+wf", "PydanticAICalcWf"),
    ("fixed_output", "PydanticAIFixed"),
    ("write_file", "PydanticAIApprove"),
)
"""Which Pydantic AI workflow (`bench.peers.workers.pai_workflows`) runs a tool set."""

OURS = System(
    "ours",
    config="`make bench`'s worker (`bench.worker_proc --kind ours`): `build_workers`, default "
    "`WorkerTuning` (sandbox with the project's modules passed through, calculator a local "
    "activity, model calls streamed), with cache affinity off as docs/fleet.md recommends for "
    "a dev server with one worker",
)
OURS_LOCAL = System(
    "ours +local model",
    settings=(("model_call", "local"),),
    config="as ours, with `model_call: local`: each model call a local activity in the worker "
    "running the run (docs/how-to/real-models.md, 'Model calls as local activities')",
)
OA = System(
    "openai-agents",
    venv="openai_agents",
    module="bench.peers.workers.oa_worker",
    workflow="OpenAIAgentsPeer",
    config=f"`OpenAIAgentsPlugin(model_params=ModelActivityParameters(...))`, calculator a "
    f"`@function_tool` in the workflow, other tools `activity_as_tool` ({OA_DOC})",
)
OA_LEVERS = System(
    "openai-agents +local model +passthrough",
    venv="openai_agents",
    module="bench.peers.workers.oa_worker",
    variant="la+pt",
    workflow="OpenAIAgentsPeer",
    config="as above, `use_local_activity=True`, bench modules passed through the sandbox",
)
PAI = System(
    "pydantic-ai",
    venv="pydantic_ai",
    module="bench.peers.workers.pai_worker",
    workflows=PAI_WORKFLOWS,
    config=f"`Agent(..., capabilities=[TemporalDurability(...)])`, `PydanticAIPlugin()`, every "
    f"tool an activity ({PAI_DOC})",
)
PAI_LEVERS = System(
    "pydantic-ai +calculator in workflow +passthrough",
    venv="pydantic_ai",
    module="bench.peers.workers.pai_worker",
    variant="wf+pt",
    workflows=PAI_WORKFLOWS,
    calculator="calculator+wf",
    config="as above, calculator `metadata={'temporal': False}`, bench modules passed through",
)
HARNESS = System(
    "agent-harness",
    venv="harness",
    module="bench.peers.workers.harness_worker",
    workflow="HarnessPeer",
    config=f"`@agent.defn` + `AgentWorkflowRunner`, OpenAI Agents via its vendored plugin with "
    f"the streaming seam, `AgentHarnessPlugin(tools=...)` ({HARNESS_DOC})",
)
BASE = [OURS, OA, PAI, HARNESS]
"""The systems of every workload."""
OURS_MODES = [OURS_LOCAL]
"""Ours in its other modes: measured in the timing workloads 1 and 2, beside the peers' levers."""
LEVERS = [OA_LEVERS, PAI_LEVERS]
"""Peers with ours' levers switched on: measured in the timing workloads 1 and 2."""
