"""Input and output of a tool activity (one activity type per tool, named after the tool)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from durable_agents.contracts.omitted import default_omitted, none_omitted


class ToolInvocation(BaseModel):
    """A validated tool call the workflow asks the worker to run.

    `idempotency_key` is stable across retries and worker restarts (workflow id + call id), so a
    side-effecting tool can make its effect happen at most once.
    """

    call_id: str
    tool: str
    args: dict[str, Any]
    idempotency_key: str
    max_output_chars: int = default_omitted(20_000)
    scope: str | None = none_omitted()
    """The run's `memory_scope`, for tools that keep data per user (`requires_scope`)."""
    turn: int | None = none_omitted()
    """The session turn the call belongs to, which its `tool_progress` events carry."""
    keep_output: bool = default_omitted(True)
    """Whether the worker may keep the output for the run's next model call
    (`activities.kept_outputs`): false for a run that sends its whole conversation every call
    (`context_transfer: full`), which would never name it. Left out of the JSON while true."""


class ToolOutput(BaseModel):
    """A tool's result as text for the model, cut to `max_output_chars` if it was longer."""

    content: str
    truncated: bool = False
    original_chars: int = 0
    stop_run: bool = False
    """The tool returned `StopRun`: `content` is the run's final answer."""
    kept_by: str | None = none_omitted()
    """The name of the worker that ran the call and keeps `content` for the run's next model
    call (`activities.kept_outputs`: its queue, or its `ModelReply.answered_by`); None: not
    kept (a short output, a run that sends its whole conversation)."""
