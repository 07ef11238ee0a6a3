"""Target 10 of `make bench`: a 5 MB document through a run, with the payload store on
(`AGENT_PAYLOAD_STORE`, runtime/payload_store.py):

    python -m bench.large_document [--repeats 3]

Three runs of each kind, on one worker whose client stores payloads of 256 KiB or more in a
`file:` store (a temporary folder), against the zero-latency fake model:

- `read_file`: the prompt names a 5 MB file; the model reads it whole (`max_chars` 6 M) and
  answers;
- `prompt`: the 5 MB document is the prompt itself.

Each reports the wall time from start to result, the run's history bytes (the events as
stored), the largest payload in history (the goal: under 512 KB), what went to the store, and
whether the model received the document whole. The `naive` column is the same run without a
store: Temporal refuses it (the gRPC request is over 4 MB), or the worker refuses the
`max_chars`, so it says how.

Standalone it starts its own dev server; `bench.run_all` passes the bench's server.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from bench.report import KIB, Row
from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.runtime.codec import data_converter
from durable_agents.runtime.payload_store import StoreSpec, external_storage, payloads_in
from durable_agents.runtime.workers import build_workers
from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from durable_agents.tools.catalog import CATALOG

MB = 1_000_000
DOCUMENT_CHARS = 5 * MB
HISTORY_PAYLOAD_LIMIT = 512 * 1024
SETTINGS = {"max_observation_chars": 6 * MB, "max_context_tokens": 2_000_000}


def document(size: int = DOCUMENT_CHARS) -> str:
    line = "a line of a large document, the same words again and again, numbered: "
    return "".join(f"{line}{n:08d}\n" for n in range(size // (len(line) + 9) + 1))[:size]


async def one_run(
    client: Client, server: FakeOpenAIServer, queue: str, kind: str, text: str
) -> dict[str, Any]:
    """One run of `kind` (`read_file` or `prompt`): wall, history, largest payload, whole."""
    if kind == "read_file":
        server.enqueue(
            fake.tool_calls(fake.call("read_file", {"path": "doc.txt", "max_chars": 6 * MB})),
            fake.text("Read."),
        )
        payload = {"prompt": "Read doc.txt.", "tools": ["read_file"], **SETTINGS}
    else:
        server.enqueue(fake.text("Read."))
        payload = {"prompt": text, "tools": [], **SETTINGS}
    started = time.monotonic()
    handle = await client.start_workflow(
        "AgentWorkflow", payload, id=f"bench-doc-{uuid.uuid4().hex[:8]}", task_queue=queue
    )
    await handle.result()
    wall = time.monotonic() - started
    history = await handle.fetch_history()
    sent = server.requests[-1].messages
    received = sent[-1]["content"] if kind == "read_file" else sent[1]["content"]
    return {
        "wall_s": wall,
        "history_bytes": sum(event.ByteSize() for event in history.events),
        "events": len(history.events),
        "largest_payload_bytes": max(p.ByteSize() for e in history.events for p in payloads_in(e)),
        "whole": received == text,
    }


async def without_store(
    client: Client, server: FakeOpenAIServer, queue: str, kind: str, text: str
) -> str:
    """What happens to the same run on a worker and a client without a store."""
    if kind == "prompt":
        try:
            await client.start_workflow(
                "AgentWorkflow", {"prompt": text}, id=f"bench-doc-{uuid.uuid4().hex[:8]}",
                task_queue=queue,
            )  # fmt: skip
        except RPCError as error:
            if "larger than max" in error.message:
                return "refused by Temporal: a request over gRPC's 4 MB"
            return f"refused: {error.message[:48]}"
        return "started (unexpected)"
    server.enqueue(
        fake.tool_calls(fake.call("read_file", {"path": "doc.txt", "max_chars": 6 * MB})),
        fake.text("I could not read it."),
    )
    handle = await client.start_workflow(
        "AgentWorkflow",
        {"prompt": "Read doc.txt.", "tools": ["read_file"]},
        id=f"bench-doc-{uuid.uuid4().hex[:8]}",
        task_queue=queue,
    )
    await handle.result()
    observation = server.requests[-1].messages[-1]["content"] or ""
    if "less than or equal to 200000" in observation:
        return "read_file refused: max_chars <= 200000"
    return f"unexpected: {observation[:40]}"


def with_converter(client: Client, converter: DataConverter) -> Client:
    """A client of the same connection with another data converter."""
    config = client.config()
    config["data_converter"] = converter
    return Client(**config)


async def measure(client: Client, repeats: int = 3) -> dict[str, Any]:
    """Both kinds, `repeats` runs each, on an in-process worker with a `file:` store."""
    text = document()
    result: dict[str, Any] = {"document_chars": len(text)}
    with tempfile.TemporaryDirectory() as temporary, FakeOpenAIServer() as server:
        folder = Path(temporary) / "payloads"
        workspace = Path(temporary) / "workspace"
        workspace.mkdir()
        (workspace / "doc.txt").write_text(text)
        model = OpenAIChatModel(api_key="sk-bench", base_url=server.base_url, default_model="m")
        async with AsyncExitStack() as stack:
            stack.push_async_callback(model.close)
            storage = await stack.enter_async_context(
                external_storage(StoreSpec("file", folder=folder))
            )
            stored = with_converter(client, data_converter(None, external_storage=storage))
            plain = with_converter(client, pydantic_data_converter)
            queues = {}
            for name, which in (("stored", stored), ("plain", plain)):
                queues[name] = f"bench-doc-{name}-{uuid.uuid4().hex[:8]}"
                for worker in build_workers(
                    which, task_queue=queues[name], model=model, catalog=CATALOG,
                    workspace=workspace,
                ):  # fmt: skip
                    await stack.enter_async_context(worker)
            for kind in ("read_file", "prompt"):
                runs = [
                    await one_run(stored, server, queues["stored"], kind, text)
                    for _ in range(repeats)
                ]
                result[kind] = {
                    "runs": runs,
                    "wall_s_median": statistics.median(r["wall_s"] for r in runs),
                    "history_bytes": max(r["history_bytes"] for r in runs),
                    "largest_payload_bytes": max(r["largest_payload_bytes"] for r in runs),
                    "whole": all(r["whole"] for r in runs),
                    "without_store": await without_store(
                        plain, server, queues["plain"], kind, text
                    ),
                }
        result["stored_files"] = sum(1 for p in folder.rglob("*") if p.is_file())
        result["stored_bytes"] = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return result


def rows(result: dict[str, Any]) -> list[Row]:
    """Target 10 in `run_all`'s table."""
    found = []
    for kind, label in (("read_file", "a 5 MB read_file"), ("prompt", "a 5 MB prompt")):
        r = result[kind]
        found.append(
            Row(
                f"10. {label} run: wall · history · largest payload",
                f"{r['wall_s_median']:.2f} s · {r['history_bytes'] / KIB:.1f} KiB · "
                f"{r['largest_payload_bytes'] / KIB:.1f} KiB"
                + (" · model got it whole" if r["whole"] else " · NOT whole"),
                r["without_store"],
                "–",
                "largest < 512 KB, whole",
                r["largest_payload_bytes"] < HISTORY_PAYLOAD_LIMIT and r["whole"],
            )
        )
    return found


async def main_async(repeats: int) -> dict[str, Any]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=f"{sys.prefix}/bin/temporal",
        data_converter=pydantic_data_converter,
        dev_server_log_level="error",
    )
    try:
        return await measure(env.client, repeats)
    finally:
        await env.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.large_document")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each kind")
    args = parser.parse_args()
    from bench.report import table

    result = asyncio.run(main_async(args.repeats))
    print(table(rows(result)))
    print(
        f"store: {result['stored_files']} files, {result['stored_bytes'] / MB:.1f} MB "
        f"(a {result['document_chars'] / MB:.0f} MB document)"
    )


if __name__ == "__main__":
    main()
