"""`POST /agui`: the AG-UI protocol over a durable session.

A `RunAgentInput` names a thread (`threadId`): that is the session id. Its last user message is
sent to the session the way `agent chat` sends one (the session starts if it is new), and the
turn that answers it streams back as AG-UI events (`agui_mapping.AguiTranslator`), from
`RUN_STARTED` to `RUN_FINISHED` (or `RUN_ERROR`), encoded by `ag_ui.encoder.EventEncoder`.

The turn's events are read from the session's stream through the server's one feed per
workflow (`feeds`), from the offset the stream had before the message was sent, keeping the
events of this turn only (`turn`); a turn run as a child run (`turns: child`) is read from
that run's own stream. Once the session says the turn is answered, what is left is read with
the stream's query and the AG-UI run ends, so a client never waits on a turn that is over.

Frontend tools (`agui_tools.py`): the input's `tools` are the session's `client_tools`,
declared when the thread's session starts. A call of one ends the AG-UI run (`RUN_FINISHED`
naming it in `pendingToolCallIds`) while the turn waits durably; the next input, carrying the
`ToolMessage`, answers it with the `tool_result` update (at the session for an inline turn, at
the child run for a child turn: as decisions go) and picks the turn up right after where the
earlier AG-UI run ended, read with the stream's query.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ag_ui.core import RunAgentInput, RunErrorEvent, ToolMessage
from ag_ui.encoder import EventEncoder
from fastapi import Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import ValidationError
from starlette.responses import Response

from durable_agents.contracts.events import AgentEvent, RunFailed, TurnFinished
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.contracts.session import RunningTurn, TurnResult
from durable_agents.contracts.workflow_ids import id_problem
from durable_agents.servers.http_api.agui_mapping import AguiTranslator
from durable_agents.servers.http_api.agui_tools import (
    client_tool_specs,
    resume_point,
    tool_answers,
    tool_result_payload,
)
from durable_agents.servers.http_api.bodies import Message, StartSession, ToolResult
from durable_agents.servers.http_api.errors import ApiError, field_problems, invalid
from durable_agents.servers.http_api.feeds import Feeds
from durable_agents.servers.http_api.runs import Runs
from durable_agents.servers.http_api.sessions import Sessions

TURN_LOOK_SECONDS = 0.1
"""How often the session's `status` is asked which turn answers the message, until it runs."""


def last_user_text(run_input: RunAgentInput) -> str | None:
    """The text of the input's last user message (its text parts, joined), or None."""
    for message in reversed(run_input.messages):
        if getattr(message, "role", None) != "user":
            continue
        content: Any = getattr(message, "content", None)
        if isinstance(content, str):
            return content if content.strip() else None
        if isinstance(content, list):
            parts = [getattr(part, "text", None) for part in content]
            text = "\n".join(p for p in parts if isinstance(p, str) and p)
            return text or None
        return None
    return None


@dataclass(frozen=True)
class TurnSource:
    """Where an AG-UI run reads its turn's events: the workflow whose stream holds them, the
    offset to read from, and the turn number to keep (None: every event, a child run's)."""

    workflow_id: str
    start: int
    turn: int | None


async def respond(request: Request, sessions: Sessions, runs: Runs, feeds: Feeds) -> Response:
    """The AG-UI response to one `RunAgentInput` (see the module docstring)."""
    try:
        raw = json.loads(await request.body())
    except RecursionError:  # as FastAPI answers it on the other routes: 400, not a crash
        return JSONResponse({"error": "the body is JSON nested too deeply"}, status_code=400)
    except ValueError:
        return invalid([{"field": "body", "message": "not valid JSON"}])
    try:
        run_input = RunAgentInput.model_validate(raw)
    except ValidationError as error:
        return invalid(field_problems(error.errors(), strip=None))
    thread_problem = id_problem(run_input.thread_id)
    if thread_problem is not None:  # the thread is a session id: it goes to Temporal
        return invalid([{"field": "threadId", "message": thread_problem}])
    specs, problems = client_tool_specs(run_input)
    if problems:
        return invalid(problems)
    encoder = EventEncoder(accept=request.headers.get("accept", "text/event-stream"))
    translator = AguiTranslator(
        run_input.thread_id,
        run_input.run_id,
        run_input.thread_id,
        frontend_tools=frozenset(spec["name"] for spec in specs),
    )
    answers = tool_answers(run_input)
    try:
        if answers:
            answered, locate = await _answer_tools(sessions, runs, translator, answers)
        else:
            answered, locate = await _send_message(sessions, run_input, specs)
    except ApiError as error:
        return error.response()
    return StreamingResponse(
        _events(feeds, answered, locate, translator, encoder.encode),
        media_type=encoder.get_content_type(),
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


Locate = Callable[[], Awaitable[TurnSource]]


async def _send_message(
    sessions: Sessions, run_input: RunAgentInput, specs: list[dict[str, Any]]
) -> tuple[asyncio.Future[TurnResult], Locate]:
    """Send the input's last user message to the thread's session (started with the input's
    frontend tools as its `client_tools` when it is new); the answer to wait for and where the
    turn's events will be."""
    text = last_user_text(run_input)
    if text is None:
        raise ApiError(
            422,
            "invalid input: messages: no user message with text to send",
            fields=[{"field": "messages", "message": "no user message with text to send"}],
        )
    thread = run_input.thread_id
    start = await sessions.stream_offset(thread)
    if specs:
        with contextlib.suppress(ApiError):  # 409: it runs already, with its own settings
            await sessions.start(
                StartSession.model_validate({"id": thread, "agent": {"client_tools": specs}})
            )
    update = await sessions.send(thread, Message(text=text))
    answered = asyncio.ensure_future(update.result())

    async def locate() -> TurnSource:
        turn = await _running_turn(sessions, thread, update.id, answered)
        if turn is None:  # answered before it was seen running: its events are all published
            result = answered.result()
            number, workflow_id = result.turn, result.workflow_id
            inline = workflow_id == thread
        else:
            number, workflow_id, inline = turn.turn, turn.workflow_id, turn.inline
        return TurnSource(workflow_id, start if inline else 0, number if inline else None)

    return answered, locate


async def _answer_tools(
    sessions: Sessions, runs: Runs, translator: AguiTranslator, answers: list[ToolMessage]
) -> tuple[asyncio.Future[TurnResult], Locate]:
    """Answer the frontend's tool messages with `tool_result` where the running turn waits
    (the session for an inline turn, the child run for a child turn), refused as the HTTP
    route refuses (404 / 409 / 422); the turn's answer to wait for and where its events go on,
    after what earlier AG-UI runs showed."""
    thread = translator.thread_id
    status = await sessions.status(thread)
    running = status.running
    if running is None:
        raise ApiError(409, f"no turn of {thread!r} is running: no tool call waits for a result")
    target = thread if running.inline else running.workflow_id
    waiting = {p.call_id for p in status.pending if p.kind is RequestKind.CLIENT_TOOL}
    sending = [m for m in answers if m.tool_call_id in waiting] or answers[-1:]
    for message in sending:  # (none waiting: the last one's refusal says why)
        await runs.tool_result(target, ToolResult.model_validate(tool_result_payload(message)))
    sent = [m.tool_call_id for m in sending]
    translator.answered = frozenset(sent)
    answered = asyncio.ensure_future(_turn_answer(runs, thread, running))
    turn = running.turn if running.inline else None

    async def locate() -> TurnSource:
        events = sessions.agents.run(target).read_range(0)
        found = resume_point([e async for e in events], sent, turn)
        if found is None:  # not on the stream: go on from its end
            return TurnSource(target, await sessions.stream_offset(target), turn)
        shown, start = found
        translator.seen(shown)
        return TurnSource(target, start, turn)

    return answered, locate


async def _turn_answer(runs: Runs, session_id: str, running: RunningTurn) -> TurnResult:
    """The answer of the running turn: its message's `send` update (a message sent as a
    signal has none: the turn's own end on the stream is waited for instead)."""
    if running.message.id.startswith("signal-"):
        await asyncio.Event().wait()
    return await runs.agents.session(session_id).turn(running.message.id).result()


async def _events(
    feeds: Feeds,
    answered: asyncio.Future[TurnResult],
    locate: Locate,
    translator: AguiTranslator,
    encode: Callable[[Any], str],
) -> AsyncIterator[str]:
    yield encode(translator.started())
    try:
        source = await locate()
        translator.workflow_id = source.workflow_id
        events = _turn_events(feeds, source.workflow_id, source.start, source.turn, answered)
        async for event in events:
            for out in translator.translate(event):
                yield encode(out)
            if not translator.finished and isinstance(event, TurnFinished):
                for out in translator.end(event.error, event.answer, event.stop_reason):
                    yield encode(out)
            if translator.finished:
                return
        result = await answered
        for out in translator.end(result.error, result.answer, result.stop_reason):
            yield encode(out)
    except Exception as error:  # the stream or the session failed: the AG-UI run ends in error
        if not translator.finished:
            yield encode(RunErrorEvent(message=str(error) or type(error).__name__))
    finally:
        if not answered.done():
            answered.cancel()
            with contextlib.suppress(BaseException):
                await answered


async def _running_turn(
    sessions: Sessions, session_id: str, message_id: str, answered: asyncio.Future[TurnResult]
) -> RunningTurn | None:
    """The turn that answers message `message_id`, once it runs (None if answered first)."""
    while not answered.done():
        with contextlib.suppress(ApiError):
            status = await sessions.status(session_id)
            if status.running is not None and status.running.message.id == message_id:
                return status.running
        await asyncio.wait({answered}, timeout=TURN_LOOK_SECONDS)
    return None


async def _turn_events(
    feeds: Feeds,
    workflow_id: str,
    start: int,
    turn: int | None,
    answered: asyncio.Future[TurnResult],
) -> AsyncIterator[AgentEvent]:
    """The turn's events (those of `turn`, when given) from offset `start`; once the turn is
    answered, what the stream holds is read to its end and nothing more is awaited."""

    def ours(event: AgentEvent) -> bool:
        return turn is None or event.turn == turn

    source = feeds.events(workflow_id, start)
    position = start
    following: asyncio.Future[AgentEvent] = asyncio.ensure_future(anext(source))
    try:
        while True:
            both: list[asyncio.Future[Any]] = [following, answered]
            await asyncio.wait(both, return_when=asyncio.FIRST_COMPLETED)
            if following.done():
                try:
                    event = following.result()
                except StopAsyncIteration:
                    return
                position = (event.offset or position) + 1
                if ours(event):
                    yield event
                if isinstance(event, RunFailed) and ours(event):
                    return
                following = asyncio.ensure_future(anext(source))
                continue
            async for event in feeds.agents.run(workflow_id).read_range(position):
                if ours(event):
                    yield event
            return
    finally:
        following.cancel()
        with contextlib.suppress(BaseException):
            await following
        await source.aclose()
