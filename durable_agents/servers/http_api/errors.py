"""Every failure as a JSON body `{"error": "...", ...}`: bad input is 422 naming each field,
what the API refuses is its own status (404, 409, ...), and anything unexpected is a 500 that
says only that (the traceback goes to the server's log, never to the client)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException

from durable_agents import errors as agent_errors

log = logging.getLogger("durable_agents.servers.http_api")


class ApiError(Exception):
    """A refusal the client can act on: its HTTP status and one line saying why."""

    def __init__(
        self, status: int, message: str, *, headers: dict[str, str] | None = None, **extra: Any
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers
        """Response headers it goes with (`Retry-After` of a 429)."""
        self.extra = extra

    def response(self) -> JSONResponse:
        """The JSON answer: `{"error": ..., **extra}` with its status and headers."""
        body = {"error": self.message, **self.extra}
        return JSONResponse(body, status_code=self.status, headers=self.headers)


HTTP_STATUSES: list[tuple[type[agent_errors.AgentError], int]] = [
    (agent_errors.InvalidInput, 422),
    (agent_errors.RunNotFound, 404),
    (agent_errors.CallNotFound, 404),
    (agent_errors.NotStartedHere, 403),
    (agent_errors.RunAlreadyStarted, 409),
    (agent_errors.RunEnded, 409),
    (agent_errors.AlreadyDecided, 409),
    (agent_errors.DigestMismatch, 409),
    (agent_errors.MessageRefused, 409),
    (agent_errors.ApproverRoleMissing, 403),
    (agent_errors.StarterCannotApprove, 403),
    (agent_errors.DecisionRefused, 422),
    (agent_errors.TemporalError, 502),
]
"""The HTTP status of each of the client's typed errors (the first class that matches)."""


def api_error_for(error: agent_errors.AgentError, *, answered: str = "decided") -> ApiError:
    """The `ApiError` of a typed client error: its status (`HTTP_STATUSES`; a worker that did
    not answer a query is 503, one that did not take an answer in time 504, a start past the
    principal's limits 429 with `Retry-After`, `limit` and `retry_after`), one line naming
    the cause, and the field or call it is about. `answered`: what a call answered twice was
    (`decided`, or `answered` for a client tool call)."""
    if isinstance(error, agent_errors.NoWorker):
        return ApiError(504 if error.update else 503, error.message)
    if isinstance(error, agent_errors.LimitExceeded):  # before anything started: try later
        seconds = error.retry_after
        return ApiError(
            429,
            error.message,
            headers={"Retry-After": str(seconds)},
            limit=error.limit,
            retry_after=seconds,
        )
    if isinstance(error, agent_errors.InvalidInput) and error.field is not None:
        problem = error.message.removeprefix("invalid input: ").removeprefix(f"{error.field}: ")
        return ApiError(422, error.message, fields=[{"field": error.field, "message": problem}])
    if isinstance(error, agent_errors.AlreadyDecided):
        return ApiError(
            409, f"call {error.call_id!r} has already been {answered}", call_id=error.call_id
        )
    if isinstance(error, agent_errors.CallNotFound):
        return ApiError(
            404, f"no call {error.call_id!r} waits in {error.workflow_id}: {error.reason}"
        )
    status = next((code for kind, code in HTTP_STATUSES if isinstance(error, kind)), 502)
    if isinstance(error, agent_errors.DecisionRefused):
        return ApiError(status, error.reason, call_id=error.call_id)
    return ApiError(status, error.message)


def field_problems(errors: Sequence[Any], *, strip: str | None = "body") -> list[dict[str, str]]:
    """`[{"field": "max_iterations", "message": "..."}]` from pydantic's error list (the request
    part, `body`, `query`, is left off the path; the body as a whole is `body`)."""
    problems = []
    for error in errors:
        loc = [str(part) for part in error.get("loc", ())]
        if strip is not None and loc[:1] == [strip] and len(loc) > 1:
            loc = loc[1:]
        if error.get("type") == "json_invalid":
            loc = ["body"]
        problems.append({"field": ".".join(loc) or "body", "message": str(error.get("msg"))})
    return problems


def invalid(problems: list[dict[str, str]]) -> JSONResponse:
    text = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
    return JSONResponse({"error": f"invalid input: {text}", "fields": problems}, status_code=422)


def install(app: FastAPI) -> None:
    """Register the handlers on `app`."""

    @app.exception_handler(ApiError)
    async def api_error(_: Request, error: ApiError) -> JSONResponse:
        return error.response()

    @app.exception_handler(RequestValidationError)
    async def bad_request(_: Request, error: RequestValidationError) -> JSONResponse:
        return invalid(field_problems(error.errors()))

    @app.exception_handler(ValidationError)
    async def bad_model(_: Request, error: ValidationError) -> JSONResponse:
        return invalid(field_problems(error.errors(), strip=None))

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, error: HTTPException) -> JSONResponse:
        return JSONResponse(
            {"error": str(error.detail)}, status_code=error.status_code, headers=error.headers
        )

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        log.exception("unexpected error in %s %s", request.method, request.url.path)
        return JSONResponse(
            {"error": f"internal error ({type(error).__name__}); the server log has the details"},
            status_code=500,
        )
