"""Code mode: the model writes one short Python script that calls the run's tools, instead of
one model round trip per call. The boundary of the sandbox activity that steps through it.

The script runs in the pydantic-monty sandbox, in activities (`activities.code_sandbox`): each
step feeds the script up to the tool calls it waits for and returns the sandbox's dumped state
and those calls; the workflow runs each call through the run's normal governed path and hands
the observations to the next step. Every step's input and output is in history, so a script
resumed after a worker crash goes on from the last step and never runs a finished call again.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

RUN_CODE_TOOL = "run_code"
"""The one tool a run in code mode offers the model."""
SCRIPT_STEP_ACTIVITY = "run_script_step"
"""The activity that steps a script through the sandbox."""


class CodeLimits(BaseModel):
    """What one script may use (`code_limits` in the run's input)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    max_compute_seconds: float = Field(
        default=5.0, gt=0, le=300, description="Compute time between two tool calls."
    )
    max_tool_calls: int = Field(default=50, ge=1, le=1000, description="Tool calls per script.")
    max_memory_mb: int = Field(default=64, ge=8, le=2048, description="Heap of the sandbox.")


class RunCodeArgs(BaseModel):
    """The arguments of `run_code`."""

    model_config = ConfigDict(extra="forbid")

    code: str = Field(
        min_length=1,
        max_length=100_000,
        description="A Python script. Call the tools with `await name(arg=...)` (keyword "
        "arguments; asyncio.gather runs calls in parallel); each returns the tool's result as "
        "text. print() output and the value of the last expression are what you get back.",
    )


class ScriptCall(BaseModel):
    """A call the script made of one of the run's tools (an external function)."""

    id: int
    """The sandbox's id of the call (unique within one script)."""
    function: str
    positional: list[Any] = []
    keywords: dict[str, Any] = {}


class ScriptStepInput(BaseModel):
    """One step: start the script (`code`), or resume it from `snapshot` with the results of
    the calls it waits for (`results`, by call id; each the observation text)."""

    code: str | None = None
    snapshot: str | None = None
    """Base64 of the sandbox's dump at the previous step."""
    results: dict[int, str] = {}
    failed: dict[int, str] = {}
    """Calls answered with an exception in the script (a call of a tool the run does not have,
    or positional arguments), by call id: the exception's message."""
    tools: list[str] = []
    """The functions the script may call (the run's tools)."""
    stubs: str = ""
    """Their signatures, for the sandbox's type check before anything runs."""
    limits: CodeLimits = CodeLimits()
    max_output_chars: int = 20_000


StepStatus = Literal["calls", "done", "error"]


class ScriptStepOutput(BaseModel):
    """Where the script stands after one step."""

    status: StepStatus
    snapshot: str | None = None
    """Base64 of the sandbox's dump, while the script waits for `pending` calls."""
    calls: list[ScriptCall] = []
    """Calls the script made in this step (some may be awaited only later)."""
    pending: list[int] = []
    """The calls the script now waits for, by id: run these and resume."""
    output: str = ""
    """What the script printed during this step."""
    value: str | None = None
    """The value of the script's last expression (`repr`; a string as it is), once done."""
    error: str | None = None
    """Why the script stopped (a type error, an exception, a limit), once `error`."""
