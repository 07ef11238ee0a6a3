"""Code mode as pure functions: the signatures the model and the sandbox's type check see, the
`run_code` tool, which calls of a script can run, and what the model reads back (the script's
output and last value, or a clear reason it stopped)."""

from __future__ import annotations

import json
import keyword
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from durable_agents.contracts.code_mode import RUN_CODE_TOOL, CodeLimits, RunCodeArgs, ScriptCall
from durable_agents.contracts.messages import ToolCall
from durable_agents.contracts.model_io import ToolSchema
from durable_agents.loop.summaries import shorten

JSON_TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list[Any]",
    "object": "dict[str, Any]",
    "null": "None",
}
MAX_DOC_CHARS = 300
"""Longest tool description repeated in a signature's docstring."""


def callable_name(name: str) -> bool:
    """Whether a tool can be called from a script under its own name."""
    return name.isidentifier() and not keyword.iskeyword(name)


def annotation(schema: Any) -> str:
    """A Python annotation for a JSON Schema (`Any` where there is no simple one)."""
    if not isinstance(schema, Mapping):
        return "Any"
    kind = schema.get("type")
    if isinstance(kind, str) and kind in JSON_TYPES:
        return JSON_TYPES[kind]
    if isinstance(kind, list) and kind and all(k in JSON_TYPES for k in kind):
        return " | ".join(JSON_TYPES[k] for k in kind)
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list) and options:
        return " | ".join(dict.fromkeys(annotation(o) for o in options))
    if "enum" in schema and all(isinstance(v, str) for v in schema["enum"]):
        return "str"
    return "Any"


def signature(tool: ToolSchema) -> str:
    """`async def name(*, arg: str, opt: int | None = None) -> str:` with the description as
    its docstring: keyword arguments only, each returning the observation text."""
    properties = tool.parameters.get("properties") or {}
    required = set(tool.parameters.get("required") or [])
    params: list[str] = []
    extra = False
    for name in sorted(properties, key=lambda n: n not in required):
        if not callable_name(name):
            extra = True
            continue
        kind = annotation(properties[name])
        if name not in required:
            kind = kind if "None" in kind.split(" | ") else f"{kind} | None"
        params.append(f"{name}: {kind}" if name in required else f"{name}: {kind} = None")
    if extra:
        params.append("**more: Any")
    listed = ", ".join(["*", *params]) if params else ""
    doc = shorten(" ".join(tool.description.split()), MAX_DOC_CHARS).replace('"""', "'''")
    return f'async def {tool.name}({listed}) -> str:\n    """{doc}"""\n    ...\n'


def script_tools(schemas: Sequence[ToolSchema]) -> list[ToolSchema]:
    """The tools a script can call: those whose name is a Python name."""
    return [s for s in schemas if callable_name(s.name)]


def stubs(schemas: Sequence[ToolSchema]) -> str:
    """The signatures of the script's tools, as the sandbox's type check reads them."""
    return "from typing import Any\n\n\n" + "\n\n".join(signature(s) for s in schemas)


def run_code_schema(schemas: Sequence[ToolSchema], limits: CodeLimits) -> ToolSchema:
    """The one tool of a run in code mode, with the signatures of the tools a script calls."""
    return ToolSchema(
        name=RUN_CODE_TOOL,
        description=(
            "Run a short Python script (top-level await works; asyncio.gather runs calls in "
            "parallel). It can call these async functions, with keyword arguments; each returns "
            "the tool's result as a string:\n\n"
            + "\n".join(signature(s) for s in schemas)
            + "\nWhat the script prints and the value of its last expression are the result. "
            "No files, network or other imports. Limits: "
            f"{limits.max_tool_calls} tool calls, {limits.max_compute_seconds:g}s of compute "
            f"between calls, {limits.max_memory_mb} MB of memory."
        ),
        parameters=RunCodeArgs.model_json_schema(),
    )


@dataclass(frozen=True)
class ScriptRequests:
    """The calls a script waits for, as tool calls the run can screen and run (`calls`, with
    the script's id of each), and those answered at once with an exception in the script
    (`failed`: positional arguments)."""

    calls: list[tuple[int, ToolCall]]
    failed: dict[int, str]


def script_call_id(run_code_call: str, script_call: int) -> str:
    """The call id of a script's call: the `run_code` call's and its number in the script."""
    return f"{run_code_call}.{script_call + 1}"


def script_requests(run_code_call: str, calls: Sequence[ScriptCall]) -> ScriptRequests:
    """Tool calls for the script's calls (see `ScriptRequests`)."""
    runnable: list[tuple[int, ToolCall]] = []
    failed: dict[int, str] = {}
    for call in calls:
        if call.positional:
            failed[call.id] = f"{call.function}() takes keyword arguments only"
            continue
        arguments = json.dumps(call.keywords, ensure_ascii=False)
        tool_call = ToolCall(
            id=script_call_id(run_code_call, call.id), name=call.function, arguments=arguments
        )
        runnable.append((call.id, tool_call))
    return ScriptRequests(runnable, failed)


def script_value(value: Any) -> str | None:
    """The script's last value as the model reads it: a string as it is, None as nothing,
    anything else as its `repr`."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return repr(value)


def typing_error(display: str) -> str:
    """A script that fails to parse or type-check (an unknown tool or name, wrong arguments, an
    import the sandbox does not have): nothing ran."""
    return f"the script does not type-check, so nothing ran:\n{display.strip()}"


def runtime_error(traceback: str) -> str:
    return f"the script raised an exception:\n{traceback.strip()}"


def limit_error(message: str, limits: CodeLimits) -> str | None:
    """The limit a sandbox error says the script hit, in plain words; None for other errors."""
    if "TimeoutError" in message:
        return (
            f"the script computed for more than {limits.max_compute_seconds:g}s without calling "
            "a tool (the limit); it was stopped"
        )
    if "MemoryError" in message:
        return (
            f"the script used more than {limits.max_memory_mb} MB of memory (the limit); it was "
            "stopped"
        )
    if "suspension" in message.lower():
        return calls_limit_error(limits)
    return None


def calls_limit_error(limits: CodeLimits) -> str:
    return (
        f"the script made more than {limits.max_tool_calls} tool calls (the limit); the calls "
        "beyond it did not run and the script was stopped"
    )


def script_observation(output: str, value: str | None, error: str | None) -> str:
    """What the model reads for a script: its printed output, then its last value; or, for a
    script that stopped, `Error: <why>` after the output it printed until then."""
    parts = [output.rstrip("\n")] if output.strip() else []
    if error is not None:
        parts.append(f"Error: {error}")
    elif value is not None:
        parts.append(value)
    return "\n".join(parts) if parts else "(the script printed nothing and returned None)"
