"""The tool registry: tools by name. The loop asks it for schemas and argument models only."""

from __future__ import annotations

from collections.abc import Iterable

from durable_agents.tools.definition import Tool


class ToolRegistry:
    """An ordered set of tools with unique names."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for item in tools:
            self.register(item)

    def register(self, item: Tool) -> Tool:
        """Add a tool; a second tool with the same name is an error."""
        if item.name in self._tools:
            raise ValueError(f"a tool named {item.name!r} is already registered")
        self._tools[item.name] = item
        return item

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def all(self) -> list[Tool]:
        return list(self._tools.values())

    def select(self, allowlist: Iterable[str] | None) -> list[Tool]:
        """The tools named in `allowlist` (all of them when None), in registry order."""
        if allowlist is None:
            return self.all()
        wanted = set(allowlist)
        return [t for t in self._tools.values() if t.name in wanted]
