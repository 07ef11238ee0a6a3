"""Text for places that render Markdown (the Web UI's current details and memo).

The Web UI renders current details as Markdown with typographic replacements: `--workflow-id`
would show as `–workflow-id` and straight quotes as curly ones, so a command pasted from it
fails in a shell. Commands and JSON therefore go into code spans, which render literally.
"""

from __future__ import annotations


def code_span(text: str) -> str:
    """`text` as an inline code span, whatever backticks it contains (CommonMark's rule: fence
    it with one more backtick than its longest run, padded with spaces if it starts or ends with
    a backtick)."""
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"
