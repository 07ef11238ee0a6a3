"""The `guide` and a tool only the client can run: the user's location. The run declares it in
its input (`client_tools`); a call of it waits durably until the client sends the result (the
`tool_result` update), which is checked against the tool's `result_schema` before anything
enters history.
"""

from __future__ import annotations

from typing import Any

from durable_agents import Agent

GET_LOCATION: dict[str, Any] = {
    "name": "get_location",
    "description": "The user's city, from their device.",
    "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
    "result_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
"""A client tool, as the run's input declares it: name, description, JSON Schemas."""

guide: Agent[None] = Agent(
    "guide",
    instructions="Recommend things to do nearby; ask the device for the user's location first.",
    client_tools=[GET_LOCATION],
)
