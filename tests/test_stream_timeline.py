"""A session's Web UI timeline stays readable while `agent serve` follows it (issue 31, item 16).

A follower that subscribes with the stream's poll *update* (`WorkflowStreamClient.subscribe`,
what `agent serve`'s feed did) puts every poll in the session's history: two updates' events
(accepted, completed) and often a workflow task, again and again. Read through the stream's
poll *query* with a backoff (`runtime.event_stream.follow_events`, what the feed does now), it
records nothing. Measured here on a session of two short streamed turns, three ways: nobody
following, one update subscriber, and an SSE client of the real `agent serve`. docs/events.md
shows a recorded run of the same measurement (`record`, run as a module: see its docstring)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.testing import WorkflowEnvironment

from durable_agents.contracts.events import EVENTS_TOPIC
from durable_agents.testing import fake_openai as fake
from tests.conftest import BIN, DEV_SERVER_ARGS, AgentHarness, agent_harness
from tests.http_api_support import LiveApi, collect, live_api

TURNS = ("I am Ann.", "Who am I?")
REPLIES = ("Hello Ann, nice to meet you.", "You are Ann, you told me so.")
POLL = "__temporal_workflow_stream_poll"
PIECE_SECONDS, PIECE_CHARS = 0.05, 4
"""The fake model writes each reply in pieces of 4 characters, waiting 50 ms before each."""


def short_turns(agent: AgentHarness) -> None:
    agent.fake.enqueue(
        *(
            fake.streamed(text, piece_seconds=PIECE_SECONDS, piece_chars=PIECE_CHARS)
            for text in REPLIES
        )
    )


async def timeline(handle: WorkflowHandle[Any, Any]) -> tuple[int, int]:
    """The session's history events, and how many of them are the stream's poll updates
    (accepted and completed)."""
    history = await handle.fetch_history()
    polls: set[str] = set()
    count = 0
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request
            if request.input.name == POLL:
                polls.add(request.meta.update_id)
                count += 1
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
            meta = event.workflow_execution_update_completed_event_attributes.meta
            count += meta.update_id in polls
    return len(history.events), count


async def two_turns(
    api: LiveApi, follow: Callable[[str], Awaitable[Any]] | None
) -> tuple[int, int]:
    """A session of two short turns, followed by `follow(session_id)` (or by nobody): its
    history's events and poll updates once both turns are answered."""
    session = f"timeline-{uuid.uuid4().hex[:8]}"
    started = await api.http.post("/v1/sessions", json={"id": session})
    assert started.status_code == 201, started.text
    follower = asyncio.ensure_future(follow(session)) if follow is not None else None
    try:
        await asyncio.sleep(0.5)  # the follower is reading before the first message
        for text in TURNS:
            answered = await api.http.post(
                f"/v1/sessions/{session}/messages", params={"wait": "true"}, json={"text": text}
            )
            assert answered.status_code == 200, answered.text
        await asyncio.sleep(1.0)  # the follower reads the last events
        handle = api.app.state.feeds.agents.client.get_workflow_handle(session)
        return await timeline(handle)
    finally:
        if follower is not None:
            follower.cancel()
            with contextlib.suppress(BaseException):
                await follower


async def measured(agent: AgentHarness) -> dict[str, tuple[int, int]]:
    async def update_subscriber(session: str) -> None:
        stream = WorkflowStreamClient.create(agent.client, session)
        async for _ in stream.subscribe([EVENTS_TOPIC]):
            pass

    figures: dict[str, tuple[int, int]] = {}
    for reading in ("query", "updates"):
        async with live_api(agent, stream_reading=reading) as api:

            async def sse_client(session: str) -> None:
                await collect(api.http, f"/v1/sessions/{session}/events")

            arms: list[tuple[str, Callable[[str], Awaitable[Any]] | None]] = [
                (f"an SSE client of `agent serve --stream-read {reading}`", sse_client)
            ]
            if reading == "query":
                arms[:0] = [
                    ("nobody", None),
                    ("one poll-update subscriber (`agent serve`'s feed before)", update_subscriber),
                ]
            for name, follow in arms:
                short_turns(agent)
                figures[name] = await two_turns(api, follow)
    return figures


def by_follower(figures: dict[str, tuple[int, int]]) -> dict[str, dict[str, int]]:
    """The figures as JSON names them: history events and poll updates, by who followed."""
    return {k: {"events": v[0], "poll_updates": v[1]} for k, v in figures.items()}


async def test_following_a_session_leaves_its_timeline_as_it_was(agent: AgentHarness) -> None:
    figures = await measured(agent)
    print(json.dumps(by_follower(figures)))
    quiet, updates, feed, feed_by_updates = figures.values()
    assert feed[1] == 0, "agent serve's feed records no poll in the session's history"
    assert updates[1] > 0 and feed_by_updates[1] > 0  # (what the measurement compares with)
    assert feed[0] <= quiet[0] + 6, (feed, quiet)  # timing moves a batch or a workflow task
    assert feed[0] < updates[0], (feed, updates)


async def record(out: Path) -> None:
    """The measurement above, once, on a dev server of its own, written to `out` as JSON: what
    docs/events.md shows ("A session's timeline"), recorded with

        python -m scripts.docs.benchmarks record stream-timeline --result /tmp/timeline.json \\
            -- .venv/bin/python -m tests.test_stream_timeline --out /tmp/timeline.json
    """
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(BIN / "temporal"),
        dev_server_extra_args=DEV_SERVER_ARGS,
        data_converter=pydantic_data_converter,
    )
    try:
        with fake.FakeOpenAIServer() as model, tempfile.TemporaryDirectory() as folder:
            async with agent_harness(env, model, Path(folder)) as agent:
                figures = await measured(agent)
    finally:
        await env.shutdown()
    written = {
        "turns": len(TURNS),
        "reply_chars": [len(text) for text in REPLIES],
        "piece_chars": PIECE_CHARS,
        "piece_seconds": PIECE_SECONDS,
        "followed_by": by_follower(figures),
    }
    out.write_text(json.dumps(written, indent=1) + "\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=record.__doc__)
    parser.add_argument("--out", type=Path, required=True)
    asyncio.run(record(parser.parse_args().out))
