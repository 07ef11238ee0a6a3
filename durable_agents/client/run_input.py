"""The `AgentWorkflow` input of a run named by an agent profile (or none: the default agent),
with run settings on top, checked against `AgentInput` before anything starts, so a bad field
is named and nothing runs (`InvalidInput`). What `agent run`, the HTTP API and the gateways send
when a request names an agent rather than an `Agent` defined in code."""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import ValidationError

from durable_agents.contracts.agent_input import AgentInput, AgentSettings
from durable_agents.contracts.agents import AgentProfile
from durable_agents.contracts.payload_limits import limits_context_of
from durable_agents.errors import InvalidInput
from durable_agents.loop.validation_errors import describe_validation_error
from durable_agents.tools.agents import AgentProfiles

DEFAULT_AGENT: Final = "assistant"
"""The agent a request names when it names none: a run with the worker's defaults."""
DEFAULT_AGENT_DESCRIPTION: Final = (
    "A general assistant with every tool the worker offers (calculator, clock, workspace files, "
    "questions to you, ...); calls that change something wait for your approval."
)
MAX_OPTIONS_BYTES: Final = 64 * 1024
"""Largest `options` object, as JSON: run settings, not data."""


def profile_settings(profile: AgentProfile) -> dict[str, Any]:
    """The run settings an agent profile names (what it is), as a run of its own: its name (the
    label of the run's definition), instructions, tools, agents, model, turn limit, token budget,
    answer schema and how its model calls run."""
    settings: dict[str, Any] = {
        "agent_name": profile.name,
        "system_prompt": profile.system_prompt,
        "tools": profile.tools,
        "agents": profile.agents or None,
        "model": profile.model,
        "max_iterations": profile.max_iterations,
        "max_total_tokens": profile.max_total_tokens,
        "output_schema": profile.output_schema,
        "model_call": profile.model_call,
    }
    return {k: v for k, v in settings.items() if v is not None}


def catalog_profiles(tool_modules: Sequence[str]) -> AgentProfiles:
    """The agent profiles of the catalog, with those the `AGENT_TOOL_MODULES` register (they
    are imported, as the worker imports them), so a client offers the agents the worker
    serves."""
    from durable_agents.tools.catalog import CATALOG  # the catalog's tools: only when asked

    for module in tool_modules:
        importlib.import_module(module)
    return CATALOG.agents


def agent_names(profiles: AgentProfiles) -> list[str]:
    return [DEFAULT_AGENT, *profiles.names()]


def checked_input(payload: Mapping[str, Any], payload_store: bool = False) -> dict[str, Any]:
    """`payload` once it validates as `AgentInput` (with the raised size limits when the worker
    stores large payloads: `payload_store`); else `InvalidInput` naming the field."""
    try:
        AgentInput.model_validate(payload, context=limits_context_of(payload_store))
    except ValidationError as error:
        raise InvalidInput(f"invalid input: {describe_validation_error(error)}") from None
    return dict(payload)


def run_input(
    prompt: str,
    agent: str | None,
    options: Mapping[str, Any] | None,
    profiles: AgentProfiles,
    payload_store: bool = False,
) -> dict[str, Any]:
    """The `AgentWorkflow` input: the profile's settings (none for `assistant`), `options` on
    top (only `AgentSettings` fields: links and resume state are the system's), the prompt.
    Checked here, so a bad request is refused naming the field and nothing starts."""
    name = agent or DEFAULT_AGENT
    profile = profiles.get(name) if name != DEFAULT_AGENT else None
    if name != DEFAULT_AGENT and profile is None:
        raise InvalidInput(
            f"unknown agent {name!r}; agents: {', '.join(agent_names(profiles))}", field="agent"
        )
    options = dict(options or {})
    size = len(json.dumps(options, ensure_ascii=False, default=str).encode())
    if size > MAX_OPTIONS_BYTES:
        raise InvalidInput(
            f"options: {size} bytes as JSON, more than {MAX_OPTIONS_BYTES}", field="options"
        )
    try:
        AgentSettings.model_validate(options)
    except ValidationError as error:
        raise InvalidInput(f"invalid input: {describe_validation_error(error)}") from None
    payload = {**(profile_settings(profile) if profile else {}), **options, "prompt": prompt}
    return checked_input(payload, payload_store)
