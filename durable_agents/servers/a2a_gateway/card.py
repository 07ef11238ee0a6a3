"""The agent card (`/.well-known/agent-card.json`): one skill per agent profile, plus the
general `assistant`; a message picks one with `metadata.agent`."""

from __future__ import annotations

from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol

from durable_agents.client.run_input import DEFAULT_AGENT, DEFAULT_AGENT_DESCRIPTION
from durable_agents.tools.agents import AgentProfiles

CARD_NAME = "Durable agents"
MODES = ["text/plain", "application/json"]


def agent_card(profiles: AgentProfiles, url: str) -> AgentCard:
    """The card of the gateway at `url` (JSON-RPC, streaming)."""
    skills = [
        AgentSkill(
            id=DEFAULT_AGENT,
            name=DEFAULT_AGENT,
            description=DEFAULT_AGENT_DESCRIPTION,
            tags=["agent", "default"],
            examples=["What is 17 * 25?"],
        )
    ]
    skills += [
        AgentSkill(
            id=profile.name,
            name=profile.name,
            description=profile.description,
            tags=["agent", "profile"],
        )
        for profile in profiles.by_name().values()
    ]
    return AgentCard(
        name=CARD_NAME,
        description="Tool-calling agents that run as durable Temporal workflows: each task is a "
        "run that survives restarts; a run that needs a person (an approval, a question) "
        "waits in input-required until the next message answers it. Pick an agent with "
        'message metadata {"agent": "<skill id>"}; run settings go in {"options": {...}}.',
        version="1.0",
        supported_interfaces=[
            AgentInterface(
                url=url,
                protocol_binding=TransportProtocol.JSONRPC.value,
                protocol_version=PROTOCOL_VERSION_CURRENT,
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=MODES,
        default_output_modes=MODES,
        skills=skills,
    )
