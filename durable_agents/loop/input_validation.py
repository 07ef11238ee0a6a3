"""Validate raw workflow input (CLI JSON) into `AgentInput`, naming every bad field."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from durable_agents.contracts.agent_input import AgentInput, AgentSettings
from durable_agents.contracts.agents import AgentProfile
from durable_agents.contracts.mcp import MCP_TOOL_SEPARATOR
from durable_agents.contracts.payload_limits import limits_context_of
from durable_agents.loop.output import (
    FINAL_RESULT_TOOL,
    STOP_TOOLS_REPLACED_BY_OUTPUT,
    schema_problem,
)
from durable_agents.loop.validation_errors import describe_validation_error


class InvalidAgentInput(ValueError):
    """The workflow input cannot be used; the message names each bad field."""


def validate_agent_input(
    raw: Any,
    known_tools: Iterable[str],
    output_types: Iterable[str] = (),
    profiles: Mapping[str, AgentProfile] | None = None,
    *,
    payload_store: bool | Callable[[], bool] = False,
) -> AgentInput:
    """Parse `raw` (a dict from JSON, or an `AgentInput`); check tool names and the output
    schema or type. `payload_store` (or what it answers, asked only for a value over today's
    limits): the raised limits of `contracts.payload_limits` apply.

    Raises `InvalidAgentInput` with a message such as
    `invalid AgentWorkflow input: max_iterations: Input should be greater than or equal to 1`.
    """
    if isinstance(raw, AgentInput):
        raw = raw.model_dump()
    if not isinstance(raw, dict):
        raise InvalidAgentInput(
            f"invalid AgentWorkflow input: expected a JSON object such as "
            f'{{"prompt": "..."}}, got {type(raw).__name__}'
        )
    try:
        params = AgentInput.model_validate(raw, context=limits_context_of(payload_store))
    except ValidationError as error:
        raise InvalidAgentInput(
            f"invalid AgentWorkflow input: {describe_validation_error(error)}"
        ) from None
    known = list(known_tools)
    problem = (
        tools_problem(params, known)
        or output_problem(params, known, list(output_types))
        or agents_problem(params.agents or [], known, profiles or {}, params.mcp_servers)
    )
    if problem:
        raise InvalidAgentInput(f"invalid AgentWorkflow input: {problem}")
    return params


def tools_problem(params: AgentInput, known: list[str]) -> str | None:
    """What is wrong with the run's `tools` allowlist: a name that is neither a known tool nor
    a tool of one of its MCP servers (None: nothing)."""
    unknown = [
        name
        for name in params.tools or []
        if name not in known and not offered_server(name, params.mcp_servers)
    ]
    if not unknown:
        return None
    return f"tools: unknown tool(s) {', '.join(unknown)}; available: {', '.join(known) or 'none'}"


def offered_server(tool: str, mcp_servers: list[str] | None) -> bool:
    """Whether `tool` names a tool (`<server>__<tool>`) of one of the run's MCP servers; which
    tools a server has is known once it is listed (`workflows.run_tools`)."""
    server, separator, _ = tool.partition(MCP_TOOL_SEPARATOR)
    if not separator or not mcp_servers:
        return False
    return mcp_servers == ["*"] or server in mcp_servers


def agents_problem(
    names: list[str],
    known_tools: list[str],
    profiles: Mapping[str, AgentProfile],
    mcp_servers: list[str] | None = None,
) -> str | None:
    """Why the run's agent profiles cannot be used, naming the profile; or None."""
    unknown = [name for name in names if name not in profiles]
    if unknown:
        return (
            f"agents: unknown agent profile(s) {', '.join(unknown)}; available: "
            f"{', '.join(profiles) or 'none'}"
        )
    for name in names:
        if name in known_tools:
            return f"agents: profile {name!r} has the name of a tool"
        profile = profiles[name]
        missing = [
            t
            for t in profile.tools or []
            if t not in known_tools and not offered_server(t, mcp_servers)
        ]
        if missing:
            return f"agents: profile {name!r} lists unknown tool(s) {', '.join(missing)}"
        missing = [a for a in profile.agents if a not in profiles]
        if missing:
            return f"agents: profile {name!r} lists unknown agent(s) {', '.join(missing)}"
    return None


def output_problem(
    settings: AgentSettings, known_tools: list[str], output_types: list[str]
) -> str | None:
    """Why the output schema or type cannot be used, naming the field; or None."""
    if settings.output_type is not None and settings.output_type not in output_types:
        return (
            f"output_type: unknown output type {settings.output_type!r}; registered: "
            f"{', '.join(output_types) or 'none'}"
        )
    schema = settings.output_schema
    if schema is not None:
        problem = schema_problem(schema)
        if problem:
            return f"output_schema: not a valid JSON Schema: {problem}"
        if settings.structured_output == "native" and schema.get("type") != "object":
            return (
                'output_schema: structured_output "native" needs an object schema '
                '({"type": "object", ...}); use "tool" for other schemas'
            )
    if settings.output_schema is None and settings.output_type is None:
        return None
    if FINAL_RESULT_TOOL in known_tools:
        return f"tools: a registered tool is named {FINAL_RESULT_TOOL!r}, the typed answer's tool"
    stop_tools = [t for t in settings.tools or [] if t in STOP_TOOLS_REPLACED_BY_OUTPUT]
    if stop_tools:
        return (
            f"tools: {', '.join(stop_tools)} ends a run with free text; with an output schema "
            f"the run ends through {FINAL_RESULT_TOOL}"
        )
    return None


def outside_tools_problem(local: Iterable[str], outside: Iterable[str]) -> str | None:
    """Why tools listed from outside servers cannot join the run (one would take the name of a
    local tool or agent profile, so calls could not be told apart); or None."""
    taken = set(local)
    clashes = [name for name in outside if name in taken]
    if not clashes:
        return None
    return (
        f"mcp_servers: MCP tool(s) {', '.join(clashes)} would take the name of a local tool "
        "or agent profile"
    )


def link_problem(params: AgentInput, *, parent_id: str | None, continued: bool) -> str | None:
    """Why a run's links cannot be believed, or None. What Temporal knows of the run (the
    workflow that started it, whether it continues an earlier run) is the truth: the input
    fields a parent, a session or the run itself sets (`parent`, `session`, `depth`,
    `resume`, `resume_context`) are refused when they claim anything else, so a client cannot
    pose as a sub-agent of another run or a turn of another session."""
    if params.parent is not None and params.parent.workflow_id != parent_id:
        return (
            f"parent: this run was not started by {params.parent.workflow_id!r} (set by a parent "
            "run for its sub-agent, never by a client)"
        )
    if params.depth > 0 and params.parent is None:
        return "depth: set by a parent run for its sub-agent; this run has no parent"
    if params.session is not None and params.session.workflow_id != parent_id:
        return (
            f"session: this run was not started by session {params.session.workflow_id!r} (set "
            "by SessionWorkflow for its turn, never by a client)"
        )
    carried = (
        params.resume is not None
        or params.resume_context is not None
        or params.stream is not None
        or params.definition is not None
    )
    if carried and not continued and params.session is None:
        return (
            "resume: set by the run itself when it continues-as-new (or by its session when a "
            "turn moves to a run of its own); this run does neither"
        )
    return None
