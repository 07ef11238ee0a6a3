"""The catalog of the worker running this workflow (`tools.catalog.Catalog`): what its runs may
name, the same object the worker built its activities from.

Workflow classes are registered once and shared by every worker in a process, so the catalog
cannot be a class attribute; `CatalogInterceptor` (given to each `Worker` by
`runtime.workers.build_workers`) hands its worker's catalog to each workflow instance before
any of its code runs (the run, a signal, an update's validator or handler, a query; during the
workflow's `__init__`, before there is an instance, by its run id), and `worker_catalog()`
reads it there. A workflow replayed without one (a `Replayer` given no
interceptor) reads the application's `CATALOG`.
"""

from __future__ import annotations

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
    from tools.catalog import CATALOG, Catalog

_ATTRIBUTE = "__worker_catalog__"
_BEFORE_INSTANCE: dict[str, Catalog] = {}
"""The catalog of each run whose instance is being made (its `__init__`), by run id."""


def worker_catalog() -> Catalog:
    """The catalog of the worker running the current workflow."""
    found = getattr(workflow.instance(), _ATTRIBUTE, None)
    if found is None:
        found = _BEFORE_INSTANCE.get(workflow.info().run_id)
    return found if isinstance(found, Catalog) else CATALOG


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
