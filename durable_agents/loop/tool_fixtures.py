"""Answering tool calls from recorded outputs (`contracts.tool_fixtures`): a pure lookup by tool
name and arguments, with the use of each recorded output counted, so that two identical calls
get the two outputs recorded for them, in order."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from durable_agents.contracts.tool_fixtures import ToolFixture, new_tool_call_observation


def call_key(tool: str, args: Mapping[str, Any]) -> str:
    """A tool call's identity: its name and the canonical JSON of its arguments."""
    return tool + "\0" + json.dumps(args, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class FixtureAnswer:
    """What a call is answered with: the observation, its status, and whether the recording
    had an output for it (False: a new tool call, not run)."""

    observation: str
    status: str
    recorded: bool


@dataclass
class FixtureBook:
    """The recorded outputs of one run, and how many of each key were used."""

    fixtures: Sequence[ToolFixture]
    used: dict[str, int] = field(default_factory=dict)

    def answer(self, tool: str, args: Mapping[str, Any]) -> FixtureAnswer:
        """The next recorded output of this call (the last one again once all were used),
        or the observation of a new tool call."""
        key = call_key(tool, args)
        matches = [f for f in self.fixtures if call_key(f.tool, f.args) == key]
        if not matches:
            return FixtureAnswer(new_tool_call_observation(tool), "error", recorded=False)
        n = self.used.get(key, 0)
        self.used[key] = n + 1
        found = matches[min(n, len(matches) - 1)]
        return FixtureAnswer(found.observation, found.status, recorded=True)
