"""An agent's definition as a run records it: what shapes the run's behaviour (system prompt,
tools with their schemas, model and fallbacks, approval policy, the settings that change what it
does), with an identity, its digest, and a human label `name@version`.

A run records the definition it starts with in its history (the `record_definition` activity's
result, `DefinitionRecord`), and at each turn boundary of a session what it found on
the worker then and what it did about it: kept its definition, or migrated to the worker's
(`loop.definition`, docs/concepts/definitions.md).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from durable_agents.contracts.model_io import ToolSchema
from durable_agents.contracts.omitted import none_omitted
from durable_agents.contracts.policy import ApprovalPolicy

OnNewDefinition = Literal["keep", "migrate_at_turn"]
"""What a waiting session does at its next turn boundary when the worker's definition of its
agent differs from the one it runs: `keep` its own (the default), or `migrate_at_turn` to the
worker's. Read from the worker's (new) definition: its author decides whether the change should
reach conversations already under way."""

DefinitionOutcome = Literal["started", "same", "kept", "migrated"]
"""`started`: the definition a run starts with; at a turn boundary: the worker's is the `same`,
or it differs and the run `kept` its own, or `migrated` to the worker's."""

UNNAMED_AGENT = "assistant"
"""The name in the label of a run that names no agent (the default agent, whose settings come
from the run's input alone)."""

RECORD_DEFINITION_ACTIVITY = "record_definition"
"""The activity whose result records a `DefinitionRecord` in the run's history."""


class AgentDefinition(BaseModel):
    """What a run of an agent goes by. `digest` is the sha256 of the canonical JSON of every
    field but `name`, `version` and `digest` (`loop.definition.definition_digest`): two runs
    with one digest were told the same things."""

    model_config = ConfigDict(frozen=True)

    name: str = UNNAMED_AGENT
    version: str | None = none_omitted(
        description="The version the agent declares (`Agent(version=...)`, `agent_version`); "
        "None: the label shows the digest's first 12 hex digits instead."
    )
    system_prompt: str
    tools: list[ToolSchema] = Field(
        default=[], description="The worker's tools the run may call, with their JSON schemas."
    )
    model: str | None = None
    """None: the worker's default model."""
    fallback_models: list[str] = []
    approval_policy: ApprovalPolicy | None = None
    on_new_definition: OnNewDefinition = "keep"
    settings: dict[str, Any] = Field(
        default={},
        description="The other settings that shape what the run does (limits, mode, output, "
        "agents, MCP servers, client tools, ...), by name.",
    )
    digest: str = ""

    @property
    def label(self) -> str:
        """`name@version`, the version being the digest's first 12 hex digits when the
        agent declares none."""
        return f"{self.name}@{self.version or self.digest[:12]}"


class DefinitionRequest(BaseModel):
    """The `record_definition` activity's input as a run (or a session's first turn) starts,
    under the patch `agent-definition-once`: the run's settings that make its definition and
    differ from their defaults (`loop.definition.sparse_settings`).
    The activity makes the definition from them and its worker's tools, so the history holds the
    definition once, in the activity's result (`DefinitionRecord`, `started`), not also in its
    input as `agent-definition` recorded it."""

    settings: dict[str, Any] = Field(
        description="`AgentSettings` as JSON: those the definition is made of, without the "
        "ones left at their defaults."
    )


class DefinitionRecord(BaseModel):
    """What a run records about its definition: the `record_definition` activity's result, so
    replay reads back what the first execution saw (at a turn boundary the workflow makes the
    record and the activity echoes it; as a run starts the activity makes it from a
    `DefinitionRequest`, or echoed it too under `agent-definition` alone).

    At the start: `outcome` `started`, `definition` the run's. At a session's turn boundary:
    the digest the run had (`previous`), the worker's (`current`, with its `label`), and the
    outcome; `definition` is the one the run goes by from now on when that changed (`started`,
    `migrated`), else None (the record stays small)."""

    outcome: DefinitionOutcome
    turn: int | None = none_omitted()
    previous: str | None = none_omitted(description="The digest the run had before.")
    current: str = Field(description="The digest of the worker's definition.")
    label: str = Field(description="The label of the worker's definition.")
    definition: AgentDefinition | None = none_omitted()
