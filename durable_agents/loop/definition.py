"""An agent's definition, its digest and label, and what a run does with a new one at a turn
boundary: pure functions, no Temporal, no I/O (docs/concepts/definitions.md).

- `definition_of(settings, tools)`: the `AgentDefinition` a run with these settings goes by on a
  worker offering these tool schemas, digest included; `definition_on(settings, registry)`: the
  same with the schemas of the registry's tools the settings allow.
- `sparse_settings` / `started_record`: what a run that starts sends the `record_definition`
  activity (its settings that differ from the defaults), and what it records.
- `definition_digest`: sha256 of the canonical JSON (sorted keys, no spaces) of every field but
  the name, the version and the digest itself.
- `worker_settings`: the settings the worker's current definition of the run's agent gives it.
- `turn_record`: at a session's turn boundary, whether the run keeps its definition or migrates
  to the worker's (`on_new_definition` of the worker's definition), as the history records it;
  `end_record`: as a one-shot run that waited for a person ends, the worker's then (kept).
- `pinned_tools`: the tool schemas a run that keeps its definition shows the model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from durable_agents.contracts.agent_input import AgentSettings
from durable_agents.contracts.definition import UNNAMED_AGENT, AgentDefinition, DefinitionRecord
from durable_agents.contracts.model_io import ToolSchema

if TYPE_CHECKING:
    from durable_agents.tools.registry import ToolRegistry

OWN_FIELDS = frozenset(
    {"system_prompt", "model", "fallback_models", "approval_policy", "on_new_definition"}
)
"""Settings that are fields of `AgentDefinition` of their own."""

NOT_BEHAVIOUR = frozenset(
    {
        "tools",  # `AgentDefinition.tools`: the schemas, not the allowlist
        "agent_name",
        "agent_version",
        "tenant",
        "starter",
        "memory_scope",
        "stream_deltas",
        "record_reasoning",
        "context_transfer",
        "continue_as_new_after_events",
        "continue_as_new_after_bytes",
        "model_call",  # an activity or a local activity: how, not what
        "tool_fixtures",  # an eval's recorded tool outputs, not the agent's
    }
)
"""Settings that say who runs the agent and how its history is kept, not what it does: outside
the digest. Every other setting is in it, a new one included, unless it is named here."""


def definition_digest(definition: AgentDefinition) -> str:
    """sha256 (hex) of the definition's canonical JSON, without its name, version and digest."""
    body = definition.model_dump(mode="json", exclude={"name", "version", "digest"})
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def behaviour_settings(settings: AgentSettings) -> dict[str, Any]:
    """The settings of `AgentDefinition.settings`: all but `OWN_FIELDS` and `NOT_BEHAVIOUR`."""
    names = set(AgentSettings.model_fields) - OWN_FIELDS - NOT_BEHAVIOUR
    return settings.model_dump(mode="json", include=names)


def definition_of(settings: AgentSettings, tools: Sequence[ToolSchema]) -> AgentDefinition:
    """The definition a run with `settings` goes by where it is offered `tools` (sorted by
    name: the order a worker registers them in does not change the digest)."""
    made = AgentDefinition(
        name=settings.agent_name or UNNAMED_AGENT,
        version=settings.agent_version,
        system_prompt=settings.system_prompt,
        tools=sorted(tools, key=lambda tool: tool.name),
        model=settings.model,
        fallback_models=list(settings.fallback_models),
        approval_policy=settings.approval_policy,
        on_new_definition=settings.on_new_definition,
        settings=behaviour_settings(settings),
    )
    return made.model_copy(update={"digest": definition_digest(made)})


def definition_on(settings: AgentSettings, registry: ToolRegistry) -> AgentDefinition:
    """The definition a run with `settings` goes by where `registry` holds the tools: the
    schemas of those its settings allow."""
    return definition_of(settings, [tool.schema() for tool in registry.select(settings.tools)])


DEFINING = frozenset(AgentSettings.model_fields) - NOT_BEHAVIOUR | {
    "tools", "agent_name", "agent_version",
}  # fmt: skip
"""The settings a run's definition is made of: its own fields, its behaviour settings, the tool
allowlist (the worker gives the schemas) and the name and version of its label."""


def sparse_settings(settings: AgentSettings) -> dict[str, Any]:
    """The settings of `settings` its definition is made of (`DEFINING`), as JSON, without those
    left at their defaults: `definition_of` gives the same definition from them
    (`AgentSettings.model_validate`), and for most runs they are a few names where the
    definition is kilobytes. Who runs it, and an eval's recorded tool outputs, stay out."""
    return settings.model_dump(mode="json", include=set(DEFINING), exclude_defaults=True)


def worker_settings(settings: AgentSettings, defined: Mapping[str, Any] | None) -> AgentSettings:
    """The settings a run of `settings` gets from the worker's current definition of its agent
    (`defined`: the run settings that agent defines, `Agent.defined_settings`): those replace
    the run's own; the rest (tenant, starter, memory scope, what a client set that the agent does
    not define) stay. None: the worker does not define the agent; the run's settings stand."""
    if defined is None:
        return settings
    return AgentSettings.model_validate({**own_settings(settings), **defined})


def settings_of(settings: AgentSettings, definition: AgentDefinition) -> AgentSettings:
    """The settings of a run of `settings` that migrates to `definition`: its prompt, tools
    (by name), model, fallbacks, policy and behaviour settings replace the run's own; who runs
    it and how its history is kept stay."""
    defined = {
        **definition.settings,
        "system_prompt": definition.system_prompt,
        "tools": [tool.name for tool in definition.tools],
        "model": definition.model,
        "fallback_models": definition.fallback_models,
        "approval_policy": definition.approval_policy,
        "on_new_definition": definition.on_new_definition,
        "agent_name": None if definition.name == UNNAMED_AGENT else definition.name,
        "agent_version": definition.version,
    }
    return AgentSettings.model_validate({**own_settings(settings), **defined})


def own_settings(settings: AgentSettings) -> dict[str, Any]:
    """The settings alone of `settings` (an `AgentInput` holds its links and prompt too)."""
    return settings.model_dump(include=set(AgentSettings.model_fields))


def started_record(definition: AgentDefinition) -> DefinitionRecord:
    """What a run records as it starts: the definition it goes by."""
    return DefinitionRecord(
        outcome="started",
        current=definition.digest,
        label=definition.label,
        definition=definition,
    )


def same_definition(running: AgentDefinition, worker: AgentDefinition) -> bool:
    """Whether two definitions are one: the same digest and the same label."""
    return (running.digest, running.label) == (worker.digest, worker.label)


def turn_record(running: AgentDefinition, worker: AgentDefinition, turn: int) -> DefinitionRecord:
    """At the boundary before `turn`: the worker's definition is the `same` as the one the run
    goes by (digest and label), or it differs and the run migrates to it where the worker's
    definition says `on_new_definition: migrate_at_turn`, else keeps its own."""
    same = same_definition(running, worker)
    migrate = not same and worker.on_new_definition == "migrate_at_turn"
    return DefinitionRecord(
        outcome="same" if same else "migrated" if migrate else "kept",
        turn=turn,
        previous=running.digest,
        current=worker.digest,
        label=worker.label,
        definition=worker if migrate else None,
    )


def end_record(running: AgentDefinition, worker: AgentDefinition) -> DefinitionRecord:
    """As a one-shot run ends: the worker's definition is the `same`, or it differs and the run
    `kept` its own to the end (a one-shot run is one turn: it has no boundary to migrate at)."""
    return DefinitionRecord(
        outcome="same" if same_definition(running, worker) else "kept",
        previous=running.digest,
        current=worker.digest,
        label=worker.label,
    )


def pinned_tools(
    offered: Sequence[ToolSchema], definition: AgentDefinition, worker_tools: Collection[str]
) -> list[ToolSchema]:
    """What the model is told about the tools of a run that goes by `definition` on a worker
    whose own tools (`worker_tools`) may have changed since: each of the worker's tools in the
    definition with the schema the definition recorded, the worker's tools it lacks left out;
    the run's other callees (MCP tools, agents, client tools, `final_result`) as offered."""
    recorded = {tool.name: tool for tool in definition.tools}
    return [
        recorded.get(tool.name, tool)
        for tool in offered
        if tool.name in recorded or tool.name not in worker_tools
    ]
