"""A rolling deploy with Worker Versioning, end to end against a dev server (docs/fleet.md):

    python -m scripts.rolling_deploy [--runs 3]

1. start a dev server and worker v1 (`AGENT_DEPLOYMENT_NAME=agents AGENT_BUILD_ID=v1 python
   worker.py`, the offline demo model) and make v1 current;
2. start runs and a session that each wait for an approval (`write_file`);
3. start worker v2 and make it current (`temporal worker deployment set-current-version`);
4. approve everything; check that the pinned runs finished on v1, that the session's next turn
   ran on v2, and that every approved file was written;
5. wait until v1 is drained (no open pinned run) and stop it.

It prints each step and the `temporal` commands it runs, with their output.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_agents.runtime.dev_server import DevServer, temporal_cli
from testkit.crash_tools import WorkerProcess, free_port

DEPLOYMENT = "agents"
QUEUE = "agents-deploy"


def say(text: str) -> None:
    print(f"\n== {text}", flush=True)


def cli(address: str, *args: str) -> str:
    command = [str(temporal_cli()), *args, "--address", address]
    shown = " ".join(["temporal", *args])
    out = subprocess.run(command, capture_output=True, text=True, timeout=60)
    print(f"$ {shown}\n{(out.stdout + out.stderr).rstrip()}", flush=True)
    if out.returncode != 0:
        raise RuntimeError(f"{shown} failed")
    return out.stdout


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


async def deploy(runs: int, folder: Path) -> int:
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

        async def drained() -> bool:
            out = cli(address, "worker", "deployment", "describe-version",
                      "--deployment-name", DEPLOYMENT, "--build-id", "v1")  # fmt: skip
            return "Drained" in out or "DRAINED" in out.upper().replace("_", "")

        await until(drained, "v1 to drain", timeout=420)
        print(f"v1 stopped: exit {await v1.stop()}")
        await session.signal("end", {"reason": "deployed"})
        print("OK" if not problems else "PROBLEMS:\n" + "\n".join(problems))
        return 0 if not problems else 1
    finally:
        for worker in workers:
            worker.kill()
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.rolling_deploy", description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rolling-deploy-") as tmp:
        return asyncio.run(deploy(args.runs, Path(tmp)))


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)
