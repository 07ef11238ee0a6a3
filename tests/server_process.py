"""A server of the `agent` CLI (`agent a2a`, `agent serve`, ...) as a real subprocess that a test
can kill (SIGKILL: no shutdown of any kind, as a crash or an OOM kill) and start again."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from testkit.eventually import eventually
from tests.conftest import AgentHarness

ROOT = Path(__file__).resolve().parent.parent
CLI_ENV_VARIABLES = ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TASK_QUEUE", "AGENT_DEBUG")


def gateway_args(agent: AgentHarness, env: WorkflowEnvironment, *extra: str) -> list[str]:
    """The `agent` CLI's arguments for `extra` on the test's dev server and task queue."""
    address = env.client.service_client.config.target_host
    return [
        "-m",
        "durable_agents.cli.main",
        "--address",
        address,
        "--task-queue",
        agent.task_queue,
        *extra,
    ]


def clean_env() -> dict[str, str]:
    """This environment without what would point the CLI elsewhere."""
    return {k: v for k, v in os.environ.items() if k not in CLI_ENV_VARIABLES}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class ServerProcess:
    port: int
    process: asyncio.subprocess.Process

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def kill(self) -> None:
        """SIGKILL, and wait until it is gone."""
        self.process.kill()
        await self.process.wait()


@asynccontextmanager
async def server_process(
    agent: AgentHarness,
    env: WorkflowEnvironment,
    *command: str,
    environ: Mapping[str, str] | None = None,
) -> AsyncIterator[ServerProcess]:
    """`agent <command> --port N` as a subprocess (with `environ` added to its environment),
    once its port answers; stopped after, if still alive."""
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *gateway_args(agent, env, *command, "--port", str(port)),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        cwd=ROOT,
        env={**clean_env(), **(environ or {})},
    )

    async def listening() -> bool:
        assert process.returncode is None, await process.stderr.read()  # type: ignore[union-attr]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.close()
        await writer.wait_closed()
        return True

    try:
        await eventually(
            listening, what=f"agent {' '.join(command)} on {port}", retry_on=(OSError,)
        )
        yield ServerProcess(port, process)
    finally:
        if process.returncode is None:
            process.terminate()
            await process.wait()
