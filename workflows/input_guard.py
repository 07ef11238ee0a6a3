"""`InputCountGuard`: a worker interceptor that refuses more payloads than one.

Every handler of this project's workflows takes at most one payload, raw (`workflows.refusals`).
When a sender sends more (`temporal workflow start --input a --input b`), the SDK cannot match
them to the handler's parameters and would call it with too many arguments: a `TypeError` that
fails the workflow task again at every retry, so the run is wedged for good. This guard turns it
into what any other bad input gets: a run fails at once naming the problem, an update is
refused (nothing enters history), a signal is logged and ignored.

Temporal's own handlers (names starting with `__`, e.g. the SDK's and contrib's) are left alone.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.exceptions import ApplicationError
from temporalio.worker import (
    ExecuteWorkflowInput,
    HandleSignalInput,
    HandleUpdateInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

with workflow.unsafe.imports_passed_through():
    from contracts.errors import INVALID_INPUT

MAX_PAYLOADS = 1

F = TypeVar("F", bound=Callable[..., Any])


def _too_many(what: str, count: int) -> str:
    return f"{what} takes one input (a JSON object); {count} were sent"


def _ours(name: str) -> bool:
    return not name.startswith("__")


class _GuardedInbound(WorkflowInboundInterceptor):
    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        if len(input.args) > MAX_PAYLOADS:
            raise ApplicationError(
                f"invalid {workflow.info().workflow_type} input: "
                + _too_many("a run", len(input.args)),
                type=INVALID_INPUT,
                non_retryable=True,
            )
        return await super().execute_workflow(input)

    async def handle_signal(self, input: HandleSignalInput) -> None:
        if _ours(input.signal) and len(input.args) > MAX_PAYLOADS:
            workflow.logger.warning(
                "signal %s ignored: invalid input: %s",
                input.signal,
                _too_many(f"signal {input.signal}", len(input.args)),
            )
            return
        await super().handle_signal(input)

    def handle_update_validator(self, input: HandleUpdateInput) -> None:
        self._check_update(input)
        super().handle_update_validator(input)

    async def handle_update_handler(self, input: HandleUpdateInput) -> Any:
        self._check_update(input)
        return await super().handle_update_handler(input)

    @staticmethod
    def _check_update(input: HandleUpdateInput) -> None:
        if _ours(input.update) and len(input.args) > MAX_PAYLOADS:
            raise ApplicationError(
                f"invalid {input.update} input: "
                + _too_many(f"update {input.update}", len(input.args)),
                type=INVALID_INPUT,
                non_retryable=True,
            )


class InputCountGuard(Interceptor):
    """Give it to every `Worker` (and `Replayer`) that runs this project's workflows."""

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        return _GuardedInbound


def one_payload(fn: F) -> F:
    """Tell Temporal that `fn` takes its one raw parameter, while Python still accepts more
    arguments (`*extra`), so that a start with several payloads reaches `InputCountGuard`
    instead of failing as a `TypeError` before any workflow code runs.

    Needed where the SDK calls our code with the start's payloads before any interceptor: a
    `@workflow.init` `__init__` (and its `run`, whose parameters must be the same). The SDK
    reads parameters through `inspect.signature`, which honours `__signature__`."""
    signature = inspect.signature(fn)
    kept = [p for p in signature.parameters.values() if p.kind is not p.VAR_POSITIONAL]
    fn.__signature__ = signature.replace(parameters=kept)  # type: ignore[attr-defined]
    return fn
