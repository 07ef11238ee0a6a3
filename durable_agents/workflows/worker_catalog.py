"""The catalog of the worker running this workflow (`tools.catalog.Catalog`): what its runs may
name, the same object the worker built its activities from.

Workflow classes are registered once and shared by every worker in a process, so the catalog
cannot be a class attribute; `CatalogInterceptor` (given to each `Worker` by
`runtime.workers.build_workers`) hands its worker's catalog to each workflow instance before
any of its code runs (the run, a signal, an update's validator or handler, a query; during the
workflow's `__init__`, before there is an instance, by its run id), and `worker_catalog()`
reads it there. A workflow replayed without one (a `Replayer` given no
interceptor) reads the application's `CATALOG`.

What a run reads here is code (tools, output types, agent profiles), never a choice that changes
the commands its history holds: those are asked through `workflow.patched` and answered for new
runs by the worker's `patch_activation_callback` (`runtime.workers`). A worker, or a replayer,
without the code a run names cannot replay it: `warn_missing_on_replay` says which names.
"""

from __future__ import annotations

import logging
from typing import Any

from temporalio import workflow
from temporalio.worker import (
    ExecuteWorkflowInput,
    HandleQueryInput,
    HandleSignalInput,
    HandleUpdateInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.mcp import MCP_TOOL_SEPARATOR
    from durable_agents.tools.catalog import CATALOG, Catalog

_ATTRIBUTE = "__worker_catalog__"
_BEFORE_INSTANCE: dict[str, Catalog] = {}
"""The catalog of each run whose instance is being made (its `__init__`), by run id."""


def worker_catalog() -> Catalog:
    """The catalog of the worker running the current workflow."""
    found = getattr(workflow.instance(), _ATTRIBUTE, None)
    if found is None:
        found = _BEFORE_INSTANCE.get(workflow.info().run_id)
    return found if isinstance(found, Catalog) else CATALOG


log = logging.getLogger("durable_agents.workflows.replay")
"""Not `workflow.logger`, which is silent on replay: this is said only on replay."""


def names_missing_from(catalog: Catalog, raw: Any) -> list[str]:
    """The tools, output type and agent profiles an `AgentWorkflow` input (`raw`, its JSON)
    names that `catalog` lacks (an MCP tool, `server__tool`, is its server's)."""
    if not isinstance(raw, dict):
        return []
    named = [*(raw.get("tools") or []), raw.get("output_type"), *(raw.get("agents") or [])]
    known = {*catalog.tools.names(), *catalog.output_types.names(), *catalog.agents.names()}
    local = [n for n in named if isinstance(n, str) and MCP_TOOL_SEPARATOR not in n]
    return [n for n in local if n not in known]


def warn_missing_on_replay(raw: Any) -> None:
    """On replay, a run's input naming what this worker's catalog lacks is refused here, as it
    was where it was refused; where it was accepted, the replay fails with a nondeterminism
    error, and this says why (the names, and how a worker gets them)."""
    missing = names_missing_from(worker_catalog(), raw)
    if missing and workflow.unsafe.is_replaying():
        log.warning(
            "replaying %s: this worker lacks %s, which the run names; if the run was accepted "
            "where it started, its replay fails: give this worker the same tool modules "
            "(AGENT_TOOL_MODULES), output types and agent profiles",
            workflow.info().workflow_id,
            ", ".join(missing),
        )


class CatalogInterceptor(Interceptor):
    """Hands `catalog` to every workflow instance its worker runs."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        catalog = self.catalog

        def attach() -> None:
            instance = workflow.instance()
            if getattr(instance, _ATTRIBUTE, None) is None:
                setattr(instance, _ATTRIBUTE, catalog)
                _BEFORE_INSTANCE.pop(workflow.info().run_id, None)

        class _WithCatalog(WorkflowInboundInterceptor):
            def init(self, outbound: WorkflowOutboundInterceptor) -> None:
                super().init(outbound)
                _BEFORE_INSTANCE[outbound.info().run_id] = catalog  # for the `__init__`

            async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
                attach()
                return await super().execute_workflow(input)

            async def handle_signal(self, input: HandleSignalInput) -> None:
                attach()
                await super().handle_signal(input)

            async def handle_query(self, input: HandleQueryInput) -> Any:
                attach()
                return await super().handle_query(input)

            def handle_update_validator(self, input: HandleUpdateInput) -> None:
                attach()
                super().handle_update_validator(input)

            async def handle_update_handler(self, input: HandleUpdateInput) -> Any:
                attach()
                return await super().handle_update_handler(input)

        return _WithCatalog
