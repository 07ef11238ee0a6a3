"""A server of the `agent` CLI (`agent a2a`, `agent serve`, ...) as a real subprocess that a test
can kill (SIGKILL: no shutdown of any kind, as a crash or an OOM kill) and start again."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

from temporalio.testing import WorkflowEnvironment

from testkit.eventually import eventually
from tests.conftest import AgentHarness
from tests.test_mcp_gateway import ROOT, clean_env, free_port, gateway_args


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
