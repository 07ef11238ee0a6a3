"""What differs between two agent definitions (`agent diff RUN_A RUN_B`): a unified diff of the
system prompts, the tools added, removed or changed (description, JSON schema), the model and
fallbacks, the approval policy and the other settings. Pure: no Temporal, no I/O."""

from __future__ import annotations

import difflib
import json
from typing import Any

from pydantic import BaseModel

from durable_agents.contracts.definition import AgentDefinition
from durable_agents.contracts.model_io import ToolSchema


class Change(BaseModel):
    """A value in the first definition and in the second."""

    before: Any = None
    after: Any = None


class ToolChange(BaseModel):
    """A tool both definitions have, told to the model differently."""

    name: str
    description: Change | None = None
    schema_diff: list[str] = []
    """A unified diff of its parameters' JSON schema (indented, sorted keys)."""


class DefinitionDiff(BaseModel):
    """The differences from definition `a` to definition `b` (`same`: none, digests equal)."""

    a: str
    b: str
    a_digest: str
    b_digest: str
    same: bool
    prompt_diff: list[str] = []
    tools_added: list[str] = []
    tools_removed: list[str] = []
    tools_changed: list[ToolChange] = []
    model: Change | None = None
    fallback_models: Change | None = None
    approval_policy: Change | None = None
    on_new_definition: Change | None = None
    settings: dict[str, Change] = {}


def unified(before: str, after: str, names: tuple[str, str]) -> list[str]:
    """The unified diff of two texts, line by line (empty when they are equal)."""
    return list(
        difflib.unified_diff(
            before.splitlines(), after.splitlines(), fromfile=names[0], tofile=names[1], lineterm=""
        )
    )


def schema_text(tool: ToolSchema) -> str:
    return json.dumps(tool.parameters, indent=2, sort_keys=True, ensure_ascii=False)


def tool_change(a: ToolSchema, b: ToolSchema, names: tuple[str, str]) -> ToolChange | None:
    """How a tool of both definitions changed, or None."""
    described = a.description != b.description
    schema = unified(schema_text(a), schema_text(b), names)
    if not described and not schema:
        return None
    description = Change(before=a.description, after=b.description) if described else None
    return ToolChange(name=a.name, description=description, schema_diff=schema)


def changed(before: Any, after: Any) -> Change | None:
    return None if before == after else Change(before=before, after=after)


def dumped(value: BaseModel | None) -> Any:
    return value.model_dump(mode="json") if value is not None else None


def definition_diff(
    a: AgentDefinition, b: AgentDefinition, names: tuple[str, str] = ("a", "b")
) -> DefinitionDiff:
    """What differs from `a` to `b`; `names` head the unified diffs (the runs' ids)."""
    tools_a = {tool.name: tool for tool in a.tools}
    tools_b = {tool.name: tool for tool in b.tools}
    both = [name for name in tools_a if name in tools_b]
    tool_changes = [tool_change(tools_a[name], tools_b[name], names) for name in both]
    keys = sorted({*a.settings, *b.settings})
    settings = {k: Change(before=a.settings.get(k), after=b.settings.get(k)) for k in keys}
    return DefinitionDiff(
        a=a.label,
        b=b.label,
        a_digest=a.digest,
        b_digest=b.digest,
        same=a.digest == b.digest,
        prompt_diff=unified(a.system_prompt, b.system_prompt, names),
        tools_added=sorted(set(tools_b) - set(tools_a)),
        tools_removed=sorted(set(tools_a) - set(tools_b)),
        tools_changed=[change for change in tool_changes if change is not None],
        model=changed(a.model, b.model),
        fallback_models=changed(a.fallback_models, b.fallback_models),
        approval_policy=changed(dumped(a.approval_policy), dumped(b.approval_policy)),
        on_new_definition=changed(a.on_new_definition, b.on_new_definition),
        settings={k: c for k, c in settings.items() if c.before != c.after},
    )


def shown(value: Any) -> str:
    """A value as the text diff shows it: JSON."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def diff_lines(diff: DefinitionDiff) -> list[str]:
    """The diff as a person reads it."""
    head = f"{diff.a} ({diff.a_digest[:12]}) -> {diff.b} ({diff.b_digest[:12]})"
    if diff.same:
        return [f"same definition: {head}"]
    lines = [f"definitions: {head}"]
    if diff.prompt_diff:
        lines += ["system prompt:", *(f"  {line}" for line in diff.prompt_diff)]
    lines += [f"tool added: {name}" for name in diff.tools_added]
    lines += [f"tool removed: {name}" for name in diff.tools_removed]
    for tool in diff.tools_changed:
        lines.append(f"tool changed: {tool.name}")
        if tool.description is not None:
            lines.append(f"  description: {shown(tool.description.before)} -> "
                         f"{shown(tool.description.after)}")  # fmt: skip
        lines += [f"  {line}" for line in tool.schema_diff]
    for name in ("model", "fallback_models", "approval_policy", "on_new_definition"):
        change: Change | None = getattr(diff, name)
        if change is not None:
            lines.append(f"{name}: {shown(change.before)} -> {shown(change.after)}")
    for name, change in diff.settings.items():
        lines.append(f"setting {name}: {shown(change.before)} -> {shown(change.after)}")
    return lines
