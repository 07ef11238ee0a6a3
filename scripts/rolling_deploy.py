"""A rolling deploy with Worker Versioning, end to end against a dev server (docs/fleet.md):

    python -m scripts.rolling_deploy [--runs 3]

1. start a dev server and worker v1 (`AGENT_DEPLOYMENT_NAME=agents AGENT_BUILD_ID=v1 python
   worker.py`, the offline demo model) and make v1 current;
2. start runs and a session that each wait for an approval (`write_file`);
3. start worker v2 and make it current (`temporal worker deployment set-current-version`);
4. approve everything; check that the pinned runs finished on v1, that the session's next turn
   ran on v2, and that every approved file was written;
5. wait until v1 is drained (no open pinned run) and stop it.

It prints each step and the `temporal` commands it runs, with their output (of the looks at
v1's drainage, the first and the last). With `--out FILE` it also writes that transcript, the
outcome and how long the drain took as JSON: docs/fleet.md shows a recorded run,

    python -m scripts.docs.benchmarks record rolling-deploy --result /tmp/deploy.json -- \\
        .venv/bin/python -m scripts.rolling_deploy --runs 2 --out /tmp/deploy.json

since most of a run is the server's drain (minutes), too long for `make test`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_agents.runtime.dev_server import DevServer, temporal_cli
from testkit.crash_tools import WorkerProcess, free_port

DEPLOYMENT = "agents"
QUEUE = "agents-deploy"


def say(text: str) -> None:
    print(f"\n== {text}", flush=True)


def cli(address: str, *args: str, shown: bool = True) -> str:
    """`temporal ARGS` against `address`; printed as typed with its output unless not `shown`
    (then `cli_shown` prints it later); its output."""
    command = [str(temporal_cli()), *args, "--address", address]
    out = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if shown:
        print(cli_shown(args, out.stdout + out.stderr), flush=True)
    if out.returncode != 0:
        raise RuntimeError(f"temporal {' '.join(args)} failed: {out.stderr.strip()}")
    return out.stdout


def cli_shown(args: tuple[str, ...], output: str) -> str:
    """A `temporal` command as the reader types it, and its output."""
    return f"$ {' '.join(['temporal', *args])}\n{output.rstrip()}"


def worker_env(address: str, folder: Path, build_id: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TEMPORAL_", "OPENAI_", "AGENT_", "MEMORY_"))
    }
    return env | {
        "TEMPORAL_ADDRESS": address,
        "TASK_QUEUE": QUEUE,
        "AGENT_WORKSPACE": str(folder / "workspace"),
        "MEMORY_DATABASE_PATH": str(folder / "memory.db"),
        "AGENT_DEPLOYMENT_NAME": DEPLOYMENT,
        "AGENT_BUILD_ID": build_id,
        "WORKER_DRAIN_SECONDS": "5",
        "PYTHONUNBUFFERED": "1",
    }


async def set_current(address: str, build_id: str) -> None:
    """`set-current-version`, once the server has seen the version's pollers (a moment after
    its worker is ready)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            cli(address, "worker", "deployment", "set-current-version",
                "--deployment-name", DEPLOYMENT, "--build-id", build_id, "--yes")  # fmt: skip
            return
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(1)


async def version_of(handle: WorkflowHandle[Any, Any]) -> tuple[str, str]:
    """(behaviour, build id) the server records for the execution."""
    info = (await handle.describe()).raw_description.workflow_execution_info.versioning_info
    behavior = {0: "unspecified", 1: "pinned", 2: "auto_upgrade"}.get(info.behavior, "?")
    return behavior, info.deployment_version.build_id


async def until(probe: Any, what: str, timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = await probe()
        if value:
            return value
        await asyncio.sleep(0.5)
    raise RuntimeError(f"timed out waiting for {what}")


class Tee(io.StringIO):
    """What the script prints, kept as well as printed (the transcript `--out` writes)."""

    def __init__(self, printed: TextIO) -> None:
        super().__init__()
        self.printed = printed

    def write(self, text: str) -> int:
        self.printed.write(text)
        return super().write(text)

    def flush(self) -> None:
        self.printed.flush()


DRAIN_TIMEOUT_SECONDS = 420


async def drain(address: str) -> float:
    """Look at v1's drainage every half second until the server says drained (up to 7
    minutes): the first and the last look printed, with how many came between; the seconds it
    took."""
    args = ("worker", "deployment", "describe-version",
            "--deployment-name", DEPLOYMENT, "--build-id", "v1")  # fmt: skip
    started, looks = time.monotonic(), 0

    async def drained() -> bool:
        nonlocal looks
        out = cli(address, *args, shown=looks == 0)
        looks += 1
        done = "Drained" in out or "DRAINED" in out.upper().replace("_", "")
        if done and looks > 1:
            between = f"{looks - 2} more looks, " if looks > 2 else ""
            print(f"... ({between}{time.monotonic() - started:.0f} s later)")
            print(cli_shown(args, out), flush=True)
        return done

    await until(drained, "v1 to drain", timeout=DRAIN_TIMEOUT_SECONDS)
    return round(time.monotonic() - started, 1)


async def deploy(runs: int, folder: Path, outcome: dict[str, Any]) -> int:
    port, ui_port = free_port(), free_port()
    server = DevServer.start(db_file=folder / "dev.db", port=port, ui_port=ui_port)
    address = server.address
    workers: list[WorkerProcess] = []
    try:
        client = await Client.connect(address, data_converter=pydantic_data_converter)
        say("1. worker v1, made current")
        v1 = await WorkerProcess.start(worker_env(address, folder, "v1"), folder / "v1.log", 90)
        workers.append(v1)
        await set_current(address, "v1")

        say(f"2. {runs} runs and a session, each waiting for an approval")
        handles = [
            await client.start_workflow(
                "AgentWorkflow",
                {"prompt": f"Write hello world to run-{n}.txt"},
                id=f"deploy-run-{n}",
                task_queue=QUEUE,
            )
            for n in range(runs)
        ]
        session = await client.start_workflow(
            "SessionWorkflow", {}, id="deploy-session", task_queue=QUEUE
        )
        await session.signal("send", {"text": "Write hello world to session.txt"})
        for handle in [*handles, session]:
            await until(lambda h=handle: h.query("pending_approvals"), f"{handle.id} to wait")
            print(f"{handle.id}: waiting for approval on {await version_of(handle)}")

        say("3. worker v2, made current")
        v2 = await WorkerProcess.start(worker_env(address, folder, "v2"), folder / "v2.log", 90)
        workers.append(v2)
        await set_current(address, "v2")
        cli(address, "worker", "deployment", "describe", "--name", DEPLOYMENT)

        say("4. approve everything")
        for handle in [*handles, session]:
            await handle.signal("approve", {"call_id": "*", "by": "deployer"})
        problems = []
        for handle in handles:
            result = await handle.result()
            where = await version_of(handle)
            print(f"{handle.id}: {result['stop_reason']} on {where}: {result['answer']}")
            if where != ("pinned", "v1"):
                problems.append(f"{handle.id} finished on {where}, not pinned to v1")
        await session.execute_update("send", {"text": "What is 17 * 25?"})
        history = await session.query("history")
        where = await version_of(session)
        print(f"{session.id}: {len(history)} turns, now on {where}; last: {history[-1]['answer']}")
        if where[1] != "v2":
            problems.append(f"the session's next turn ran on {where}, not v2")
        written = sorted(p.name for p in (folder / "workspace").iterdir())
        print(f"files written: {written}")
        expected = sorted([*(f"run-{n}.txt" for n in range(runs)), "session.txt"])
        if written != expected:
            problems.append(f"written {written}, expected {expected}")

        say("5. drain v1 and stop it")
        outcome["drain_seconds"] = await drain(address)
        print(f"v1 stopped: exit {await v1.stop()}")
        await session.signal("end", {"reason": "deployed"})
        print("OK" if not problems else "PROBLEMS:\n" + "\n".join(problems))
        outcome["problems"] = problems
        return 0 if not problems else 1
    finally:
        for worker in workers:
            worker.kill()
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.rolling_deploy", description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, help="write the transcript and outcome as JSON")
    args = parser.parse_args()
    outcome: dict[str, Any] = {"runs": args.runs}
    transcript = Tee(sys.stdout)
    with (
        tempfile.TemporaryDirectory(prefix="rolling-deploy-") as tmp,
        contextlib.redirect_stdout(transcript),
    ):
        code = asyncio.run(deploy(args.runs, Path(tmp), outcome))
    if args.out is not None:
        outcome |= {"exit_code": code, "transcript": transcript.getvalue().strip("\n")}
        args.out.write_text(json.dumps(outcome, indent=1) + "\n")
    return code


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)
