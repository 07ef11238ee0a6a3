"""A run's approval policy: rules matched in order against tool names (globs), each saying
whether a call waits for a person (`ask`), runs (`auto`) or never runs (`deny`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

PolicyAction = Literal["ask", "auto", "deny"]
WORKER_POLICY_ACTIVITY = "worker_policy"


class WorkerPolicy(BaseModel):
    """What the worker's operator allows runs to do."""

    allow_run_auto_approve: bool = False
    """A run's policy may `auto`-run tools whose definition requires approval
    (`ALLOW_RUN_AUTO_APPROVE=true`)."""


class ApprovalRule(BaseModel):
    """`{"tools": "write_*", "action": "ask"}`: calls of matching tools get `action`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tools: str = Field(min_length=1, description="A glob over tool names: *, ?, [abc].")
    action: PolicyAction

    def __str__(self) -> str:
        return f"{self.tools} → {self.action}"


class ApprovalPolicy(BaseModel):
    """Rules in order; the first whose glob matches a tool decides. A tool no rule matches
    follows its own definition (`requires_approval`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rules: list[ApprovalRule] = Field(default=[], max_length=100)
