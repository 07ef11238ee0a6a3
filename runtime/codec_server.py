"""A Temporal codec server: lets the Web UI and the `temporal` CLI show encrypted payloads.

    python -m runtime.codec_server --port 8081 [--origin http://localhost:8233] [--host 127.0.0.1]

It speaks the remote codec protocol: `POST <endpoint>/decode` and `POST <endpoint>/encode` with
the JSON form of `temporal.api.common.v1.Payloads`, i.e.
`{"payloads": [{"metadata": {"encoding": "<base64>"}, "data": "<base64>"}]}`, and answers in the
same form. Browsers from the `--origin`s (the Web UI) may call it (CORS).

Environment: AGENT_PAYLOAD_KEY (base64 AES-256 key), AGENT_PAYLOAD_KEY_ID (default "default"),
AGENT_PAYLOAD_PREVIOUS_KEYS (`id=base64key,...`, decode only) and AGENT_CODEC_TOKEN: when set,
every /encode and /decode request must carry `Authorization: Bearer <token>`
(`temporal ... --codec-auth "Bearer <token>"`), else it gets 401.

Only the standard library is used; the server binds to 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import argparse
import hmac
import json
import logging
import os
import sys
import threading
from collections.abc import Iterable, Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads

from runtime.codec import EncryptionCodec, PayloadDecryptionError, codec_from_env

log = logging.getLogger("codec_server")

TOKEN_ENV = "AGENT_CODEC_TOKEN"
DEFAULT_PORT = 8081
DEFAULT_ORIGINS = ("http://localhost:8233", "http://127.0.0.1:8233")
MAX_BODY_BYTES = 64 * 1024 * 1024
ALLOWED_HEADERS = "Authorization, Content-Type, X-Namespace"


class _Handler(BaseHTTPRequestHandler):
    server: CodecHTTPServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        log.info("%s %s", self.address_string(), format % args)

    # -- helpers -----------------------------------------------------------------------------

    def _cors_headers(self) -> None:
        origin = self.headers.get("Origin")
        if origin and (origin in self.server.origins or "*" in self.server.origins):
            self.send_header("Access-Control-Allow-Origin", origin)
            self.send_header("Access-Control-Allow-Credentials", "true")
            self.send_header("Access-Control-Allow-Methods", "POST, OPTIONS")
            self.send_header("Access-Control-Allow-Headers", ALLOWED_HEADERS)
            self.send_header("Access-Control-Max-Age", "600")
            if self.headers.get("Access-Control-Request-Private-Network") == "true":
                self.send_header("Access-Control-Allow-Private-Network", "true")
            self.send_header("Vary", "Origin")

    def _reply(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self._cors_headers()
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        if status == HTTPStatus.UNAUTHORIZED:
            self.send_header("WWW-Authenticate", 'Bearer realm="codec"')
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: HTTPStatus, message: str) -> None:
        self._reply(status, json.dumps({"error": message}).encode(), "application/json")

    def _authorized(self) -> bool:
        token = self.server.token
        if token is None:
            return True
        scheme, _, given = (self.headers.get("Authorization") or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode(), token.encode()
        )

    def _operation(self) -> str | None:
        path = self.path.split("?", 1)[0].rstrip("/")
        for name in ("encode", "decode"):
            if path.endswith("/" + name):
                return name
        return None

    # -- methods -----------------------------------------------------------------------------

    def do_OPTIONS(self) -> None:  # CORS preflight: never needs the token
        self.send_response(HTTPStatus.NO_CONTENT)
        self._cors_headers()
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0].rstrip("/") in ("", "/health"):
            self._reply(HTTPStatus.OK, b"ok\n", "text/plain")
        else:
            self._error(HTTPStatus.NOT_FOUND, "POST /encode or /decode")

    def do_POST(self) -> None:
        operation = self._operation()
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self.close_connection = True
            self._error(HTTPStatus.BAD_REQUEST, "bad Content-Length")
            return
        if operation is None:
            self._discard(length)
            self._error(HTTPStatus.NOT_FOUND, "POST /encode or /decode")
            return
        if not self._authorized():
            self._discard(length)
            self._error(HTTPStatus.UNAUTHORIZED, "missing or wrong bearer token")
            return
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request body too large")
            return
        body = self.rfile.read(length)
        try:
            payloads = json_format.Parse(body, Payloads(), ignore_unknown_fields=True)
        except (json_format.ParseError, UnicodeDecodeError) as error:
            self._error(HTTPStatus.BAD_REQUEST, f"body is not JSON Payloads: {error}")
            return
        codec = self.server.codec
        try:
            if operation == "encode":
                result = [codec.encrypt(p) for p in payloads.payloads]
            else:
                result = [codec.decrypt(p) for p in payloads.payloads]
        except PayloadDecryptionError as error:
            self._error(HTTPStatus.BAD_REQUEST, str(error))
            return
        out = json_format.MessageToJson(Payloads(payloads=result), indent=None)
        self._reply(HTTPStatus.OK, out.encode(), "application/json")

    def _discard(self, length: int) -> None:
        if 0 < length <= MAX_BODY_BYTES:
            self.rfile.read(length)
        elif length:
            self.close_connection = True


class CodecHTTPServer(ThreadingHTTPServer):
    """The codec server; `with CodecHTTPServer(...) as server:` runs it in a thread."""

    daemon_threads = True

    def __init__(
        self,
        codec: EncryptionCodec,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        origins: Iterable[str] = DEFAULT_ORIGINS,
        token: str | None = None,
    ) -> None:
        self.codec = codec
        self.origins = frozenset(o.rstrip("/") for o in origins)
        self.token = token or None
        self._thread: threading.Thread | None = None
        super().__init__((host, port), _Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        host = self.server_address[0]
        host = host if isinstance(host, str) else host.decode()
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        return f"http://{host}:{self.port}"

    def start(self) -> CodecHTTPServer:
        """Serve in a daemon thread."""
        self._thread = threading.Thread(
            target=self.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="codec-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self.shutdown()
            self._thread.join()
            self._thread = None
        self.server_close()

    def __enter__(self) -> CodecHTTPServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def server_from_env(
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    origins: Iterable[str] = DEFAULT_ORIGINS,
    env: Mapping[str, str] | None = None,
) -> CodecHTTPServer:
    """A codec server with the key(s) and token of the environment."""
    env = os.environ if env is None else env
    codec = codec_from_env(env)
    if codec is None:
        raise ValueError(
            "AGENT_PAYLOAD_KEY is not set: the codec server needs the key the worker uses "
            "(generate one with `python -m runtime.codec`)"
        )
    token = env.get(TOKEN_ENV, "").strip() or None
    return CodecHTTPServer(codec, host=host, port=port, origins=origins, token=token)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m runtime.codec_server",
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
    logging.basicConfig(
        level=os.environ.get("LOG_LEVEL", "INFO"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    origins = args.origins or list(DEFAULT_ORIGINS)
    try:
        server = server_from_env(args.host, args.port, origins)
    except (ValueError, OSError) as error:
        log.error("codec server not started: %s", error)
        sys.exit(2)
    if server.token is None and args.host not in ("127.0.0.1", "localhost", "::1"):
        log.warning(
            "listening on %s without %s: anyone who reaches this port can decrypt payloads",
            args.host,
            TOKEN_ENV,
        )
    log.info(
        "codec server on %s (key ids: %s; encrypting with %r; token %s; CORS origins: %s)",
        server.url,
        ", ".join(server.codec.key_ids),
        server.codec.key_id,
        "required" if server.token else "not required",
        ", ".join(sorted(server.origins)),
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
