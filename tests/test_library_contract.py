"""Issue 33's contract: the sample in README.md (under `<!-- sample: library-contract -->`) runs
word for word against the scripted model.

The block is executed as a module; then its commented lines are run as written: the worker line
builds the `Worker` (on a client made with the SDK's default converter, as an application's
would be), the client lines run as one coroutine, and the `tests:` line's override answers a
plain question. The client lines' own run is scripted to call `price`, then `order` (which waits
for the approval the lines give), then answer."""

from __future__ import annotations

import re
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from durable_agents.testing import TestModel, call, text

README = Path(__file__).resolve().parents[1] / "README.md"
MARKER = "<!-- sample: library-contract -->"


def sample() -> str:
    """The python block right after the marker."""
    after = README.read_text(encoding="utf-8").split(MARKER, 1)[1]
    found = re.match(r"\s*```python\n(.*?)\n```", after, re.S)
    assert found, "README.md has no python block after the contract marker"
    return found.group(1)


def commented(code: str, heading: str) -> list[str]:
    """The code of the comment lines under `# heading:` (or on the heading's own line)."""
    lines = code.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"# {heading}"))
    same_line = lines[start].split(":", 1)[1].strip()
    if heading == "tests" and same_line:
        return [same_line]
    block = []
    for line in lines[start + 1 :]:
        if not line.startswith("#   "):
            break
        block.append(line[4:].split("  #", 1)[0].rstrip())
    return block


async def test_the_readme_sample_runs_word_for_word(temporal_env: WorkflowEnvironment) -> None:
    code = sample()
    module = types.ModuleType("library_contract_sample")
    sys.modules[module.__name__] = module  # as an imported module is (dataclasses look it up)
    # dont_inherit: the sample runs as written, without this file's `from __future__` imports
    exec(compile(code, str(README), "exec", dont_inherit=True), module.__dict__)
    namespace: dict[str, Any] = module.__dict__
    shop = namespace["shop"]
    address = temporal_env.client.service_client.config.target_host
    namespace["client"] = await Client.connect(address)  # the SDK's default converter
    namespace["Worker"] = __import__("temporalio.worker", fromlist=["Worker"]).Worker

    (worker_line,) = commented(code, "worker side")
    client_lines = commented(code, "client side")
    (tests_line,) = commented(code, "tests")
    flow = "async def flow():\n    global agents\n"
    flow += textwrap.indent("\n".join(client_lines), "    ")
    flow += "\n    return request, result, event"
    exec(flow, namespace)

    scripted = TestModel(
        [
            call("price", item="shirt"),
            call("order", item="shirt", quantity=17),
            text("Ordered 17 shirts at 25 dollars: 425 dollars."),
        ]
    )
    async with eval(worker_line, namespace):
        with shop.override(model=scripted):
            request, result, last_event = await namespace["flow"]()
        with eval(tests_line, namespace):
            plain = await namespace["agents"].start(
                shop, "What does a shirt cost?", id="price-1", task_queue="shop"
            )
            answer = await plain.result()

    assert request.tool == "order" and request.args == {"item": "shirt", "quantity": 17}
    assert result.answer == "Ordered 17 shirts at 25 dollars: 425 dollars."
    assert result.stop_reason == "completed"
    assert [(s.tool, s.observation) for s in result.steps] == [
        ("price", "25.0"),
        ("order", "ordered 17 x shirt"),
    ]
    assert result.usage.total_tokens > 0
    assert last_event.type == "run_finished"
    assert answer.answer == "25 dollars"
    assert [s.observation for s in answer.steps] == ["25.0"]
