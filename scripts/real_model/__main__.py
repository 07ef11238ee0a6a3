"""`python -m scripts.real_model [serve|ensure|env]` (`make real-model`): see the package's
docstring for the recipe.

- `serve` (default): build and download what is missing, start `llama-server`, print its base
  URL and the variables that point `make run`'s worker at it, and run until Ctrl-C or SIGTERM,
  which stop the server cleanly.
- `ensure`: only make sure the build and the model are cached (CI, before `make test-real`).
- `env`: print where things are cached and the server build's version.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
from types import FrameType

from scripts.real_model import (
    MODEL_NAME,
    MODEL_SHA256,
    RealModelError,
    RealModelServer,
    cache_root,
    ensure_all,
    model_path,
    server_binary,
    server_version,
    worker_environment,
)


def banner(server: RealModelServer, version: str) -> str:
    exports = " ".join(
        f"{k}={shlex.quote(v)}" for k, v in worker_environment(server.base_url).items()
    )
    return "\n".join(
        [
            f"llama-server ({version}) serving {MODEL_NAME} as model 'local'",
            f"base URL: {server.base_url}",
            "",
            "point the worker at it, in another shell:",
            f"  {exports} make run",
            "or export them first:",
            *(
                f"  export {k}={shlex.quote(v)}"
                for k, v in worker_environment(server.base_url).items()
            ),
            "",
            "Ctrl-C stops the server.",
        ]
    )


def serve(port: int) -> int:
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    server = RealModelServer(port=port)
    try:
        server.start()
        print(banner(server, server_version()), flush=True)
        while not stop.wait(1.0):
            if server.process is not None and server.process.poll() is not None:
                print(f"llama-server exited with {server.process.returncode}", file=sys.stderr)
                return 1
    finally:
        server.stop()
    print("llama-server stopped", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.real_model", description=__doc__)
    parser.add_argument("command", nargs="?", default="serve", choices=["serve", "ensure", "env"])
    parser.add_argument("--port", type=int, default=0, help="default: a free port")
    args = parser.parse_args(argv)
    try:
        if args.command == "ensure":
            binary, model = ensure_all()
            print(f"llama-server: {binary} ({server_version(binary)})")
            print(f"model: {model} (sha256 {MODEL_SHA256})")
            return 0
        if args.command == "env":
            print(f"cache: {cache_root()}")
            print(f"llama-server: {server_binary()} (built: {server_binary().exists()})")
            print(f"model: {model_path()} (cached: {model_path().exists()})")
            return 0
        return serve(args.port)
    except RealModelError as error:
        print(f"real-model: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
