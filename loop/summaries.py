"""Short one-line summaries shown beside each activity in the Temporal Web UI."""

from __future__ import annotations

import json
from typing import Any

SUMMARY_MAX_CHARS = 100


def shorten(text: str, limit: int = SUMMARY_MAX_CHARS) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def model_call_summary(model: str | None, turn: int, purpose: str = "turn") -> str:
    """`gpt-4o · turn 3`, `gpt-4o · final answer`, `gpt-4o · context summary`."""
    what = {"turn": f"turn {turn}", "final_answer": "final answer", "summary": "context summary"}
    return f"{model or 'default model'} · {what.get(purpose, purpose)}"


def tool_call_summary(args: dict[str, Any]) -> str:
    """The call's arguments (the Web UI already shows the activity type, i.e. the tool name)."""
    return shorten(json.dumps(args, ensure_ascii=False, sort_keys=True))
