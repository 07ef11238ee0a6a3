"""A run's approval policy: rules matched in order against tool names (globs), each saying
whether a call waits for a person (`ask`), runs (`auto`) or never runs (`deny`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from durable_agents.contracts.omitted import none_omitted
from durable_agents.contracts.principals import Role

PolicyAction = Literal["ask", "auto", "deny"]
RepeatSetting = Literal["flag", "refuse"]
"""What happens to a call identical to one that already ran and succeeded in the run: `flag`
(the default) tells the person asked to approve it that it is a repeat; `refuse` never runs it
(the model is told it already ran, and what it returned)."""
WORKER_POLICY_ACTIVITY = "worker_policy"


class WorkerPolicy(BaseModel):
    """What the worker's operator allows runs to do."""

    allow_run_auto_approve: bool = False
    """A run's policy may `auto`-run tools whose definition requires approval
    (`ALLOW_RUN_AUTO_APPROVE=true`)."""


class ApprovalRequirement(BaseModel):
    """Who may approve a call a rule makes wait: `{"distinct_from_starter": true, "role":
    "approve"}`. The two-person rule: with `distinct_from_starter`, the principal who started
    the run (`AgentSettings.starter`) cannot approve it (the workflow refuses, the call keeps
    waiting); `role` is the role a server's principal needs to approve it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    distinct_from_starter: bool = False
    role: Role | None = none_omitted(
        description="The role that approves (checked by the servers' `AgentClient`)."
    )


class ApprovalRule(BaseModel):
    """`{"tools": "write_*", "action": "ask", "repeat"?: "refuse"}`: calls of matching tools get
    `action`; `repeat` says what happens to a call identical to one that already succeeded."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tools: str = Field(min_length=1, description="A glob over tool names: *, ?, [abc].")
    action: PolicyAction
    repeat: RepeatSetting | None = none_omitted(
        description="flag (unset): a repeat of a call that succeeded is shown to the person "
        "asked as a repeat; refuse: it never runs."
    )
    approval: ApprovalRequirement | None = none_omitted(
        description="Who may approve a call this rule makes wait (the two-person rule)."
    )

    def __str__(self) -> str:
        repeat = f", repeat → {self.repeat}" if self.repeat else ""
        return f"{self.tools} → {self.action}{repeat}"


class ApprovalPolicy(BaseModel):
    """Rules in order; the first whose glob matches a tool decides. A tool no rule matches
    follows its own definition (`requires_approval`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rules: list[ApprovalRule] = Field(default=[], max_length=100)
