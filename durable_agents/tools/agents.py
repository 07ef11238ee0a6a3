"""Agent profiles: named agents a run may hand work to (`"agents": ["researcher"]`). Each is
offered to the model as a tool taking a task; a call runs the profile as a child
`AgentWorkflow`, its own run in the Web UI, linked from the parent."""

from __future__ import annotations

from collections.abc import Iterable

from durable_agents.contracts.agents import AgentProfile

RESEARCHER = AgentProfile(
    name="researcher",
    description="Hand a research question to a researcher agent, which works it out with the "
    "calculator, the clock and the workspace files and reports what it found. Give it the whole "
    "question: it sees nothing else.",
    system_prompt="You are a careful researcher. Work out the task you are given with your "
    "tools, check your numbers, and report what you found in a few sentences.",
    tools=["calculator", "current_time", "read_file"],
    max_iterations=8,
)


class AgentProfiles:
    """Agent profiles by name."""

    def __init__(self, profiles: Iterable[AgentProfile] = ()) -> None:
        self._profiles: dict[str, AgentProfile] = {}
        for profile in profiles:
            self.register(profile)

    def register(self, profile: AgentProfile) -> AgentProfile:
        if profile.name in self._profiles:
            raise ValueError(f"an agent profile named {profile.name!r} is already registered")
        self._profiles[profile.name] = profile
        return profile

    def get(self, name: str) -> AgentProfile | None:
        return self._profiles.get(name)

    def names(self) -> list[str]:
        return list(self._profiles)

    def by_name(self) -> dict[str, AgentProfile]:
        return dict(self._profiles)

    def select(self, names: Iterable[str]) -> list[AgentProfile]:
        wanted = set(names)
        return [p for p in self._profiles.values() if p.name in wanted]


AGENT_PROFILES = AgentProfiles([RESEARCHER])
"""The agents runs can hand work to; an application adds its own with
`AGENT_PROFILES.register(AgentProfile(...))`."""
