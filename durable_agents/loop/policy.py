"""The approval policy as pure functions: which rule applies to a call, what it means, and
whether a run's policy may be used at all.

A run's policy can add `ask` and `deny` freely. It may `auto`-run a tool whose own definition
requires approval only when the worker allows it (`ALLOW_RUN_AUTO_APPROVE=true`): a run cannot
switch off the safety its tools were written with unless the operator said so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal

from durable_agents.contracts.policy import ApprovalPolicy, ApprovalRule, RepeatSetting
from durable_agents.loop.approvals import needs_approval
from durable_agents.tools.definition import Tool

Verdict = Literal["ask", "auto", "deny"]
TOOL_DEFINITION = "tool definition"


@dataclass(frozen=True)
class PolicyVerdict:
    """What happens to one call, and which rule (or the tool's definition) said so."""

    action: Verdict
    because: str
    repeat: RepeatSetting = "flag"
    """What happens to a call identical to one that already succeeded (`loop.repetition`)."""


def matching_rule(policy: ApprovalPolicy | None, tool: str) -> ApprovalRule | None:
    """The first rule whose glob matches `tool` (case-sensitive), or None."""
    if policy is None:
        return None
    return next((rule for rule in policy.rules if fnmatchcase(tool, rule.tools)), None)


def requires_approval_by_definition(item: Tool) -> bool:
    """The tool's own definition can make a call wait (always, or for some arguments)."""
    rule = item.options.requires_approval
    return callable(rule) or bool(rule)


def verdict(
    policy: ApprovalPolicy | None, item: Tool | None, tool: str, args: Mapping[str, Any]
) -> PolicyVerdict:
    """What happens to a call of `tool` with these validated arguments. `item` is None for a
    tool that is not a local one (an MCP tool), which has no approval setting of its own."""
    rule = matching_rule(policy, tool)
    if rule is not None:
        return PolicyVerdict(rule.action, f"policy rule {rule}", rule.repeat or "flag")
    if item is not None and needs_approval(item, args):
        return PolicyVerdict("ask", TOOL_DEFINITION)
    return PolicyVerdict("auto", TOOL_DEFINITION)


def overridden_approvals(policy: ApprovalPolicy | None, tools: Sequence[Tool]) -> list[str]:
    """Tools whose own definition requires approval but which the policy would `auto`-run."""
    return [
        f"{item.name} ({rule})"
        for item in tools
        if requires_approval_by_definition(item)
        and (rule := matching_rule(policy, item.name)) is not None
        and rule.action == "auto"
    ]


def denied_observation(because: str) -> str:
    return f"Error: denied by policy: {because.removeprefix('policy rule ')}. Do not call it again."
