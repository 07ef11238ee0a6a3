"""`make bench --server-address HOST:PORT` (issue 36, part 5): the targets run against a server
already running, e.g. on cores of its own, and no dev server is started for them.

The test's own dev server plays the server on other cores: `bench.run_all`'s stack must connect
to it (a workflow started through the bench's client is seen by a client of that server) and
start no `temporal` process of its own.
"""

from __future__ import annotations

import uuid

import psutil
from temporalio.testing import WorkflowEnvironment

from bench import run_all


def temporal_processes() -> set[int]:
    """The `temporal` processes this test process started (the session's dev server)."""
    return {p.pid for p in psutil.Process().children(recursive=True) if p.name() == "temporal"}


def test_the_flag_is_parsed_and_shown() -> None:
    args = run_all.parse_args(["--server-address", "10.0.0.5:7233", "--only", "1"])
    assert args.server_address == "10.0.0.5:7233"
    assert run_all.server_shown(args) == "external 10.0.0.5:7233"
    assert run_all.parse_args([]).server_address is None
    assert run_all.server_shown(run_all.parse_args([])) == "transferProcessorMaxPollRPS=1000"


async def test_the_stack_uses_the_given_server_and_starts_none(
    temporal_env: WorkflowEnvironment,
) -> None:
    address = temporal_env.client.service_client.config.target_host
    before = temporal_processes()
    args = run_all.parse_args(["--server-address", address])
    async with run_all.server_stack(args) as bench:
        assert temporal_processes() == before  # no dev server started for the bench
        assert bench.address == address
        assert bench.metrics_port is None
        started = await bench.client.start_workflow(
            "NoSuchWorkflow", id=f"bench-address-{uuid.uuid4().hex[:8]}", task_queue="no-worker"
        )
        seen = await temporal_env.client.get_workflow_handle(started.id).describe()
        assert seen.run_id == started.result_run_id  # the same server holds it
        await started.terminate("test over")
