"""The `run_script_step` activity: one step of a code-mode script in the pydantic-monty sandbox.

The sandbox is the `code` extra. The worker registers this activity whether or not the extra is
installed (a run asks for code mode, not the worker), so the sandbox is imported only when a
step runs (`activities.monty_sandbox`); without the extra the step ends in an error the model
reads, naming the extra, and the worker said so at start (`code_mode_warning`).
"""

from __future__ import annotations

from temporalio import activity

from durable_agents.contracts.code_mode import (
    SCRIPT_STEP_ACTIVITY,
    ScriptStepInput,
    ScriptStepOutput,
)
from durable_agents.runtime.extras import MissingExtra, installed, require

CODE_MODE = "code mode (code_mode: true)"
"""The feature, as the one-line error about its extra names it."""


def code_mode_warning() -> str | None:
    """What the worker says at start when runs cannot use code mode here (None: they can)."""
    if installed("code"):
        return None
    return f"{MissingExtra(CODE_MODE, 'code')}; runs that ask for it get that error"


@activity.defn(name=SCRIPT_STEP_ACTIVITY)
async def run_script_step(step: ScriptStepInput) -> ScriptStepOutput:
    """Run the script to its next tool calls or its end (`monty_sandbox.run_step`)."""
    try:
        require("code", CODE_MODE)
    except MissingExtra as missing:
        return ScriptStepOutput(status="error", error=str(missing))
    from durable_agents.activities.monty_sandbox import run_step

    return await run_step(step)
