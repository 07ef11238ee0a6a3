"""Tools that exist only for the benchmarks, registered into the application's `REGISTRY` the way
a user adds a tool (so the real workflow and worker run them as activities named after them).

`fixed_output` returns `chars` characters of text that is deterministic per call (`n`): the same
call always returns the same text, different calls return different text, so the loop's
repeated-call guard never fires and nothing in the history compresses by accident.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, Field

from durable_agents.tools.catalog import REGISTRY
from durable_agents.tools.definition import tool
from testkit.fixed_text import fixed_text


class FixedOutputArgs(BaseModel):
    n: int = Field(description="Which call this is; the output depends on it.")
    chars: int = Field(default=2000, ge=1, le=200_000, description="Length of the output.")


@tool(start_to_close_timeout=timedelta(seconds=10))
async def fixed_output(args: FixedOutputArgs) -> str:
    """Return `chars` characters of text that depends only on `n`."""
    return fixed_text(args.n, args.chars)


BENCH_TOOLS = [fixed_output]
for _item in BENCH_TOOLS:
    if REGISTRY.get(_item.name) is None:
        REGISTRY.register(_item)
