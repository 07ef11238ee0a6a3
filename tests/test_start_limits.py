"""Limits per principal (issue 35 item 4) through a real `agent serve` (a subprocess with a
principals file), the real worker and dev server: runs started per minute, runs running at
once and tokens per day. A start past a limit is 429 with `Retry-After`, and no workflow
starts; the counts come from Temporal, so a SIGKILLed and restarted `agent serve` still
refuses.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from durable_agents.contracts.agent_result import AgentResult
from durable_agents.servers.auth.principals_file import token_digest
from durable_agents.testing import fake_openai as fake
from testkit.eventually import eventually
from tests.conftest import AgentHarness
from tests.hitl_support import wait_for_pending
from tests.server_process import server_process


def principals_file(tmp_path: Path, limits: str) -> tuple[Path, dict[str, str]]:
    """`alice` with `limits` (a TOML inline table) and `bob` without, both `start` and `read`
    in tenant `acme`; their tokens. The names are new for each test (the dev server, and the
    runs counted, are the whole session's)."""
    tokens = {name: f"{name}-{uuid.uuid4().hex}" for name in ("alice", "bob")}
    suffix = uuid.uuid4().hex[:8]
    path = tmp_path / "principals.toml"
    path.write_text(
        f"""
[[principal]]
name = "alice-{suffix}"
token_sha256 = "{token_digest(tokens["alice"])}"
tenant = "acme"
roles = ["start", "read"]
limits = {limits}

[[principal]]
name = "bob-{suffix}"
token_sha256 = "{token_digest(tokens["bob"])}"
tenant = "acme"
roles = ["start", "read"]
""",
        encoding="utf-8",
    )
    return path, tokens


async def start(url: str, token: str, prompt: str, **extra: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        return await http.post(
            "/v1/runs",
            json={"prompt": prompt, **extra},
            headers={"Authorization": f"Bearer {token}"},
        )


async def runs_of(env: WorkflowEnvironment, agent: AgentHarness, count: int) -> None:
    """Exactly `count` runs on the test's task queue, once visibility shows every start."""

    async def listed() -> bool:
        query = f'TaskQueue = "{agent.task_queue}"'
        found = [w.id async for w in env.client.list_workflows(query)]
        assert len(found) == count, found
        return True

    await eventually(listed, what=f"{count} runs listed")


async def waiting_run(url: str, token: str, env: WorkflowEnvironment) -> WorkflowHandle[Any, Any]:
    """A run started through `url` whose `write_file` call (the fake's next reply) waits."""
    started = await start(url, token, "write it", tools=["write_file"])
    assert started.status_code == 201, started.text
    waiting = env.client.get_workflow_handle(started.json()["workflow_id"])
    await wait_for_pending(waiting)
    return waiting


def assert_refused(response: httpx.Response, limit: str, at_most: int) -> int:
    assert response.status_code == 429, response.text
    body = response.json()
    assert body["limit"] == limit, body
    retry_after = int(response.headers["Retry-After"])
    assert 1 <= retry_after <= at_most and body["retry_after"] == retry_after
    return retry_after


async def test_runs_per_minute_survive_a_restart_of_agent_serve(
    agent: AgentHarness, temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    path, tokens = principals_file(tmp_path, "{ runs_per_minute = 2 }")
    agent.fake.enqueue(*(fake.text(f"answer {n}") for n in range(4)))
    environ = {"AGENT_PRINCIPALS_FILE": str(path)}
    async with server_process(agent, temporal_env, "serve", environ=environ) as served:
        assert (await start(served.url, tokens["alice"], "one")).status_code == 201
        assert (await start(served.url, tokens["alice"], "two")).status_code == 201
        refused = await start(served.url, tokens["alice"], "three")
        assert_refused(refused, "runs_per_minute", 60)
        assert "started 2 runs in the last minute" in refused.json()["error"]
        await served.kill()
    await runs_of(temporal_env, agent, 2)

    async with server_process(agent, temporal_env, "serve", environ=environ) as again:
        assert_refused(await start(again.url, tokens["alice"], "four"), "runs_per_minute", 60)
        assert (await start(again.url, tokens["bob"], "bob's")).status_code == 201
    await runs_of(temporal_env, agent, 3)


async def test_concurrent_runs_free_up_when_a_run_ends(
    agent: AgentHarness, temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    path, tokens = principals_file(tmp_path, "{ concurrent_runs = 1 }")
    agent.fake.enqueue(
        fake.tool_calls(fake.call("write_file", {"path": "a.txt", "content": "x"}, id="w1")),
        fake.text("second done"),
    )
    environ = {"AGENT_PRINCIPALS_FILE": str(path)}
    async with server_process(agent, temporal_env, "serve", environ=environ) as served:
        waiting = await waiting_run(served.url, tokens["alice"], temporal_env)
        assert_refused(await start(served.url, tokens["alice"], "more"), "concurrent_runs", 5)
        await runs_of(temporal_env, agent, 1)

        await waiting.cancel()

        async def started_again() -> bool:  # as a client does after Retry-After (visibility
            second = await start(served.url, tokens["alice"], "now")  # shows the end soon)
            assert second.status_code == 201, second.text
            return True

        await eventually(started_again, what="a start once the run ended")
        assert (await waiting.describe()).status == WorkflowExecutionStatus.CANCELED


async def test_tokens_per_day_are_read_from_the_runs(
    agent: AgentHarness, temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    path, tokens = principals_file(tmp_path, "{ tokens_per_day = 100 }")
    agent.fake.enqueue(fake.text("a long answer", usage=(90, 30)))
    environ = {"AGENT_PRINCIPALS_FILE": str(path)}
    async with server_process(agent, temporal_env, "serve", environ=environ) as served:
        first = await start(served.url, tokens["alice"], "spend")
        assert first.status_code == 201, first.text
        run = temporal_env.client.get_workflow_handle(
            first.json()["workflow_id"], result_type=AgentResult
        )
        used = (await run.result()).usage.total_tokens
        assert used >= 120
        refused = await start(served.url, tokens["alice"], "more")
        retry_after = assert_refused(refused, "tokens_per_day", 86_400)
        assert retry_after > 86_000  # when the run that used them leaves the day
        assert f"used {used} tokens" in refused.json()["error"]
    await runs_of(temporal_env, agent, 1)


async def test_tokens_of_a_run_still_running_count_too(
    agent: AgentHarness, temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A run that waits for an approval has spent its first model call's tokens: read from
    its `status` (the test's namespace keeps no `AgentTokens`)."""
    path, tokens = principals_file(tmp_path, "{ tokens_per_day = 100 }")
    agent.fake.enqueue(
        fake.tool_calls(
            fake.call("write_file", {"path": "a.txt", "content": "x"}, id="w1"), usage=(90, 30)
        )
    )
    environ = {"AGENT_PRINCIPALS_FILE": str(path)}
    async with server_process(agent, temporal_env, "serve", environ=environ) as served:
        waiting = await waiting_run(served.url, tokens["alice"], temporal_env)
        refused = await start(served.url, tokens["alice"], "more")
        assert_refused(refused, "tokens_per_day", 86_400)
        assert (await start(served.url, tokens["bob"], "bob's")).status_code == 201
        await waiting.cancel()
