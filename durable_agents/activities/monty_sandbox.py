"""One step of a code-mode script in the pydantic-monty sandbox (the `code` extra): the body of
the `run_script_step` activity (`activities.code_sandbox`), imported only when a step runs.

A step starts the script (type-checked first against the signatures of the run's tools) or
loads the sandbox's dump from the previous step and settles the calls it waited for, then runs
it until it waits for tool calls again (their ids and the new dump are returned) or ends (its
output and last value, or why it stopped). The sandbox is a subprocess of the worker, with no
access to the host: no files, no network, no environment; each step gets a fresh one, so a
step retried on another worker is the same step. Nothing here runs a tool: the workflow does,
through the run's governed path.
"""

from __future__ import annotations

import base64
from typing import Any

from pydantic_monty import (
    AsyncFunctionSnapshot,
    AsyncFutureSnapshot,
    AsyncMonty,
    AsyncMontySession,
    AsyncNameLookupSnapshot,
    AsyncSnapshot,
    MontyComplete,
    MontyCrashedError,
    MontyError,
    MontyRuntimeError,
    MontySyntaxError,
    MontyTypingError,
    ResourceLimits,
)

from durable_agents.contracts.code_mode import (
    ScriptCall,
    ScriptStepInput,
    ScriptStepOutput,
)
from durable_agents.loop.code_mode import (
    limit_error,
    runtime_error,
    script_value,
    typing_error,
)

SANDBOX_GRACE_SECONDS = 5.0
"""Beyond a step's compute limit, how long the pool waits before it kills a stuck sandbox."""


def sandbox_limits(step: ScriptStepInput) -> ResourceLimits:
    """The sandbox's own limits: compute between host calls, heap, and suspensions (a step
    never waits for more calls than the script may make)."""
    limits = step.limits
    return {
        "max_turn_duration_secs": limits.max_compute_seconds,
        "max_memory": limits.max_memory_mb * 1024 * 1024,
        "max_suspensions": limits.max_tool_calls + 10,
    }


class Printed:
    """What the script prints, up to a bound (the rest is counted, not kept)."""

    def __init__(self, max_chars: int) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.dropped = 0
        self._max = max_chars

    def __call__(self, stream: str, text: str) -> None:
        room = self._max - self.size
        kept = text[: max(room, 0)]
        self.parts.append(kept)
        self.size += len(kept)
        self.dropped += len(text) - len(kept)

    def text(self) -> str:
        note = f"\n[... {self.dropped} more characters of output cut]" if self.dropped else ""
        return "".join(self.parts) + note


async def run_step(step: ScriptStepInput) -> ScriptStepOutput:
    """Run the script to its next tool calls or its end (see the module docstring)."""
    printed = Printed(step.max_output_chars)
    limits = sandbox_limits(step)
    async with AsyncMonty(
        min_processes=1,
        max_processes=1,
        request_timeout=step.limits.max_compute_seconds + SANDBOX_GRACE_SECONDS,
    ) as pool:
        session = pool.checkout(
            script_name="script.py",
            limits=limits,
            type_check=step.snapshot is None,
            type_check_stubs=step.stubs,
            type_check_format="concise",
        )
        async with session:
            try:
                snap = await _first(session, step, printed)
                return await _until_calls(snap, step, printed)
            except MontyTypingError as error:
                return ScriptStepOutput(status="error", error=typing_error(error.display()))
            except MontySyntaxError as error:
                return ScriptStepOutput(status="error", error=typing_error(error.display("msg")))
            except MontyRuntimeError as error:
                message = error.display("traceback")
                return ScriptStepOutput(
                    status="error",
                    output=printed.text(),
                    error=limit_error(message, step.limits) or runtime_error(message),
                )
            except MontyCrashedError as error:
                why = "ran out of time" if error.timed_out else "crashed"
                return ScriptStepOutput(
                    status="error",
                    output=printed.text(),
                    error=limit_error(f"TimeoutError: sandbox {why}", step.limits)
                    or f"the sandbox {why}: {error}",
                )
            except MontyError as error:
                return ScriptStepOutput(
                    status="error", output=printed.text(), error=f"the sandbox failed: {error}"
                )


async def _first(
    session: AsyncMontySession, step: ScriptStepInput, printed: Printed
) -> AsyncSnapshot:
    """The script started, or resumed with the results of the calls it waited for."""
    if step.snapshot is None:
        if step.code is None:
            raise ValueError("a script step needs code or a snapshot")
        return await session.feed_start(step.code, print_callback=printed)
    snap = await session.load_snapshot(base64.b64decode(step.snapshot), print_callback=printed)
    if not isinstance(snap, AsyncFutureSnapshot):
        raise ValueError(f"the dump is not a script waiting for calls: {snap!r}")
    settled: dict[int, Any] = {
        **{i: {"return_value": text} for i, text in step.results.items()},
        **{i: {"exc_type": "RuntimeError", "message": text} for i, text in step.failed.items()},
    }
    return await snap.resume({i: settled[i] for i in snap.pending_call_ids if i in settled})


async def _until_calls(
    snap: AsyncSnapshot, step: ScriptStepInput, printed: Printed
) -> ScriptStepOutput:
    """Drive the sandbox: each call of a tool becomes a pending future (the workflow runs it);
    a call of anything else, an OS call or an undefined name fails in the script; stop when
    the script waits for calls, or ends."""
    calls: list[ScriptCall] = []
    tools = set(step.tools)
    while True:
        if isinstance(snap, MontyComplete):
            return ScriptStepOutput(
                status="done", calls=calls, output=printed.text(), value=script_value(snap.output)
            )
        if isinstance(snap, AsyncFutureSnapshot):
            return ScriptStepOutput(
                status="calls",
                snapshot=base64.b64encode(snap.dump()).decode("ascii"),
                calls=calls,
                pending=list(snap.pending_call_ids),
                output=printed.text(),
            )
        if isinstance(snap, AsyncNameLookupSnapshot):
            snap = await snap.resume()  # an undefined name: NameError in the script
        elif isinstance(snap, AsyncFunctionSnapshot):
            if snap.is_os_function:
                snap = await snap.resume_not_handled()  # no host access
                continue
            name = str(snap.function_name)
            if name in tools:
                calls.append(
                    ScriptCall(
                        id=snap.call_id,
                        function=name,
                        positional=list(snap.args),
                        keywords=snap.kwargs,
                    )
                )
                snap = await snap.resume({"future": ...})
            else:
                message = f"name '{name}' is not defined (the run has no tool {name})"
                snap = await snap.resume({"exc_type": "NameError", "message": message})
        else:  # pragma: no cover - every snapshot type is handled above
            raise ValueError(f"unexpected sandbox state: {snap!r}")
