"""The `agent` CLI as the client of a run's client-side tools (`client_tools`): a pending call
is printed with its arguments, and the person (or a script piping stdin) types the tool's
result as one line of JSON, or `!` and an error message; it goes back through
`RunHandle.tool_result` (the `tool_result` update), whose refusal (a result breaking the tool's
result_schema, say: `DecisionRefused`) is printed and asked again."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from typing import Any, Protocol

from durable_agents.client.run_handle import RunHandle
from durable_agents.client.workflow_calls import SEND_TIMEOUT_SECONDS
from durable_agents.contracts.approvals import PendingRequest
from durable_agents.errors import AgentError, DecisionRefused, NoWorker

ERROR_PREFIX = "!"
"""A line starting with it is the tool's error message, not its result."""


class Asker(Protocol):
    """What `answer` needs of the live view's answerer (`cli.progress.Answerer`)."""

    run: RunHandle
    by: str | None
    sending: bool
    """True while an answer is on its way (the request vanishing is then our own doing)."""

    async def _read(self, prompt: str) -> str | None: ...

    def _give_up(self, request: PendingRequest, why: str) -> None: ...


def read_answer(line: str, call_id: str) -> dict[str, Any] | str:
    """The `tool_result` payload a typed line means, or why it means none."""
    text = line.strip()
    if text.startswith(ERROR_PREFIX):
        error = text[len(ERROR_PREFIX) :].strip()
        if not error:
            return "after ! give the error message"
        return {"call_id": call_id, "error": error}
    try:
        result = json.loads(text)
    except json.JSONDecodeError as error:
        return f'not JSON: {error} (a string result is quoted: "..."; an error: ! message)'
    return {"call_id": call_id, "result": result}


async def answer(
    asker: Asker,
    request: PendingRequest,
    say: Callable[[str], None],
) -> None:
    """Ask for the result of a client tool call until it is sent, skipped or stdin ends."""
    while True:
        line = await asker._read(f"result of {request.tool} (JSON; ! error; empty: skip): ")
        if line is None:
            return asker._give_up(request, "stdin is closed")
        if not line.strip():
            return asker._give_up(request, "skipped")
        payload = read_answer(line, request.call_id)
        if isinstance(payload, str):
            say(f"  {payload}")
            continue
        answer = {key: value for key, value in payload.items() if key != "call_id"}
        asker.sending = True
        try:
            await asker.run.tool_result(request.call_id, **answer, by=asker.by)
        except DecisionRefused as error:
            say(f"  refused: {error.reason}")
            continue
        except NoWorker as error:
            taken = f"no worker took the result within {SEND_TIMEOUT_SECONDS:g} s"
            say(f"  {taken if error.update else error}")
            return
        except AgentError as error:
            say(f"  {error}")
            return
        finally:
            asker.sending = False
        sent = "error" if "error" in payload else "result"
        say(f"  → sent the {sent} of {request.tool} ({shlex.quote(request.call_id)})")
        return
