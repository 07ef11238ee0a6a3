"""Sub-agents: named agent profiles an application defines next to its tools, which a run may
call as tools (each call a child `AgentWorkflow`), and what a child tells its parent."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.model_io import ModelCallKind

CHILD_PENDING_SIGNAL = "child_pending"
"""Signal a child run sends its parent whenever its calls waiting for a person change."""


class AgentProfile(BaseModel):
    """A named agent a run can hand work to: its instructions, tools, model and limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
    description: str = Field(min_length=1, description="What the model is told it is for.")
    system_prompt: str = Field(min_length=1)
    tools: list[str] | None = Field(default=None, description="None: every registered tool.")
    agents: list[str] = Field(default=[], description="Profiles it may call in turn.")
    model: str | None = Field(default=None, description="None: the parent run's model.")
    max_iterations: int = Field(default=8, ge=1, le=1000)
    max_total_tokens: int | None = Field(default=None, gt=0, le=10**12)
    output_schema: dict[str, Any] | None = None
    model_call: ModelCallKind | None = Field(
        default=None,
        description="How its model calls run (`AgentSettings.model_call`); None: as the "
        "calling run's.",
    )
    definition: dict[str, Any] | None = Field(
        default=None,
        description="The run settings of an `Agent` defined in code (`Agent.defined_settings`): "
        "what a session of this agent compares its own definition with at each turn.",
    )


class ParentLink(BaseModel):
    """Set by a parent run on its child: where to report pending requests, and the key that
    names the child at the parent (`<profile>-<call id>`)."""

    workflow_id: str
    call_key: str
    token: str = ""
    """Made by the parent when it starts the child, and sent back in each `child_pending`: a
    report without it is not from a child the parent started."""


class ChildPending(BaseModel):
    """Signal `child_pending`: the child's calls (and its own children's) waiting for a
    person, as the child sees them."""

    call_key: str = Field(max_length=300)
    workflow_id: str = Field(max_length=1000)
    token: str = Field(default="", max_length=100)
    sequence: int = Field(default=0, ge=0)
    """Counts the child's reports (1, 2, ...): signals may arrive out of order, and a report
    older than one already taken is dropped. 0: a child that does not count (older code)."""
    pending: list[PendingRequest] = Field(max_length=200)


class DelegateArgs(BaseModel):
    """The arguments the model gives when it calls an agent profile."""

    model_config = ConfigDict(extra="forbid")

    task: str = Field(
        min_length=1,
        max_length=50_000,
        description="The task for this agent, self-contained: it sees nothing else.",
    )
