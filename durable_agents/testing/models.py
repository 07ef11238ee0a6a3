"""Models for users' tests: scripted (`TestModel`) or decided by a function (`FunctionModel`).

Both answer through a fake OpenAI-compatible server on 127.0.0.1 (`fake_openai`) and the real
`openai` client, so a test exercises the same wire path as production: the model activity, its
parsing, retries and the history it records. Give one to an agent with
`agent.override(model=...)`; a worker whose `DurableAgentsPlugin` serves that agent answers the
override's model name with it.

    with shop.override(model=TestModel([call("price", item="shirt"), text("25 dollars")])):
        ...  # start runs of shop; they get these replies, in order
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from durable_agents.activities.chat_model import ChatModel
from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.testing.fake_openai import (
    Completion,
    FakeOpenAIServer,
    RecordedRequest,
    ReplyLike,
    error,
    text,
    tool_calls,
)
from durable_agents.testing.fake_openai import call as tool_call

__all__ = ["FunctionModel", "ModelCall", "TestModel", "call", "calls", "error", "text"]

_numbers = itertools.count(1)


def call(name: str, /, **arguments: Any) -> Completion:
    """A reply that calls one tool: `call("price", item="shirt")`."""
    return tool_calls(tool_call(name, arguments))


def calls(*replies: Completion) -> Completion:
    """One reply that makes several tool calls: `calls(call("a"), call("b", x=1))`."""
    return tool_calls(*(made for reply in replies for made in reply.tool_calls))


class _ServedModel:
    """A fake server started on first use, and the real `openai` client's backend for it."""

    __test__ = False  # not a pytest test class, whatever its subclass is called

    def __init__(self, name: str | None, kind: str) -> None:
        self._name = name or f"{kind}-{next(_numbers)}"
        self.server = FakeOpenAIServer()
        self._backend: ChatModel | None = None

    @property
    def name(self) -> str:
        """The model name runs send while an agent is overridden with this model."""
        return self._name

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request the model was sent, oldest first (messages, tools, model)."""
        return self.server.requests

    def chat_model(self) -> ChatModel:
        """The backend a worker answers this model's name with (starts the server)."""
        if self._backend is None:
            self.server.start()
            self._backend = OpenAIChatModel(
                api_key="test", base_url=self.server.base_url, default_model=self._name,
                streaming=False,
            )  # fmt: skip
        return self._backend

    def close(self) -> None:
        """Stop the server (also done when the process exits)."""
        self.server.stop()


class TestModel(_ServedModel):
    """Answers each model call with the next scripted reply: `text(...)`, `call(...)`,
    `calls(...)`, `error(status, message)`. A call after the last reply gets a 400 error that
    says so, which fails the run's model call with that message instead of hanging."""

    def __init__(self, replies: Sequence[ReplyLike] = (), *, name: str | None = None) -> None:
        super().__init__(name, "test-model")
        self.scripted = len(replies)
        self.server.enqueue(*replies)
        self.server.set_handler(self._exhausted)

    def _exhausted(self, body: dict[str, Any]) -> ReplyLike:
        return error(
            400,
            f"TestModel {self.name!r} has no reply left: {self.scripted} were scripted and "
            f"the agent asked for call {len(self.requests)}",
        )


class ModelCall:
    """What a `FunctionModel`'s function is given: the request's messages and tools."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.messages: list[dict[str, Any]] = list(body.get("messages", []))
        self.tools: list[dict[str, Any]] = list(body.get("tools", []))

    @property
    def last_message(self) -> dict[str, Any]:
        """The newest message (a tool result after a call, else the user's prompt)."""
        return self.messages[-1] if self.messages else {}

    @property
    def tool_names(self) -> list[str]:
        return [tool["function"]["name"] for tool in self.tools]


class FunctionModel(_ServedModel):
    """Answers each model call with `function(ModelCall)`: a reply decided by the messages so
    far (`text`, `call`, `calls`, `error`)."""

    def __init__(
        self, function: Callable[[ModelCall], ReplyLike], *, name: str | None = None
    ) -> None:
        super().__init__(name, "function-model")
        self.server.set_handler(lambda body: function(ModelCall(body)))
