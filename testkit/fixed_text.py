"""The text the benchmarks' `fixed_output` tool returns, with no dependency beyond the standard
library, so that the peers' workers (`bench.peers`, each in a venv of its own) run the same
function as ours without importing the application's tool catalog."""

from __future__ import annotations

import hashlib

LINE_CHARS = 80


def fixed_text(n: int, chars: int) -> str:
    """`chars` characters for call `n`: lines of hex digest words, the same for the same `n`."""
    lines: list[str] = []
    size = 0
    block = 0
    while size < chars:
        digest = hashlib.sha256(f"fixed_output/{n}/{block}".encode()).hexdigest()
        line = f"call {n} line {block}: {digest}"[: LINE_CHARS - 1]
        lines.append(line)
        size += len(line) + 1
        block += 1
    return "\n".join(lines)[:chars]
