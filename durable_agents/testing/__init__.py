"""Testing helpers for applications built on durable agents.

- `TestModel`: scripted replies (`text`, `call`, `calls`, `error`), in order.
- `FunctionModel`: a function decides each reply from the messages so far (`ModelCall`).
- `AgentTestEnvironment`: a real Temporal server (time-skipping by default) with a worker that
  serves your agents through `DurableAgentsPlugin`.

Models answer through a fake OpenAI-compatible server on 127.0.0.1 and the real `openai`
client (`durable_agents.testing.fake_openai`, which tests can also drive directly).
"""

from durable_agents.testing.environment import AgentTestEnvironment
from durable_agents.testing.models import (
    FunctionModel,
    ModelCall,
    TestModel,
    call,
    calls,
    error,
    text,
)

__all__ = [
    "AgentTestEnvironment",
    "FunctionModel",
    "ModelCall",
    "TestModel",
    "call",
    "calls",
    "error",
    "text",
]
