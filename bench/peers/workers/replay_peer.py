"""Replay a recorded history with a peer's own workflows and plugins, in the peer's venv
(workload 5; ours replays with `bench.replay`):

    <peer venv>/bin/python -m bench.peers.workers.replay_peer --worker MODULE \
        --history FILE [--workflow-id ID] [--variant V] [--repeats 4]

A fresh `Replayer` each time, like `bench.replay.replay_times`: the first replay is cold (the
sandbox imports the workflow module for the first time). Prints one JSON line:
{"events": N, "seconds": [...]} or {"error": "..."}.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import time
from pathlib import Path

from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from bench.peers.workers import common


async def replay(
    module_name: str, variant: str, workflow_id: str, path: Path, repeats: int
) -> dict[str, object]:
    module = importlib.import_module(module_name)
    workflows_module = importlib.import_module(module_name.replace("_worker", "_workflows"))
    history = WorkflowHistory.from_json(workflow_id, path.read_text())
    times = []
    for _ in range(repeats):
        replayer = Replayer(
            workflows=workflows_module.WORKFLOWS,
            plugins=module.plugins(variant),
            **common.sandbox_runner(variant),
        )
        started = time.perf_counter()
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        times.append(time.perf_counter() - started)
        if result.replay_failure is not None:
            return {"events": len(history.events), "error": f"{result.replay_failure}"}
    return {"events": len(history.events), "seconds": times}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", required=True)
    parser.add_argument("--history", type=Path, required=True)
    parser.add_argument("--workflow-id", default="replay")
    parser.add_argument("--variant", default="docs")
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args()
    result = asyncio.run(
        replay(args.worker, args.variant, args.workflow_id, args.history, args.repeats)
    )
    print(json.dumps(result), flush=True)
    os._exit(0)  # (the SDK's interpreter-exit crash: stack notes)


if __name__ == "__main__":
    main()
