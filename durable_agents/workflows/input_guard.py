"""`InputCountGuard`: a worker interceptor that refuses more payloads than one.

Every handler of this project's workflows takes at most one payload, raw (`workflows.refusals`).
When a sender sends more (`temporal workflow start --input a --input b`), the SDK cannot match
them to the handler's parameters and would call it with too many arguments: a `TypeError` that
fails the workflow task again at every retry, so the run is wedged for good. This guard turns it
into what any other bad input gets: a run fails at once naming the problem, an update is
refused (nothing enters history), a signal is logged and ignored.

Temporal's own handlers (names starting with `__`, e.g. the SDK's and contrib's) are left alone,
except the event stream's publish signal (`STREAM_PUBLISH_SIGNAL`, `temporalio.contrib.
workflow_streams`): anyone who can signal a run can send it, and its handler decodes each item
without a guard, so an item that is not a base64 `Payload` (or a signal with no input) would
fail the workflow task at every retry. Such a batch is logged and dropped whole, before the
handler sees it.
"""

from __future__ import annotations

import base64
import inspect
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.contrib.workflow_streams import PublishEntry, PublishInput
from temporalio.converter import PayloadConverter
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
    from durable_agents.contracts.errors import INVALID_INPUT

MAX_PAYLOADS = 1
STREAM_PUBLISH_SIGNAL = "__temporal_workflow_stream_publish"
"""The event stream's signal that activities (and any client) publish a batch of items with."""

F = TypeVar("F", bound=Callable[..., Any])


def _too_many(what: str, count: int) -> str:
    return f"{what} takes one input (a JSON object); {count} were sent"


def _ours(name: str) -> bool:
    return not name.startswith("__")


def stream_publish_problem(args: Sequence[Any], converter: PayloadConverter) -> str | None:
    """Why a publish signal's batch cannot be taken, or None: one `PublishInput` whose every
    item has a string topic and a base64 `Payload` that `converter` decodes (else the stream's
    handler would raise, or every reader of the stream would trip over the item)."""
    if len(args) != 1:
        return f"it takes one input (a batch of items); {len(args)} were sent"
    batch = args[0]
    if not isinstance(batch, PublishInput):
        return "its input is not a batch of items"
    if not isinstance(batch.publisher_id, str) or type(batch.sequence) is not int:
        return "publisher_id must be a string and sequence an integer"
    if not isinstance(batch.items, list):
        return "items must be a list"
    for index, entry in enumerate(batch.items):
        if not isinstance(entry, PublishEntry) or not isinstance(entry.topic, str):
            return f"items[{index}] has no topic"
        try:
            payload = Payload()
            payload.ParseFromString(base64.b64decode(entry.data))
            converter.from_payload(payload)
        except Exception as error:
            return f"items[{index}].data is not a base64-encoded payload: {error!r}"
    return None


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
        if input.signal == STREAM_PUBLISH_SIGNAL:
            problem = stream_publish_problem(input.args, workflow.payload_converter())
            if problem is not None:
                workflow.logger.warning("signal %s ignored: %s", input.signal, problem)
                return
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
