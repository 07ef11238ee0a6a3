"""The model API key never leaves the worker: not in workflow histories (inputs, results, failures,
retry records), not in run results or errors, not in queries or metadata, not in the worker's
logs even at DEBUG, although it is sent to the provider on every request and some providers echo
it back in error messages.

Histories are searched three ways: `to_json()` (as asked), the raw protobuf bytes (payload data
appear there verbatim), and every payload's data decoded from the JSON form's base64.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import signal
import uuid
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.history.v1 import History
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.model_errors import MIN_SECRET_PREFIX
from durable_agents.activities.model_router import ModelRouter
from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.errors import MODEL_CALL_FAILED
from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from testkit.crash_tools import WorkerCluster
from tests.conftest import FAKE_MODEL, SECRET_API_KEY, AgentHarness, started_workers
from tests.hitl_support import wait_for_pending

RUN_TIMEOUT = 30.0
SUBPROCESS_SECRET = "sk-proj-SUBPROCESS-9f8e7d6c5b4a-do-not-log"


def secret_fragments(secret: str) -> list[str]:
    """The secret, its distinctive middle part and its shortest scrubbed prefix (a partial leak
    counts too)."""
    return [secret, secret[8:-8], secret[:MIN_SECRET_PREFIX]]


def payload_texts(value: Any) -> Iterator[str]:
    """Decoded `data` of every payload inside a history in its JSON form."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "data" and isinstance(item, str):
                try:
                    yield base64.b64decode(item, validate=True).decode("utf-8", "replace")
                except ValueError:
                    yield item
            else:
                yield from payload_texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from payload_texts(item)


async def history_texts(handle: WorkflowHandle[Any, Any]) -> list[str]:
    history = await handle.fetch_history()
    as_json = history.to_json()
    raw = History(events=history.events).SerializeToString()
    return [as_json, raw.decode("utf-8", "replace"), *payload_texts(json.loads(as_json))]


async def everything_visible(handle: WorkflowHandle[Any, Any], outcome: Any) -> str:
    """All a person or tool can read about a run: history, result or error, description, queries."""
    texts = await history_texts(handle)
    description = await handle.describe()
    texts.append(str(description.raw_description))
    texts.append(repr(outcome))
    if isinstance(outcome, WorkflowFailureError):
        error: BaseException | None = outcome
        while error is not None:
            texts.append(str(error))
            if isinstance(error, ApplicationError):
                texts.append(repr(error.details))
            error = error.__cause__
    elif isinstance(outcome, AgentResult):
        texts.append(outcome.model_dump_json())
    return "\n".join(texts)


async def finish(handle: WorkflowHandle[Any, Any]) -> AgentResult | WorkflowFailureError:
    try:
        result = await asyncio.wait_for(handle.result(), RUN_TIMEOUT)
    except WorkflowFailureError as failure:
        return failure
    assert isinstance(result, AgentResult)
    return result


def assert_no_secret(text: str, secret: str, where: str) -> None:
    assert text, f"nothing to search in {where}"
    for fragment in secret_fragments(secret):
        assert fragment not in text, f"the API key (or part of it) leaked into {where}"


def model_failure(outcome: object) -> ApplicationError:
    assert isinstance(outcome, WorkflowFailureError), outcome
    cause = outcome.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == MODEL_CALL_FAILED
    return cause


async def test_the_key_appears_in_no_history_result_or_error(agent: AgentHarness) -> None:
    key = SECRET_API_KEY
    echoed = f"Incorrect API key provided: {key}. You can find your API key at ..."
    runs: dict[str, tuple[list[fake.ReplyLike], dict[str, Any]]] = {
        "tool calls": (
            [
                fake.tool_calls(
                    fake.call("echo", {"text": "hi"}),
                    fake.call("calculator", {"expression": "2*21"}),
                ),
                fake.text("42"),
            ],
            {"tools": ["echo", "calculator"]},
        ),
        "tool errors": (
            [
                fake.tool_calls(
                    fake.call("refuses", {"text": "x"}), fake.call("always_fails", {"text": "y"})
                ),
                fake.text("could not"),
            ],
            {"tools": ["refuses", "always_fails"]},
        ),
        "approval": (
            [
                fake.tool_calls(
                    fake.call("side_effect", {"label": "secret-test"}, id="a1"),
                    fake.call("pay", {"amount": 500, "to": "bob"}, id="a2"),
                ),
                fake.text("approved one, rejected one"),
            ],
            {"tools": ["side_effect", "pay"]},
        ),
        "401 echoing the key": ([fake.error(401, echoed)], {}),
        "retried 500 echoing the key": (
            [
                fake.error(500, f"upstream rejected key {key}", headers={"retry-after-ms": "50"}),
                fake.text("fine now"),
            ],
            {"model_max_attempts": 2},
        ),
        "429s echoing the key in a string body": (
            [
                fake.error(429, "", body={"error": f"quota exceeded for {key}"}),
            ],
            {"model_max_attempts": 1},
        ),
    }
    outcomes: dict[str, Any] = {}
    for name, (replies, extra) in runs.items():
        agent.fake.reset()
        agent.fake.enqueue(*replies)
        handle = await agent.start({"prompt": f"run: {name}", "tools": [], **extra})
        if name == "approval":
            await wait_for_pending(handle, count=2)
            await handle.signal("approve", {"call_id": "a1", "by": "alice"})
            await handle.signal("reject", {"call_id": "a2", "reason": "too much", "by": "alice"})
        outcome = await finish(handle)
        outcomes[name] = outcome
        # The key was really used on this run's requests.
        assert agent.fake.requests, name
        assert all(r.headers["authorization"] == f"Bearer {key}" for r in agent.fake.requests)
        assert agent.fake.pending_replies == 0, name
        assert_no_secret(await everything_visible(handle, outcome), key, f"run {name!r}")

    assert [type(outcomes[n]).__name__ for n in runs] == [
        "AgentResult", "AgentResult", "AgentResult",
        "WorkflowFailureError", "AgentResult", "WorkflowFailureError",
    ]  # fmt: skip
    # The provider's message is kept, with the key scrubbed out of it.
    unauthorized = model_failure(outcomes["401 echoing the key"])
    assert "model provider answered 401: Incorrect API key provided: ***." in unauthorized.message
    quota = model_failure(outcomes["429s echoing the key in a string body"])
    assert "model provider answered 429: quota exceeded for ***" in quota.message
    approval = outcomes["approval"]
    assert isinstance(approval, AgentResult)
    assert [s.status for s in approval.steps] == ["ok", "rejected"]


async def test_a_debug_logging_worker_process_never_prints_the_key(
    temporal_env: WorkflowEnvironment, fake_model: FakeOpenAIServer, tmp_path: Path
) -> None:
    secret = SUBPROCESS_SECRET
    cluster = WorkerCluster(
        temporal_env.client,
        fake_model.base_url,
        tmp_path,
        api_key=secret,
        extra_env={"LOG_LEVEL": "DEBUG"},
    )
    try:
        worker = await cluster.start_worker()
        fake_model.enqueue(
            fake.tool_calls(fake.call("crash_effect", {"label": "logged"})),
            fake.text("done"),
        )
        ok = await cluster.start_run({"prompt": "tool run", "tools": ["crash_effect"]})
        assert (await cluster.result_of(ok)).answer == "done"

        fake_model.enqueue(
            fake.error(500, f"bad upstream key {secret[:10]}...", headers={"retry-after-ms": "50"}),
            fake.error(401, f"Incorrect API key provided: {secret}"),
        )
        failing = await cluster.start_run({"prompt": "failing run", "tools": []})
        failure = await finish(failing)
        assert "Incorrect API key provided: ***" in model_failure(failure).message

        code = await worker.stop(signal.SIGTERM, timeout=30)
        assert code == 0
        output = worker.output()
        # DEBUG logging really was on, and the requests really carried the key.
        assert " DEBUG " in output
        assert "DEBUG openai." in output, "the openai client's DEBUG request log is missing"
        assert "DEBUG httpcore" in output, "the HTTP transport's DEBUG log is missing"
        assert fake_model.request_count == 4
        assert all(r.headers["authorization"] == f"Bearer {secret}" for r in fake_model.requests)
        assert_no_secret(output, secret, "the worker's stdout/stderr")
        for handle, outcome in ((ok, None), (failing, failure)):
            assert_no_secret(await everything_visible(handle, outcome), secret, handle.id)
    finally:
        await cluster.close()


async def test_a_string_error_body_keeps_the_provider_message_scrubbed(agent: AgentHarness) -> None:
    agent.fake.enqueue(fake.error(429, "", body={"error": f"quota exceeded for {SECRET_API_KEY}"}))
    handle = await agent.start({"prompt": "string body", "tools": [], "model_max_attempts": 1})
    failure = model_failure(await finish(handle))
    assert SECRET_API_KEY not in failure.message
    assert "quota exceeded for ***" in failure.message


def logged(caplog: pytest.LogCaptureFixture) -> str:
    """Every log record of this process: formatted (with tracebacks), messages, arguments."""
    records = [
        f"{r.getMessage()} {r.args!r} {r.exc_text or ''} {r.__dict__!r}" for r in caplog.records
    ]
    return "\n".join([caplog.text, *records])


async def test_a_provider_echoing_a_prefix_of_the_key_leaves_it_nowhere(
    agent: AgentHarness, caplog: pytest.LogCaptureFixture
) -> None:
    key = SECRET_API_KEY
    prefix = key[:10]
    caplog.set_level(logging.DEBUG)
    agent.fake.enqueue(fake.error(401, f"Incorrect API key provided: {prefix}..."))
    handle = await agent.start({"prompt": "a key cut short", "tools": []})
    outcome = await finish(handle)

    [request] = agent.fake.requests  # the key was sent, and the provider echoed its prefix
    assert request.headers["authorization"] == f"Bearer {key}"
    failure = model_failure(outcome)
    assert "model provider answered 401: Incorrect API key provided: ***..." in failure.message
    history = (await handle.fetch_history()).to_json()
    assert "Incorrect API key provided: ***..." in history
    assert prefix not in history
    assert caplog.records, "nothing was logged"
    assert "Incorrect API key provided: ***..." in logged(caplog)  # the failure was logged
    for where, text in {
        "the history": await everything_visible(handle, outcome),
        "the logs": logged(caplog),
        "the result": str(failure) + repr(outcome),
    }.items():
        assert_no_secret(text, key, where)


async def test_every_configured_key_is_scrubbed_whoever_echoes_it(
    temporal_env: WorkflowEnvironment, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The default endpoint and a provider used as the fallback, each with its own key; the
    # fallback's gateway echoes prefixes of both keys (it was sent only its own).
    local_key = "sk-local-FALLBACK-5e6f7a8b9c0d-never-in-history"
    caplog.set_level(logging.DEBUG)
    with FakeOpenAIServer() as default_server, FakeOpenAIServer() as local_server:
        default_server.enqueue(fake.error(401, f"bad key {SECRET_API_KEY[:12]}..."))
        local_server.enqueue(
            fake.error(403, f"key {local_key[:9]}... refused; also seen: {SECRET_API_KEY[:8]}")
        )
        router = ModelRouter(
            OpenAIChatModel(
                api_key=SECRET_API_KEY, base_url=default_server.base_url, default_model=FAKE_MODEL
            ),
            {
                "local": OpenAIChatModel(
                    api_key=local_key, base_url=local_server.base_url, default_model="x"
                )
            },
        )
        async with AsyncExitStack() as stack:
            stack.push_async_callback(router.close)
            queue = await started_workers(stack, temporal_env.client, router, tmp_path)
            handle = await temporal_env.client.start_workflow(
                "AgentWorkflow",
                {"prompt": "two keys", "tools": [], "fallback_models": ["local/tiny"]},
                id=f"agent-{uuid.uuid4()}",
                task_queue=queue,
                result_type=AgentResult,
            )
            outcome = await finish(handle)
        assert local_server.requests[0].headers["authorization"] == f"Bearer {local_key}"

    failure = model_failure(outcome)
    assert "model provider answered 401: bad key ***..." in failure.message
    assert "model provider answered 403: key ***... refused; also seen: ***" in failure.message
    visible = await everything_visible(handle, outcome)
    for key in (SECRET_API_KEY, local_key):
        assert_no_secret(visible, key, "the history and the result")
        assert_no_secret(logged(caplog), key, "the logs")
