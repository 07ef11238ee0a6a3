"""The FastAPI application of `agent serve`: the routes, the guards and the console's files.

`create_app(client, config)` builds it around a connected Temporal client (the `agent` CLI's
connection: `client.connection.connect`), reached through one `AgentClient` (`runs.Runs`);
`serve.py` runs it with uvicorn. The routes' work is in
`runs`, `sessions`, `sse` and `agui`; this module only maps HTTP onto them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import Body, Depends, FastAPI, Header, Query, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from sse_starlette import EventSourceResponse
from starlette.convertors import PathConvertor, register_url_convertor
from temporalio.client import Client

from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.principals import Principal
from durable_agents.contracts.session import SessionStatus
from durable_agents.contracts.workflow_ids import SafeId
from durable_agents.servers.auth.authenticator import Authenticator
from durable_agents.servers.auth.middleware import Authentication, caller
from durable_agents.servers.http_api import errors
from durable_agents.servers.http_api.agui import respond as agui_respond
from durable_agents.servers.http_api.bodies import (
    Cancel,
    Decision,
    Message,
    Started,
    StartRun,
    StartSession,
    Steer,
    ToolResult,
)
from durable_agents.servers.http_api.config import ServeConfig
from durable_agents.servers.http_api.feeds import Feeds
from durable_agents.servers.http_api.me import router as me_routes
from durable_agents.servers.http_api.runs import Runs
from durable_agents.servers.http_api.sessions import Sessions
from durable_agents.servers.http_api.sse import (
    event_stream,
    resume_offset,
    session_event_stream,
    session_resume,
)
from durable_agents.servers.request_guards import (
    BodyLimit,
    GuardSettings,
    RequestGuard,
    SecurityHeaders,
    allowed_host_names,
)

STATIC = Path(__file__).parent / "static"


class AnyPath(PathConvertor):
    """Starlette's `:path`, line breaks included: an id holding one is then refused naming the
    problem (422, `contracts.workflow_ids`) instead of matching no route (404)."""

    regex = "(?s:.*)"


register_url_convertor("anypath", AnyPath())
Id = Annotated[SafeId, "a workflow id (may hold '/', e.g. a session's child turn)"]
LastEventId = Annotated[str | None, Header(alias="Last-Event-ID", description="resume after it")]
After = Annotated[int | None, Query(ge=-1, description="resume after this offset")]
Wait = Annotated[bool, Query(description="wait for the end instead of answering 202")]
Reader = Annotated[Principal, Depends(caller("read"))]
"""The request's principal (`servers.auth`), which may read runs: list, status, events."""
Starter = Annotated[Principal, Depends(caller("start"))]
"""... which may start runs and sessions, send messages, answer client tools and cancel."""
Approver = Annotated[Principal, Depends(caller("approve"))]
"""... which may approve, reject, edit, reply and steer."""
PUBLIC_PATHS = frozenset({"/", "/healthz", "/favicon.ico"})
PUBLIC_PREFIXES = ("/static/",)
"""The console's files and the health check hold no data: the page asks for the token to
call the API."""


def create_app(client: Client, config: ServeConfig) -> FastAPI:
    """The application for runs and sessions on `client`'s namespace (see the module doc)."""
    runs = Runs(client, config.task_queue)
    feeds = Feeds(runs.agents, reading=config.stream_reading)
    sessions = Sessions(runs.agents)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await feeds.close()

    app = FastAPI(
        title="durable agents",
        summary="Start, watch and answer durable agent runs and sessions (Temporal workflows).",
        version="1",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    errors.install(app)
    app.state.feeds = feeds
    app.state.runs = runs
    app.state.sessions = sessions
    app.state.config = config

    # Outermost last: the security headers on every answer, CORS answers preflights, then the
    # browser guard (Host, Origin, JSON bodies), then the body limit, then who is calling.
    app.add_middleware(
        Authentication,
        authenticator=config.authenticator or Authenticator(),
        public_paths=PUBLIC_PATHS,
        public_prefixes=PUBLIC_PREFIXES,
    )
    app.add_middleware(BodyLimit, max_bytes=config.max_body_bytes)
    app.add_middleware(
        RequestGuard,
        settings=GuardSettings(
            allowed_host_names("", config.allowed_hosts), frozenset(config.cors_origins)
        ),
    )
    if config.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(config.cors_origins),
            allow_methods=["GET", "POST", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
        )
    app.add_middleware(SecurityHeaders, console_paths=PUBLIC_PATHS)

    async def events(
        workflow_id: str,
        last_event_id: str | None,
        after: int | None,
        *,
        end_at_finish: bool,
        principal: Principal,
    ) -> EventSourceResponse:
        start = resume_offset(last_event_id, after)
        await runs.of(principal).described(workflow_id)  # 404 before the stream starts
        return event_stream(feeds, workflow_id, start, end_at_finish=end_at_finish)

    # -- the console -------------------------------------------------------------------------

    @app.get("/", include_in_schema=False)
    async def console() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, bool]:
        return {"ok": True}

    @app.get("/v1/info", tags=["server"])
    async def info(principal: Reader) -> dict[str, Any]:
        """What the console needs: the namespace, the task queue, the Web UI to link runs to."""
        return {
            "namespace": config.namespace,
            "task_queue": config.task_queue,
            "web_ui_url": await config.web_ui.url(),
        }

    app.include_router(me_routes)  # GET /v1/me: who the caller is signed in as

    # -- runs --------------------------------------------------------------------------------

    @app.post("/v1/runs", status_code=201, response_model=Started, tags=["runs"])
    async def start_run(body: StartRun, principal: Starter) -> Started:
        """Start a run: the workflow input (`AgentInput`), plus an optional `id`; 429 with
        `Retry-After` when the principal's limits (`client.limits`) allow no more now."""
        handle = await runs.of(principal).start(body)
        return Started(workflow_id=handle.id, run_id=handle.run_id)

    @app.get("/v1/runs", tags=["runs"])
    async def list_runs(
        principal: Reader, limit: Annotated[int, Query(ge=1, le=1000)] = 100
    ) -> list[dict[str, Any]]:
        """The newest runs and sessions of the principal's tenant (an admin: of every tenant)."""
        return await runs.of(principal).listed(limit)

    @app.get("/v1/runs/{workflow_id:anypath}/result", tags=["runs"])
    async def run_result(workflow_id: Id, principal: Reader, wait: Wait = False) -> Response:
        """The result (`AgentResult`, or how the run failed); 202 while it runs."""
        result = await runs.of(principal).result(workflow_id, wait)
        if result is None:
            return JSONResponse(
                {"workflow_id": workflow_id, "execution_status": "RUNNING"}, status_code=202
            )
        return JSONResponse(result)

    @app.get("/v1/runs/{workflow_id:anypath}/pending", tags=["runs"])
    async def run_pending(workflow_id: Id, principal: Reader) -> list[PendingRequest]:
        """The calls waiting for a person, each with its `args_digest`."""
        return await runs.of(principal).pending(workflow_id)

    @app.post("/v1/runs/{workflow_id:anypath}/decisions", tags=["runs"])
    async def run_decision(workflow_id: Id, body: Decision, principal: Approver) -> dict[str, Any]:
        """Approve, reject, edit (approve with `args`) or reply; 404 for an unknown run or call,
        409 for a call already decided."""
        return await runs.of(principal).decide(workflow_id, body)

    @app.post("/v1/runs/{workflow_id:anypath}/tool_results", tags=["runs"])
    async def run_tool_result(
        workflow_id: Id, body: ToolResult, principal: Starter
    ) -> dict[str, Any]:
        """Answer a client tool call (`client_tools`) with its `result` or an `error`; 404 for
        an unknown run or call, 409 for a call already answered, 422 for a result that breaks
        the tool's `result_schema` (the `tool_result` update's validator says why)."""
        return await runs.of(principal).tool_result(workflow_id, body)

    @app.post("/v1/runs/{workflow_id:anypath}/steer", tags=["runs"])
    async def run_steer(workflow_id: Id, body: Steer, principal: Approver) -> dict[str, Any]:
        """A message the model reads at its next call."""
        return await runs.of(principal).steer(workflow_id, body)

    @app.post("/v1/runs/{workflow_id:anypath}/cancel", status_code=202, tags=["runs"])
    async def run_cancel(
        workflow_id: Id, principal: Starter, body: Annotated[Cancel | None, Body()] = None
    ) -> dict[str, Any]:
        """Cancel the run (it ends as cancelled)."""
        return await runs.of(principal).cancel(workflow_id)

    @app.get(
        "/v1/runs/{workflow_id:anypath}/events", tags=["runs"], response_class=EventSourceResponse
    )
    async def run_events(
        workflow_id: Id, principal: Reader, last_event_id: LastEventId = None, after: After = None
    ) -> EventSourceResponse:
        """The run's events (SSE); ends after `run_finished`."""
        return await events(
            workflow_id, last_event_id, after, end_at_finish=True, principal=principal
        )

    @app.get("/v1/runs/{workflow_id:anypath}", tags=["runs"])
    async def run_status(workflow_id: Id, principal: Reader) -> dict[str, Any]:
        """The status: execution status, phase, turn, usage, pending requests, recent steps."""
        return await runs.of(principal).status(workflow_id)

    # -- sessions ----------------------------------------------------------------------------

    @app.post("/v1/sessions", status_code=201, response_model=Started, tags=["sessions"])
    async def start_session(body: StartSession, principal: Starter) -> Started:
        """Start a session with these settings (`SessionInput`), plus an optional `id`; 429
        with `Retry-After` past the principal's limits, as for a run."""
        session_id, run_id = await sessions.of(principal).start(body)
        return Started(workflow_id=session_id, run_id=run_id)

    @app.post("/v1/sessions/{session_id:anypath}/messages", tags=["sessions"])
    async def session_message(
        session_id: Id, body: Message, principal: Starter, wait: Wait = False
    ) -> Response:
        """Send a message (the session starts if new): 202 once taken, or with `?wait=true`
        200 with the turn's answer; 429 with `Retry-After` past the principal's limits."""
        update = await sessions.of(principal).send(session_id, body)
        if wait:
            return JSONResponse(Sessions.turn_json(await update.result()))
        return JSONResponse({"session_id": session_id, "message_id": update.id}, status_code=202)

    @app.get(
        "/v1/sessions/{session_id:anypath}/events",
        tags=["sessions"],
        response_class=EventSourceResponse,
    )
    async def session_events(
        session_id: Id, principal: Reader, last_event_id: LastEventId = None, after: After = None
    ) -> EventSourceResponse:
        """The session's events (SSE), turn after turn, until the session ends; a turn that runs
        as a child run (`turn_started` / `turn_moved` naming it) has its events in place, with
        ids `<session offset>/<child offset>`."""
        resume = session_resume(last_event_id, after)
        await runs.of(principal).described(session_id)  # 404 before the stream starts
        return session_event_stream(feeds, session_id, resume)

    @app.get("/v1/sessions/{session_id:anypath}", tags=["sessions"])
    async def session_status(session_id: Id, principal: Reader) -> SessionStatus:
        return await sessions.of(principal).status(session_id)

    # -- AG-UI -------------------------------------------------------------------------------

    @app.post("/agui", tags=["ag-ui"])
    async def agui_run(request: Request, principal: Starter) -> Response:
        """AG-UI: a `RunAgentInput` whose `threadId` is a session id; its last user message
        goes to that session (started if new, with the input's `tools` as client tools), or
        its tool messages answer the frontend tool calls the last AG-UI run ended with; the
        turn streams back as AG-UI events."""
        return await agui_respond(request, sessions.of(principal), runs.of(principal), feeds)

    return app
