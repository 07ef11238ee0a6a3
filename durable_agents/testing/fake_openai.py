"""A scriptable fake OpenAI-compatible server speaking the Chat Completions wire format.

Why: the test-suite must exercise the *real* ``openai.AsyncOpenAI`` client (its HTTP
transport, retries, error mapping and response parsing) instead of mocking it, so this
module runs a tiny HTTP/1.1 server on ``127.0.0.1`` that answers exactly what the real
API would send. Standard library only, so it can be used from tests and benchmarks alike.

Typical use::

    with FakeOpenAIServer() as server:
        server.enqueue(tool_calls(call("add", {"a": 1, "b": 2})), text("3"))
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        ...
        assert server.requests[0]["messages"][0]["role"] == "user"

Replies are scripted either through a FIFO queue (:meth:`FakeOpenAIServer.enqueue`) or a
handler function (:meth:`FakeOpenAIServer.set_handler`) that sees the request body; the
queue takes precedence and the handler is the fallback once it is empty. ``hold(event, reply)``
keeps a reply back until the test sets ``event`` (no sleeping), and
:attr:`FakeOpenAIServer.responses_sent` counts the responses actually written.

Streaming: a request with ``"stream": true`` gets its reply as server-sent events, the way the
real API sends them (``chat.completion.chunk`` objects, tool-call deltas by ``index``, a last
chunk with empty ``choices`` carrying usage when ``stream_options.include_usage`` asks for it,
then ``data: [DONE]``). A plain :class:`Completion` is streamed with default pieces;
:func:`streamed` says how to split it (text and arguments in pieces of N characters, a call's
id and name in separate chunks, several calls interleaved), where to pause until the test sets
an event, or where to drop the connection. :attr:`FakeOpenAIServer.refuse_streaming` makes the
server refuse every streaming request, as some providers do.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import socket
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, TypeAlias

__all__ = [
    "STREAM_NOT_SUPPORTED",
    "Completion",
    "DelayReply",
    "DropReply",
    "ErrorReply",
    "FakeOpenAIServer",
    "Handler",
    "HoldReply",
    "RawReply",
    "RecordedRequest",
    "Reply",
    "ReplyLike",
    "StreamedReply",
    "ToolCall",
    "call",
    "delay",
    "drop",
    "error",
    "hold",
    "raw",
    "streamed",
    "text",
    "tool_calls",
]

DEFAULT_USAGE: tuple[int, int] = (10, 5)
"""(prompt_tokens, completion_tokens) reported when a reply does not say otherwise."""

_POLL_INTERVAL = 0.01
"""How often serve_forever checks for shutdown; bounds how long :meth:`stop` waits."""

DEFAULT_MODEL = "fake-model"
"""Model name echoed when the request carries no ``model`` field."""


# --------------------------------------------------------------------------------------
# Reply types
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """One function call inside an assistant message.

    ``arguments`` is sent verbatim (the real API sends a JSON *string* that the model
    produced, which may be malformed). ``id`` of ``None`` means "generate ``call_<n>``"
    from a per-server counter when the reply is served, so ids are deterministic per test.
    ``extra`` adds provider fields to the call (Gemini's
    ``{"extra_content": {"google": {"thought_signature": "..."}}}``); streamed, they come with
    the call's first chunk, as Gemini sends them.
    """

    name: str
    arguments: str
    id: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Completion:
    """A successful ``chat.completion`` response (HTTP 200).

    ``usage`` is ``(prompt_tokens, completion_tokens)``; ``total_tokens`` is derived; ``None``
    sends no usage at all (some servers do not report it). ``model`` overrides the echoed
    request model. ``message_extra`` adds arbitrary extra keys to the assistant message
    (provider extensions); ``headers`` adds response headers. ``reasoning_key`` is the field
    the reasoning goes in: ``reasoning_content`` (DeepSeek, Qwen) or ``reasoning`` (vLLM,
    OpenRouter).
    """

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning_content: str | None = None
    finish_reason: str = "stop"
    usage: tuple[int, int] | None = DEFAULT_USAGE
    model: str | None = None
    message_extra: Mapping[str, Any] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    reasoning_key: str = "reasoning_content"


DEFAULT_PIECE_CHARS = 8
"""A streamed Completion's text, reasoning and arguments go in pieces of this many characters."""


@dataclass(frozen=True)
class StreamedReply:
    """How to stream ``completion`` to a ``"stream": true`` request (a plain request gets the
    completion as one JSON body, so a script works whichever way the client asks).

    ``piece_chars`` splits text, reasoning and each call's arguments; ``split_call_header``
    sends a call's id and its name in separate chunks (else both in its first chunk, as OpenAI
    does); ``interleave`` alternates the chunks of several calls. After ``hold_after`` chunks the
    stream waits until ``release`` is set; after ``drop_after`` chunks the connection is closed
    (no ``[DONE]``). ``finish=False`` leaves out the finish_reason (a stream that never
    completes its choice) and ``done=False`` the final ``data: [DONE]``. The completion's
    ``message_extra`` is streamed as the deltas ``extra_pieces`` (provider fields arriving in
    pieces, as gateways stream thinking blocks), or else in one delta of its own.
    ``piece_seconds`` waits that long before each chunk: a reply that takes time to write, as
    a real model's does (one that comes whole in a moment sends no text deltas to the run's
    event stream: `activities.activity_events.ModelCallEvents.quiet`).
    """

    completion: Completion
    piece_chars: int = DEFAULT_PIECE_CHARS
    piece_seconds: float = 0.0
    split_call_header: bool = False
    interleave: bool = False
    hold_after: int | None = None
    release: threading.Event | None = None
    drop_after: int | None = None
    finish: bool = True
    done: bool = True
    extra_pieces: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error with an OpenAI-shaped JSON body.

    The body is ``{"error": {"message", "type", "param", "code"}}`` unless ``body`` is
    given, in which case it is sent as-is. ``headers`` lets tests send ``Retry-After``,
    ``retry-after-ms`` or ``x-should-retry`` to drive the client's retry logic.
    """

    status: int
    message: str
    type: str | None = None
    code: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class RawReply:
    """Arbitrary status, bytes and headers, e.g. a 200 with a body that is not JSON.

    ``Content-Length`` is always computed by the server (keep-alive must stay correct);
    ``Content-Type`` defaults to ``application/json`` unless given in ``headers``.
    """

    status: int
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DelayReply:
    """Wait ``seconds`` before serving ``then`` (for client-timeout tests).

    The wait is interrupted when the server stops, so a long delay never blocks teardown.
    """

    seconds: float
    then: ReplyLike


@dataclass(frozen=True)
class HoldReply:
    """Wait until ``release`` is set, then serve ``then`` (to act while a request is in flight).

    Like a delay, the wait ends when the server stops (the connection is then dropped).
    """

    release: threading.Event
    then: ReplyLike


@dataclass(frozen=True)
class DropReply:
    """Close the connection without sending any response (for connection-error tests)."""


Reply: TypeAlias = (
    Completion | StreamedReply | ErrorReply | RawReply | DelayReply | HoldReply | DropReply
)
_REPLY_TYPES = (Completion, StreamedReply, ErrorReply, RawReply, DelayReply, HoldReply, DropReply)
ReplyLike: TypeAlias = Reply | str
"""A reply, or a plain ``str`` as shorthand for ``text(that_str)``."""

Handler: TypeAlias = Callable[[dict[str, Any]], ReplyLike]
"""A function from the parsed request body to the reply to send."""


# --------------------------------------------------------------------------------------
# Factory helpers
# --------------------------------------------------------------------------------------


def text(
    content: str,
    *,
    reasoning_content: str | None = None,
    finish_reason: str = "stop",
    usage: tuple[int, int] = DEFAULT_USAGE,
) -> Completion:
    """An assistant message with ``content`` (optionally with ``reasoning_content``)."""
    return Completion(
        content=content,
        reasoning_content=reasoning_content,
        finish_reason=finish_reason,
        usage=usage,
    )


def call(
    name: str,
    arguments: str | Mapping[str, Any] = "{}",
    id: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> ToolCall:
    """One tool call: a mapping is ``json.dumps``-ed, a ``str`` is sent verbatim.

    Passing a string lets tests send malformed JSON exactly as a model might.
    ``id=None`` generates ``call_<n>`` when served; ``extra`` adds provider fields to the call.
    """
    args = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
    return ToolCall(name=name, arguments=args, id=id, extra=dict(extra or {}))


def tool_calls(
    *calls: ToolCall,
    content: str | None = None,
    reasoning_content: str | None = None,
    finish_reason: str = "tool_calls",
    usage: tuple[int, int] = DEFAULT_USAGE,
) -> Completion:
    """An assistant message requesting one or more tool calls, in the given order."""
    if not calls:
        raise ValueError("tool_calls() needs at least one call(...)")
    return Completion(
        content=content,
        tool_calls=tuple(calls),
        reasoning_content=reasoning_content,
        finish_reason=finish_reason,
        usage=usage,
    )


_ERROR_DEFAULTS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("invalid_request_error", "model_not_found"),
    408: ("timeout_error", None),
    409: ("conflict_error", None),
    422: ("invalid_request_error", None),
    429: ("requests", "rate_limit_exceeded"),
}


def error(
    status: int,
    message: str | None = None,
    *,
    type: str | None = None,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
    body: Mapping[str, Any] | None = None,
) -> ErrorReply:
    """An HTTP error; ``type``/``code`` default to what the real API uses for ``status``.

    ``message`` defaults to the HTTP reason phrase. ``body`` replaces the whole JSON body.
    """
    default_type, default_code = _ERROR_DEFAULTS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None)
    )
    if message is None:
        try:
            message = f"fake error: {HTTPStatus(status).phrase}"
        except ValueError:
            message = f"fake error: HTTP {status}"
    return ErrorReply(
        status=status,
        message=message,
        type=type if type is not None else default_type,
        code=code if code is not None else default_code,
        headers=dict(headers or {}),
        body=body,
    )


def raw(status: int, body: bytes | str, headers: Mapping[str, str] | None = None) -> RawReply:
    """Send arbitrary (possibly malformed) bytes; a ``str`` body is UTF-8 encoded."""
    data = body.encode() if isinstance(body, str) else body
    return RawReply(status=status, body=data, headers=dict(headers or {}))


def delay(seconds: float, then_reply: ReplyLike) -> DelayReply:
    """Sleep ``seconds`` before answering with ``then_reply``."""
    return DelayReply(seconds=seconds, then=then_reply)


def hold(release: threading.Event, then_reply: ReplyLike) -> HoldReply:
    """Answer with ``then_reply`` once the test sets ``release``."""
    return HoldReply(release=release, then=then_reply)


def drop() -> DropReply:
    """Close the connection without answering."""
    return DropReply()


def streamed(
    reply: Completion | str,
    *,
    piece_chars: int = DEFAULT_PIECE_CHARS,
    piece_seconds: float = 0.0,
    split_call_header: bool = False,
    interleave: bool = False,
    hold_after: int | None = None,
    release: threading.Event | None = None,
    drop_after: int | None = None,
    finish: bool = True,
    done: bool = True,
    extra_pieces: tuple[Mapping[str, Any], ...] = (),
) -> StreamedReply:
    """Stream ``reply`` in pieces of ``piece_chars`` (see :class:`StreamedReply`)."""
    if piece_chars < 1:
        raise ValueError("piece_chars must be at least 1")
    if (hold_after is None) != (release is None):
        raise ValueError("hold_after and release go together")
    return StreamedReply(
        completion=text(reply) if isinstance(reply, str) else reply,
        piece_chars=piece_chars,
        piece_seconds=piece_seconds,
        split_call_header=split_call_header,
        interleave=interleave,
        hold_after=hold_after,
        release=release,
        drop_after=drop_after,
        finish=finish,
        done=done,
        extra_pieces=extra_pieces,
    )


STREAM_NOT_SUPPORTED = ErrorReply(
    status=400,
    message="fake server: streaming is not supported (send stream=false)",
    type="invalid_request_error",
    code="stream_not_supported",
)
"""What :attr:`FakeOpenAIServer.refuse_streaming` answers by default."""


# --------------------------------------------------------------------------------------
# Recording
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedRequest:
    """One request received on ``POST /v1/chat/completions``.

    ``headers`` keys are lower-cased (``req.headers["authorization"]``). ``body`` is the
    parsed JSON (``{}`` if it was not a JSON object; ``raw`` keeps the bytes). Indexing
    delegates to ``body`` so ``server.requests[0]["messages"]`` works too.
    """

    body: dict[str, Any]
    headers: dict[str, str]
    raw: bytes = b""
    path: str = "/v1/chat/completions"

    def __getitem__(self, key: str) -> Any:
        return self.body[key]

    def __contains__(self, key: object) -> bool:
        return key in self.body

    def get(self, key: str, default: Any = None) -> Any:
        """``body.get(key, default)``."""
        return self.body.get(key, default)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The request's ``messages`` list (empty if absent)."""
        msgs = self.body.get("messages", [])
        return msgs if isinstance(msgs, list) else []


# --------------------------------------------------------------------------------------
# Server
# --------------------------------------------------------------------------------------


class _HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that tracks its handler threads and connection sockets.

    Tracking lets :meth:`FakeOpenAIServer.stop` unblock idle keep-alive connections (by
    shutting their sockets down) and join every handler thread, so nothing leaks.
    """

    daemon_threads = True
    block_on_close = False  # we join our own tracked threads, with a timeout
    allow_reuse_address = True

    def __init__(self, fake: FakeOpenAIServer) -> None:
        self.fake = fake
        self._track_lock = threading.Lock()
        self._conn_sockets: set[socket.socket] = set()
        self._conn_threads: set[threading.Thread] = set()
        super().__init__(("127.0.0.1", 0), _RequestHandler)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self._run_connection,
            args=(request, client_address),
            name=f"fake-openai-conn-{client_address[1]}",
            daemon=True,
        )
        with self._track_lock:
            self._conn_sockets.add(request)
            self._conn_threads.add(thread)
        thread.start()

    def _run_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            with self._track_lock:
                self._conn_sockets.discard(request)
                self._conn_threads.discard(threading.current_thread())

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet about clients that went away; report anything else."""
        if isinstance(sys.exc_info()[1], OSError):  # includes ConnectionError, TimeoutError
            return
        self.fake._note_error(f"connection handler crashed:\n{traceback.format_exc()}")

    def close_connections(self) -> list[threading.Thread]:
        """Shut down every open connection socket; return the threads still running."""
        with self._track_lock:
            sockets = list(self._conn_sockets)
            threads = list(self._conn_threads)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        return threads


class _RequestHandler(BaseHTTPRequestHandler):
    """Speaks just enough HTTP/1.1 (keep-alive, Content-Length, chunked uploads)."""

    protocol_version = "HTTP/1.1"
    server_version = "FakeOpenAI/1.0"
    server: _HTTPServer

    # -- plumbing ----------------------------------------------------------------------

    def log_message(self, format: str, *args: Any) -> None:
        """Silence per-request logging; tests inspect ``server.requests`` instead."""

    def _read_body(self) -> bytes:
        """Read the whole request body so the next request on the connection parses."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                size_line = self.rfile.readline()
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # discard trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()  # CRLF after each chunk
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send(self, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        """Write a complete response; always with an exact Content-Length."""
        extra = {k: v for k, v in (headers or {}).items() if k.lower() != "content-length"}
        self.send_response(status)
        if not any(k.lower() == "content-type" for k in extra):
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-request-id", self.server.fake._next_id("req_"))
        for key, value in extra.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        self.server.fake._note_sent()

    def _send_json(
        self, status: int, payload: Mapping[str, Any], headers: Mapping[str, str] | None = None
    ) -> None:
        self._send(status, json.dumps(payload).encode(), headers)

    def _send_error_json(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        body = {"error": {"message": message, "type": type, "param": None, "code": code}}
        self._send_json(status, body, headers)

    def _send_stream(self, reply: StreamedReply, request_body: Mapping[str, Any]) -> None:
        """Server-sent events, one ``chat.completion.chunk`` per event, in chunked encoding."""
        fake = self.server.fake
        chunks = fake._stream_chunks(reply, request_body)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-request-id", fake._next_id("req_"))
        for key, value in reply.completion.headers.items():
            if key.lower() not in ("content-length", "content-type", "transfer-encoding"):
                self.send_header(key, value)
        self.end_headers()
        events = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks]
        for sent, event in enumerate(events):
            if sent == reply.drop_after:
                self._drop()
                return
            if reply.piece_seconds and fake._stop_event.wait(reply.piece_seconds):
                self._drop()  # server is stopping: don't keep anyone waiting
                return
            if sent == reply.hold_after and reply.release is not None:
                while not reply.release.wait(_POLL_INTERVAL):
                    if fake._stop_event.is_set():
                        self._drop()
                        return
            self._write_chunk(event.encode())
            fake._note_chunk()
        if reply.done:
            self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        fake._note_sent()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        """Abort the connection: no response, and the handler loop ends."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    # -- routing -----------------------------------------------------------------------

    def _path(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/")

    def do_GET(self) -> None:
        self._read_body()
        if self._path() == "/v1/models":
            created = int(time.time())
            models = [DEFAULT_MODEL, "gpt-4o-mini"]
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": m, "object": "model", "created": created, "owned_by": "fake"}
                        for m in models
                    ],
                },
            )
        else:
            self._not_found()

    def do_POST(self) -> None:
        raw_body = self._read_body()
        if self._path() != "/v1/chat/completions":
            self._not_found()
            return
        fake = self.server.fake
        try:
            parsed = json.loads(raw_body) if raw_body else None
        except ValueError:
            parsed = None
        body: dict[str, Any] = parsed if isinstance(parsed, dict) else {}
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake._record(RecordedRequest(body=body, headers=headers, raw=raw_body, path=self.path))

        if not isinstance(parsed, dict):
            self._send_error_json(400, "fake server: request body is not a JSON object")
            return
        refusal = fake.refuse_streaming
        if body.get("stream") and refusal is not None:
            self._serve(refusal, body)  # a refused stream request consumes no scripted reply
            return

        try:
            reply = fake._next_reply(body)
        except Exception:
            message = f"fake server: handler raised\n{traceback.format_exc()}"
            fake._note_error(message)
            self._send_error_json(
                500, message, type="fake_server_error", headers={"x-should-retry": "false"}
            )
            return
        if reply is None:
            message = (
                f"fake server: script exhausted - no reply queued for request "
                f"#{fake.request_count} and no handler set"
            )
            fake._note_error(message)
            self._send_error_json(
                500,
                message,
                type="fake_server_error",
                code="script_exhausted",
                headers={"x-should-retry": "false"},
            )
            return
        self._serve(reply, body)

    def do_DELETE(self) -> None:
        self._read_body()
        self._not_found()

    do_PUT = do_PATCH = do_DELETE

    def _not_found(self) -> None:
        self._send_error_json(
            404, f"fake server: no route for {self.command} {self.path}", code="unknown_url"
        )

    # -- replies -----------------------------------------------------------------------

    def _serve(self, reply: ReplyLike, request_body: dict[str, Any]) -> None:
        fake = self.server.fake
        if isinstance(reply, str):
            reply = text(reply)
        if request_body.get("stream") is True and isinstance(reply, Completion):
            reply = StreamedReply(completion=reply)
        if isinstance(reply, StreamedReply):
            if request_body.get("stream") is True:
                self._send_stream(reply, request_body)
                return
            reply = reply.completion
        if isinstance(reply, DelayReply):
            if fake._stop_event.wait(reply.seconds):
                self._drop()  # server is stopping: don't keep anyone waiting
                return
            self._serve(reply.then, request_body)
        elif isinstance(reply, HoldReply):
            while not reply.release.wait(_POLL_INTERVAL):
                if fake._stop_event.is_set():
                    self._drop()  # server is stopping: don't keep anyone waiting
                    return
            self._serve(reply.then, request_body)
        elif isinstance(reply, DropReply):
            self._drop()
        elif isinstance(reply, RawReply):
            self._send(reply.status, reply.body, reply.headers)
        elif isinstance(reply, ErrorReply):
            payload: Mapping[str, Any]
            if reply.body is not None:
                payload = reply.body
            else:
                payload = {
                    "error": {
                        "message": reply.message,
                        "type": reply.type,
                        "param": None,
                        "code": reply.code,
                    }
                }
            self._send_json(reply.status, payload, reply.headers)
        elif isinstance(reply, Completion):
            self._send_json(200, fake._completion_json(reply, request_body), reply.headers)
        else:
            message = f"fake server: unsupported reply object {reply!r}"
            fake._note_error(message)
            self._send_error_json(500, message, type="fake_server_error")


class FakeOpenAIServer:
    """A fake OpenAI Chat Completions endpoint on ``127.0.0.1:<free port>``.

    Use as a context manager or call :meth:`start`/:meth:`stop`. Point the real client at
    :attr:`base_url`. All public methods are thread-safe: the server answers from its own
    threads while the test (or a Temporal worker) drives the client.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[ReplyLike] = deque()
        self._handler: Handler | None = None
        self._requests: list[RecordedRequest] = []
        self._errors: list[str] = []
        self._sent = 0
        self._chunks = 0
        self._counters: dict[str, Iterator[int]] = {}
        self.refuse_streaming: ReplyLike | None = None
        """When set (e.g. to ``STREAM_NOT_SUPPORTED``), every ``"stream": true`` request gets
        this reply instead of a scripted one, which stays queued."""
        self.prompt_cache: Literal["openai", "llama-server"] | None = None
        """When set, the server acts as if it had a prompt cache holding the previous request:
        each reply's usage reports the prompt's tokens (its tools, then each message, as JSON,
        4 characters a token) and how many of them the previous request's prompt already had
        (the common prefix), as OpenAI does (``usage.prompt_tokens_details.cached_tokens``) or
        as llama-server does (a top-level ``timings`` with ``cache_n`` and ``prompt_n``)."""
        self._cached_prompt = ""
        self._stop_event = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        """Bind a free port and serve from a daemon thread. Returns ``self``."""
        if self._httpd is not None:
            raise RuntimeError("FakeOpenAIServer already started")
        self._stop_event.clear()
        self._httpd = _HTTPServer(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": _POLL_INTERVAL},
            name=f"fake-openai-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving, abort open connections and pending delays, join all threads.

        Idempotent. Safe to call while a client is still connected.
        """
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        httpd.shutdown()  # stop accepting; returns once serve_forever has exited
        self._stop_event.set()  # wake handlers sleeping in delay()
        deadline = time.monotonic() + timeout
        for conn_thread in httpd.close_connections():
            conn_thread.join(max(0.0, deadline - time.monotonic()))
        httpd.server_close()
        thread.join(max(0.0, deadline - time.monotonic()))
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound TCP port (only valid while running)."""
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1`` — pass as ``AsyncOpenAI(base_url=...)``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting ---------------------------------------------------------------------

    def enqueue(self, *replies: ReplyLike) -> None:
        """Append replies to the FIFO script; each chat request consumes one."""
        with self._lock:
            self._queue.extend(replies)

    def set_handler(self, handler: Handler | None) -> None:
        """Answer with ``handler(body)`` whenever the queue is empty (``None`` clears it)."""
        with self._lock:
            self._handler = handler

    @property
    def pending_replies(self) -> int:
        """How many queued replies have not been consumed yet."""
        with self._lock:
            return len(self._queue)

    def reset(self) -> None:
        """Forget queued replies, the handler, recorded requests, errors, the sent count and the
        prompt cache."""
        with self._lock:
            self._queue.clear()
            self._handler = None
            self._requests.clear()
            self._errors.clear()
            self._sent = 0
            self._chunks = 0
            self.refuse_streaming = None
            self.prompt_cache = None
            self._cached_prompt = ""

    # -- inspection --------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Snapshot of every chat-completions request received, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        """Number of chat-completions requests received."""
        with self._lock:
            return len(self._requests)

    @property
    def last_request(self) -> RecordedRequest:
        """The most recent chat-completions request (``IndexError`` if none)."""
        with self._lock:
            return self._requests[-1]

    @property
    def responses_sent(self) -> int:
        """How many responses (any status, any route) were written out completely."""
        with self._lock:
            return self._sent

    @property
    def chunks_sent(self) -> int:
        """How many streamed ``chat.completion.chunk`` events were written, over all streams."""
        with self._lock:
            return self._chunks

    @property
    def errors(self) -> list[str]:
        """Server-side problems (handler crashes, exhausted script); assert it is empty."""
        with self._lock:
            return list(self._errors)

    # -- internals used by the request handler -----------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _note_sent(self) -> None:
        with self._lock:
            self._sent += 1

    def _note_chunk(self) -> None:
        with self._lock:
            self._chunks += 1

    def _note_error(self, message: str) -> None:
        with self._lock:
            self._errors.append(message)

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            counter = self._counters.setdefault(prefix, itertools.count(1))
            return f"{prefix}{next(counter)}"

    def _next_reply(self, body: dict[str, Any]) -> ReplyLike | None:
        """Pop the next scripted reply, else ask the handler, else ``None`` (exhausted)."""
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            handler = self._handler
        if handler is None:
            return None
        reply = handler(body)
        if not isinstance(reply, (str, *_REPLY_TYPES)):
            raise TypeError(f"handler returned {reply!r}, expected a reply object or str")
        return reply

    def _completion_json(
        self, reply: Completion, request_body: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Render ``reply`` exactly as the real API shapes a non-streaming completion."""
        message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": tc.id if tc.id is not None else self._next_id("call_"),
                    "type": "function",
                    "function": {"name": tc.name, "arguments": tc.arguments},
                    **tc.extra,
                }
                for tc in reply.tool_calls
            ]
        if reply.reasoning_content is not None:
            message[reply.reasoning_key] = reply.reasoning_content
        message.update(reply.message_extra)
        model = reply.model or request_body.get("model") or DEFAULT_MODEL
        body: dict[str, Any] = {
            "id": self._next_id("chatcmpl-fake"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": reply.finish_reason,
                }
            ],
        }
        if reply.usage is not None:
            body.update(self._usage_fields(reply.usage, request_body))
        return body

    def _usage_fields(
        self, usage: tuple[int, int], request_body: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The body's ``usage`` (and, acting as llama-server with a prompt cache, ``timings``)."""
        if self.prompt_cache is None:
            return {"usage": _usage_json(usage)}
        messages = request_body.get("messages", [])
        prompt = json.dumps(request_body.get("tools", [])) + "".join(map(json.dumps, messages))
        with self._lock:
            common = len(os.path.commonprefix([self._cached_prompt, prompt]))  # noqa: RUF071 (characters are meant)
            self._cached_prompt = prompt
        prompt_tokens, cached = (len(prompt) + 3) // 4, common // 4
        fields: dict[str, Any] = {"usage": _usage_json((prompt_tokens, usage[1]))}
        if self.prompt_cache == "openai":
            fields["usage"]["prompt_tokens_details"] = {"cached_tokens": cached}
        else:
            fields["timings"] = {"cache_n": cached, "prompt_n": prompt_tokens - cached}
        return fields

    def _stream_chunks(
        self, streamed: StreamedReply, request_body: Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        """``streamed.completion`` as the real API streams it: a list of chunk objects."""
        reply = streamed.completion
        size = streamed.piece_chars
        options = request_body.get("stream_options")
        include_usage = isinstance(options, Mapping) and options.get("include_usage") is True
        header = {
            "id": self._next_id("chatcmpl-fake"),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": reply.model or request_body.get("model") or DEFAULT_MODEL,
            "system_fingerprint": None,
        }

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            body = {
                **header,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
                ],
            }
            if include_usage:
                body["usage"] = None
            return body

        chunks = [
            chunk(
                {
                    "role": "assistant",
                    "content": "" if reply.content is not None else None,
                    "refusal": None,
                }
            )
        ]
        if reply.reasoning_content is not None:
            chunks += [
                chunk({"content": None, reply.reasoning_key: piece})
                for piece in _pieces(reply.reasoning_content, size)
            ]
        if streamed.extra_pieces:
            chunks += [chunk({"content": None, **dict(piece)}) for piece in streamed.extra_pieces]
        elif reply.message_extra:
            chunks.append(chunk({"content": None, **dict(reply.message_extra)}))
        if reply.content:
            chunks += [chunk({"content": piece}) for piece in _pieces(reply.content, size)]
        per_call: list[list[dict[str, Any]]] = []
        for index, tc in enumerate(reply.tool_calls):
            call_id = tc.id if tc.id is not None else self._next_id("call_")
            if streamed.split_call_header:
                deltas: list[dict[str, Any]] = [
                    {"index": index, "id": call_id, "type": "function", **tc.extra},
                    {"index": index, "function": {"name": tc.name}},
                ]
            else:
                deltas = [
                    {
                        "index": index,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": tc.name, "arguments": ""},
                        **tc.extra,
                    }
                ]
            deltas += [
                {"index": index, "function": {"arguments": piece}}
                for piece in _pieces(tc.arguments, size)
            ]
            per_call.append(deltas)
        if streamed.interleave:
            ordered = [d for group in itertools.zip_longest(*per_call) for d in group if d]
        else:
            ordered = [d for deltas in per_call for d in deltas]
        chunks += [chunk({"tool_calls": [delta]}) for delta in ordered]
        if streamed.finish:
            chunks.append(chunk({}, reply.finish_reason))
        if include_usage and reply.usage is not None:
            chunks.append(
                {**header, "choices": [], **self._usage_fields(reply.usage, request_body)}
            )
        return chunks


def _pieces(text: str, size: int) -> list[str]:
    """``text`` cut into pieces of ``size`` characters (none for an empty text)."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def _usage_json(usage: tuple[int, int]) -> dict[str, Any]:
    prompt_tokens, completion_tokens = usage
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
