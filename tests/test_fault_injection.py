"""Fault injection at the model provider: every run either completes (a good reply comes within
`model_max_attempts`) or fails with a clear `ModelCallFailed` error (the faults outlast the
attempts). Nothing hangs: every wait is bounded.

The real worker (in-process) and the real `openai` client talk to the fake server, which answers
each request from a script: HTTP 429 with and without `Retry-After`, 500/502/503, replies slower
than `model_timeout_seconds`, dropped connections, bodies that are not JSON, valid prefixes of a
JSON body, a 200 without choices. The number of requests the fake server saw must equal the
number of attempts Temporal recorded. Whose delay was used (the retry policy's 1 s, 2 s, ... or
the provider's `Retry-After`) shows in history, as the `next_retry_delay` the failure handed to
Temporal, and as a lower bound on the time between requests (never an upper bound: a slow machine
may always take longer).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowHandle, WorkflowHistory
from temporalio.exceptions import ApplicationError

from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.errors import MODEL_CALL_FAILED
from durable_agents.testing import fake_openai as fake
from tests.conftest import AgentHarness

RUN_TIMEOUT = 30.0
ANSWER = "the good reply"


class TimedScript:
    """A fake-server handler: serves `replies` in order and notes when each request arrived."""

    def __init__(self, replies: Sequence[fake.ReplyLike]) -> None:
        self._replies = deque(replies)
        self._lock = threading.Lock()
        self.arrivals: list[float] = []

    def __call__(self, body: dict[str, Any]) -> fake.ReplyLike:
        with self._lock:
            self.arrivals.append(time.monotonic())
            if self._replies:
                return self._replies.popleft()
        return fake.error(500, "fault script exhausted", headers={"x-should-retry": "false"})

    @property
    def left(self) -> int:
        with self._lock:
            return len(self._replies)

    @property
    def gaps(self) -> list[float]:
        return [b - a for a, b in zip(self.arrivals, self.arrivals[1:], strict=False)]


def completion_json(content: str = "partial answer") -> str:
    return json.dumps(
        {
            "id": "chatcmpl-fault",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "fake-model-1",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": None},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }
    )


FULL_BODY = completion_json()
NOT_JSON = fake.raw(200, b"{not json")
TRUNCATED = fake.raw(200, FULL_BODY[: len(FULL_BODY) // 2])
NO_CHOICES = fake.raw(
    200,
    json.dumps(
        {"id": "chatcmpl-empty", "object": "chat.completion", "created": 0, "model": "m",
         "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 0, "total_tokens": 1}}
    ),
)  # fmt: skip
EMPTY_BODY = fake.raw(200, b"")
HTML_PAGE = fake.raw(
    200, b"<html><body>502 Bad Gateway</body></html>", {"Content-Type": "text/html"}
)
SLOW = fake.delay(5, fake.text("too late"))  # runs below use model_timeout_seconds=1


@dataclass(frozen=True)
class Case:
    """A script of faults (and perhaps a good reply) and what the run must do with it."""

    replies: tuple[fake.ReplyLike, ...]
    max_attempts: int
    error: str | None = None  # None: the run completes; else a part of the failure message
    timeout_seconds: float | None = None
    min_gaps: tuple[float, ...] = ()  # lower bounds on the time between requests
    asked_delay: float | None = None  # next_retry_delay of the failure before the last attempt

    @property
    def requests(self) -> int:
        return len(self.replies)


def ok(*faults: fake.ReplyLike) -> tuple[fake.ReplyLike, ...]:
    return (*faults, fake.text(ANSWER))


def e429(**headers: str) -> fake.ErrorReply:
    return fake.error(429, "Rate limit reached for requests", headers=headers)


CASES: dict[str, Case] = {
    # -- completes: the good reply comes within the attempts --------------------------------
    "429 burst, no Retry-After: policy backoff 1 s then 2 s": Case(
        ok(e429(), e429()), max_attempts=3, min_gaps=(0.9, 1.8)
    ),
    "429 with Retry-After seconds waits longer than the policy": Case(
        ok(e429(**{"Retry-After": "2"})), max_attempts=2, min_gaps=(1.9,), asked_delay=2.0
    ),
    # The policy's second delay is 2 s; the header asks Temporal for 0.1 s instead.
    "429 burst with retry-after-ms retries sooner than the policy": Case(
        ok(e429(**{"retry-after-ms": "100"}), e429(**{"retry-after-ms": "100"})),
        max_attempts=3,
        asked_delay=0.1,
    ),
    "502 then a good reply": Case(ok(fake.error(502)), max_attempts=2),
    "reply slower than model_timeout_seconds, then a good one": Case(
        ok(SLOW), max_attempts=2, timeout_seconds=1
    ),
    "dropped connection then a good reply": Case(ok(fake.drop()), max_attempts=2),
    "malformed JSON body then a good reply": Case(ok(NOT_JSON), max_attempts=2),
    "truncated JSON body then a good reply": Case(ok(TRUNCATED), max_attempts=2),
    "200 without choices then a good reply": Case(ok(NO_CHOICES), max_attempts=2),
    "empty 200 body then a good reply": Case(ok(EMPTY_BODY), max_attempts=2),
    # Policy delays would be 1 + 2 + 4 + 8 s; the last two faults ask for 1 s each.
    "mixed burst of four faults within five attempts": Case(
        ok(
            fake.drop(),
            TRUNCATED,
            e429(**{"Retry-After": "1"}),
            fake.error(503, headers={"retry-after-ms": "1000"}),
        ),
        max_attempts=5,
        min_gaps=(0.9, 1.8, 0.9, 0.9),
        asked_delay=1.0,
    ),
    # -- fails: the faults outlast the attempts ---------------------------------------------
    "500, 502, 503 exhaust three attempts": Case(
        (fake.error(500), fake.error(502), fake.error(503, "still overloaded")),
        max_attempts=3,
        error="model provider answered 503: still overloaded",
    ),
    "429 burst exhausts two attempts": Case(
        (e429(**{"retry-after-ms": "50"}), e429(**{"retry-after-ms": "50"})),
        max_attempts=2,
        error="model provider answered 429: Rate limit reached",
    ),
    "timeouts exhaust two attempts": Case(
        (SLOW, SLOW), max_attempts=2, timeout_seconds=1, error="StartToClose timeout"
    ),
    "dropped connections exhaust two attempts": Case(
        (fake.drop(), fake.drop()), max_attempts=2, error="cannot reach the model provider"
    ),
    "malformed bodies exhaust two attempts": Case(
        (NOT_JSON, NOT_JSON), max_attempts=2, error="unusable answer from the model provider"
    ),
    "no choices exhaust two attempts": Case(
        (NO_CHOICES, NO_CHOICES), max_attempts=2, error="returned no choices"
    ),
    "a 503 marked x-should-retry: false fails at once": Case(
        (fake.error(503, "maintenance", headers={"x-should-retry": "false"}),),
        max_attempts=3,
        error="model provider answered 503: maintenance",
    ),
    # A 200 whose body is not a chat completion object (an HTML page from a proxy, a choice
    # without a message) is an unusable answer like a malformed body, not a bare Python error.
    "a 200 HTML page exhausts one attempt": Case(
        (HTML_PAGE,), max_attempts=1, error="unusable answer from the model provider"
    ),
    "a 200 whose choice has no message exhausts one attempt": Case(
        (fake.raw(200, b'{"choices": [{"index": 0, "message": null}]}'),),
        max_attempts=1,
        error="unusable answer from the model provider",
    ),
    "a 200 HTML page then a good reply": Case(ok(HTML_PAGE), max_attempts=2),
    "a 400 fails at once": Case(
        (fake.error(400, "messages: too long"),),
        max_attempts=3,
        error="model provider answered 400: messages: too long",
    ),
}


def model_call_starts(history: WorkflowHistory) -> list[Any]:
    """The `ActivityTaskStarted` attributes of each finished `call_model` activity (not the
    run's other activities: its definition record, issue 37)."""
    model_calls = {
        e.event_id
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == "call_model"
    }
    return [
        e.activity_task_started_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
        and e.activity_task_started_event_attributes.scheduled_event_id in model_calls
    ]


async def model_attempts(handle: WorkflowHandle[Any, Any]) -> list[int]:
    """The attempt number Temporal recorded for each finished `call_model` activity."""
    return [started.attempt for started in model_call_starts(await handle.fetch_history())]


async def asked_retry_delay(handle: WorkflowHandle[Any, Any]) -> timedelta | None:
    """The `next_retry_delay` that the failure before the last `call_model` attempt handed to
    Temporal (from the provider's Retry-After / retry-after-ms), as recorded in history."""
    [last_attempt] = model_call_starts(await handle.fetch_history())
    assert last_attempt.attempt > 1 and last_attempt.HasField("last_failure")
    info = last_attempt.last_failure.application_failure_info
    if not info.HasField("next_retry_delay"):
        return None
    return info.next_retry_delay.ToTimedelta()


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
async def test_model_faults_complete_or_fail_clearly(agent: AgentHarness, case: Case) -> None:
    script = TimedScript(case.replies)
    agent.fake.set_handler(script)
    payload: dict[str, Any] = {
        "prompt": "answer despite faults",
        "tools": [],
        "model_max_attempts": case.max_attempts,
    }
    if case.timeout_seconds is not None:
        payload["model_timeout_seconds"] = case.timeout_seconds
    handle = await agent.start(payload)

    try:
        outcome: AgentResult | BaseException = await asyncio.wait_for(handle.result(), RUN_TIMEOUT)
    except WorkflowFailureError as failure:
        outcome = failure
    except TimeoutError:
        raise AssertionError(
            f"the run hung: {agent.fake.request_count} requests after {RUN_TIMEOUT}s"
        ) from None

    if case.error is None:
        assert isinstance(outcome, AgentResult), f"the run failed: {outcome!r}"
        assert (outcome.answer, outcome.stop_reason) == (ANSWER, "completed")
        assert outcome.iterations == 1
    else:
        assert isinstance(outcome, WorkflowFailureError), f"the run completed: {outcome!r}"
        cause = outcome.cause
        assert isinstance(cause, ApplicationError)
        assert cause.type == MODEL_CALL_FAILED
        assert cause.non_retryable
        assert cause.message.startswith("model call failed at turn 1: "), cause.message
        assert case.error in cause.message, cause.message
        description = await handle.describe()
        assert description.status is not None and description.status.name == "FAILED"

    # One request per attempt, exactly as many as the script has, and Temporal agrees.
    assert agent.fake.request_count == case.requests
    assert script.left == 0
    assert await model_attempts(handle) == [case.requests]
    for gap, least in zip(script.gaps, case.min_gaps, strict=False):
        assert gap >= least, f"retried after {gap:.2f}s, expected at least {least}s"
    if case.requests > 1 and case.error is None:
        asked = case.asked_delay
        assert await asked_retry_delay(handle) == (
            None if asked is None else timedelta(seconds=asked)
        )
    assert agent.fake.errors == []


async def test_faults_spread_over_several_turns_and_runs(agent: AgentHarness) -> None:
    """Several concurrent runs, each with faults before each of its model calls and a tool call in
    between: all complete, the tool runs once per run, and every fault cost exactly one request."""

    faults: list[fake.ReplyLike] = [
        fake.error(502),
        fake.drop(),
        NOT_JSON,
        e429(**{"retry-after-ms": "100"}),
    ]
    lock = threading.Lock()
    served: dict[tuple[str, int], int] = {}

    def handler(body: dict[str, Any]) -> fake.ReplyLike:
        prompt = body["messages"][1]["content"]
        turn = 1 + sum(1 for m in body["messages"] if m["role"] == "tool")
        with lock:
            seen = served.get((prompt, turn), 0)
            served[(prompt, turn)] = seen + 1
        run = int(prompt.split()[-1])
        if seen == 0:  # the first request of every turn fails, each run its own way
            return faults[(run + turn) % len(faults)]
        if turn == 1:
            return fake.tool_calls(fake.call("echo", {"text": f"tool {run}"}))
        return fake.text(f"answer {run}")

    agent.fake.set_handler(handler)
    handles = [
        await agent.start({"prompt": f"faulty run {i}", "tools": ["echo"], "model_max_attempts": 3})
        for i in range(4)
    ]
    results = await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), RUN_TIMEOUT)

    assert [r.answer for r in results] == [f"answer {i}" for i in range(4)]
    assert [[s.observation for s in r.steps] for r in results] == [[f"tool {i}"] for i in range(4)]
    assert served == {(f"faulty run {i}", t): 2 for i in range(4) for t in (1, 2)}
    assert agent.fake.request_count == 4 * 2 * 2
    for handle in handles:
        assert await model_attempts(handle) == [2, 2]
    assert agent.fake.errors == []
