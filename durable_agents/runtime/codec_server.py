"""A Temporal codec server: lets the Web UI and the `temporal` CLI show encrypted payloads,
and payloads stored outside history (`AGENT_PAYLOAD_STORE`, runtime/payload_store.py).

    python -m durable_agents.runtime.codec_server --port 8081
        [--origin http://localhost:8233] [--host 127.0.0.1]

It speaks the remote codec protocol: `POST <endpoint>/decode` and `POST <endpoint>/encode` with
the JSON form of `temporal.api.common.v1.Payloads`, i.e.
`{"payloads": [{"metadata": {"encoding": "<base64>"}, "data": "<base64>"}]}`, and answers in the
same form. Browsers from the `--origin`s (the Web UI) may call it (CORS). `/decode` fetches a
stored payload from the store its reference names (the store the worker uses: the same
`AGENT_PAYLOAD_STORE` and its default), then decrypts it; `/encode` only encrypts.

Settings (runtime/settings.py): AGENT_PAYLOAD_KEY (base64 AES-256 key), AGENT_PAYLOAD_KEY_ID
(default "default"), AGENT_PAYLOAD_PREVIOUS_KEYS (`id=base64key,...`, decode only),
AGENT_CODEC_TOKEN: when set, every /encode and /decode request must carry
`Authorization: Bearer <token>` (`temporal ... --codec-auth "Bearer <token>"`), else it gets
401; AGENT_PAYLOAD_STORE (with a store and no key it only fetches); LOG_LEVEL and LOG_FORMAT.

Served by aiohttp (the `crypto` extra: without it, the server says so in one line); it binds to
127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import json
import logging
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextlib import AsyncExitStack
from types import TracebackType

from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.converter import ExternalStorage

from durable_agents.runtime.codec import EncryptionCodec, PayloadDecryptionError, codec_for
from durable_agents.runtime.extras import MissingExtra, require
from durable_agents.runtime.log_format import configure_logging
from durable_agents.runtime.payload_store import (
    OFF,
    PayloadStoreError,
    StoreSpec,
    external_storage,
    retrieve,
)
from durable_agents.runtime.settings import EnvironmentSettings, SettingsError
from durable_agents.runtime.temporal_client import payload_store_of

try:
    require("crypto", "the codec server", "aiohttp")
except MissingExtra as missing:
    if __name__ == "__main__":  # `python -m durable_agents.runtime.codec_server`: one line
        sys.exit(f"codec server not started: {missing}")
    raise
from aiohttp import web  # after the check above

log = logging.getLogger("codec_server")

TOKEN_ENV = "AGENT_CODEC_TOKEN"
DEFAULT_PORT = 8081
DEFAULT_ORIGINS = ("http://localhost:8233", "http://127.0.0.1:8233")
MAX_BODY_BYTES = 64 * 1024 * 1024
ALLOWED_HEADERS = "Authorization, Content-Type, X-Namespace"
NOT_AN_ENDPOINT = "POST /encode or /decode"
# `<any prefix>/encode` or `<any prefix>/decode` (e.g. one endpoint per namespace), an optional
# trailing slash.
CODEC_ROUTE = r"/{prefix:(?:.*/)?}{operation:encode|decode}{slash:/?}"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _json_error(status: int, message: str) -> web.Response:
    response = web.Response(
        status=status,
        body=json.dumps({"error": message}).encode(),
        content_type="application/json",
    )
    if status == web.HTTPUnauthorized.status_code:
        response.headers["WWW-Authenticate"] = 'Bearer realm="codec"'
    return response


class CodecHTTPServer:
    """The codec server as an aiohttp application.

    `with CodecHTTPServer(...) as server:` (or `start()` / `stop()`) serves it on its own event
    loop in a daemon thread; `await open()` / `await close()` serve it on the running loop.
    Port 0 picks a free port; `port` and `url` tell which once it is open.
    """

    def __init__(
        self,
        codec: EncryptionCodec | None,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        origins: Iterable[str] = DEFAULT_ORIGINS,
        token: str | None = None,
        store: StoreSpec = OFF,
    ) -> None:
        if codec is None and not store.on:
            raise ValueError("a codec server needs a key, a payload store, or both")
        self.codec = codec
        self.store = store
        """Where `/decode` fetches stored payloads from (opened with the server)."""
        self._storage: ExternalStorage | None = None
        self._resources = AsyncExitStack()
        self.host = host
        self.origins = frozenset(o.rstrip("/") for o in origins)
        self.token = token or None
        self._port = port
        self._runner: web.AppRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # -- the application -----------------------------------------------------------------------

    def application(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[self._cors_middleware])
        app.router.add_get("/", self._health)
        app.router.add_get("/health", self._health)
        app.router.add_post(CODEC_ROUTE, self._codec)
        return app

    @web.middleware
    async def _cors_middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """CORS for the Web UI on every answer; preflights (which never need the token) answered
        here; the framework's own errors (no such route, body too large) as JSON."""
        if request.method == "OPTIONS":
            response: web.StreamResponse = web.Response(status=204)
        else:
            try:
                response = await handler(request)
            except web.HTTPException as error:
                message = NOT_AN_ENDPOINT if error.status in (404, 405) else error.reason
                response = _json_error(error.status, message)
            response.headers["Cache-Control"] = "no-store"
        origin = request.headers.get("Origin")
        if origin and (origin in self.origins or "*" in self.origins):
            response.headers.update(
                {
                    "Access-Control-Allow-Origin": origin,
                    "Access-Control-Allow-Credentials": "true",
                    "Access-Control-Allow-Methods": "POST, OPTIONS",
                    "Access-Control-Allow-Headers": ALLOWED_HEADERS,
                    "Access-Control-Max-Age": "600",
                    "Vary": "Origin",
                }
            )
            if request.headers.get("Access-Control-Request-Private-Network") == "true":
                response.headers["Access-Control-Allow-Private-Network"] = "true"
        return response

    async def _health(self, request: web.Request) -> web.Response:
        return web.Response(body=b"ok\n", content_type="text/plain")

    def _authorized(self, request: web.Request) -> bool:
        if self.token is None:
            return True
        scheme, _, given = (request.headers.get("Authorization") or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode(), self.token.encode()
        )

    async def _codec(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return _json_error(401, "missing or wrong bearer token")
        if (request.content_length or 0) > MAX_BODY_BYTES:
            return _json_error(413, "request body too large")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _json_error(413, "request body too large")
        try:
            payloads = json_format.Parse(body, Payloads(), ignore_unknown_fields=True)
        except (json_format.ParseError, UnicodeDecodeError) as error:
            return _json_error(400, f"body is not JSON Payloads: {error}")
        try:
            if request.match_info["operation"] == "encode":
                result = [self._encrypt(p) for p in payloads.payloads]
            else:
                result = [await self._decode(p) for p in payloads.payloads]
        except (PayloadDecryptionError, PayloadStoreError) as error:
            return _json_error(400, str(error))
        out = json_format.MessageToJson(Payloads(payloads=result), indent=None)
        return web.Response(body=out.encode(), content_type="application/json")

    def _encrypt(self, payload: Payload) -> Payload:
        return self.codec.encrypt(payload) if self.codec is not None else payload

    async def _decode(self, payload: Payload) -> Payload:
        """A stored payload fetched (the reference left as it is without a store), then
        decrypted."""
        if self._storage is not None:
            payload = await retrieve(self._storage, payload)
        return self.codec.decrypt(payload) if self.codec is not None else payload

    # -- serving -------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        host = self.host if self.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"

    async def open(self) -> None:
        """Listen on the running event loop (OSError when the port is taken)."""
        self._storage = await self._resources.enter_async_context(external_storage(self.store))
        runner = web.AppRunner(self.application(), access_log=log, shutdown_timeout=2.0)
        await runner.setup()
        try:
            await web.TCPSite(runner, self.host, self._port).start()
        except BaseException:
            await runner.cleanup()
            await self._resources.aclose()
            raise
        self._runner = runner
        self._port = int(runner.addresses[0][1])

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self._resources.aclose()
        self._storage = None

    async def _close_loop(self) -> None:
        """`close`, then end what is left on the thread's loop (idle keep-alive connections)."""
        await self.close()
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    def start(self) -> CodecHTTPServer:
        """Serve on an event loop of its own, in a daemon thread."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="codec-server", daemon=True)
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.open(), loop).result(timeout=30)
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
            raise
        self._loop, self._thread = loop, thread
        return self

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._close_loop(), self._loop).result(timeout=30)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()
            self._loop = self._thread = None

    def __enter__(self) -> CodecHTTPServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def server_for(
    settings: EnvironmentSettings,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    origins: Iterable[str] = DEFAULT_ORIGINS,
) -> CodecHTTPServer:
    """A codec server (not yet listening) with the key(s), the token and the payload store
    of the settings (the store `runtime.temporal_client.payload_store_of` names: the worker's)."""
    codec = codec_for(settings)
    store = payload_store_of(settings)
    if codec is None and not store.on:
        raise ValueError(
            "AGENT_PAYLOAD_KEY is not set and AGENT_PAYLOAD_STORE is off: the codec server "
            "needs the key the worker uses (generate one with `python -m runtime.codec`) or "
            "its payload store"
        )
    token = settings.codec_token.get_secret_value() if settings.codec_token else None
    return CodecHTTPServer(codec, host=host, port=port, origins=origins, token=token, store=store)


def server_from_env(
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    origins: Iterable[str] = DEFAULT_ORIGINS,
    env: Mapping[str, str] | None = None,
) -> CodecHTTPServer:
    """`server_for` the settings of `env` (default: `os.environ`)."""
    return server_for(EnvironmentSettings.from_env(env), host, port, origins)


async def _serve(server: CodecHTTPServer) -> None:
    await server.open()
    if server.token is None and server.host not in ("127.0.0.1", "localhost", "::1"):
        log.warning(
            "listening on %s without %s: anyone who reaches this port can decrypt payloads",
            server.host,
            TOKEN_ENV,
        )
    log.info(
        "codec server on %s (key ids: %s; encrypting with %r; payload store %s; token %s; "
        "CORS origins: %s)",
        server.url,
        ", ".join(server.codec.key_ids) if server.codec else "none",
        server.codec.key_id if server.codec else None,
        server.store.describe(),
        "required" if server.token else "not required",
        ", ".join(sorted(server.origins)),
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await server.close()


def _configure_logging(settings: EnvironmentSettings | None) -> None:
    """LOG_LEVEL / LOG_FORMAT, unless logging is set up already (e.g. when embedded)."""
    if logging.getLogger().handlers:
        return
    if settings is None:
        configure_logging()
    else:
        configure_logging(settings.log_level, settings.log_format)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m durable_agents.runtime.codec_server",
        description="Temporal codec server for the Web UI and the temporal CLI "
        "(key from AGENT_PAYLOAD_KEY, optional token from AGENT_CODEC_TOKEN).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default 8081)")
    parser.add_argument(
        "--origin",
        action="append",
        dest="origins",
        metavar="URL",
        help="Web UI origin allowed by CORS, repeatable "
        f"(default {' and '.join(DEFAULT_ORIGINS)}); '*' allows any",
    )
    args = parser.parse_args(argv)
    try:
        settings = EnvironmentSettings.from_env()
    except SettingsError as error:
        _configure_logging(None)
        log.error("codec server not started: %s", error)
        sys.exit(2)
    _configure_logging(settings)
    try:
        server = server_for(settings, args.host, args.port, args.origins or DEFAULT_ORIGINS)
        asyncio.run(_serve(server))
    except (ValueError, OSError) as error:
        log.error("codec server not started: %s", error)
        sys.exit(2)


if __name__ == "__main__":
    main()
