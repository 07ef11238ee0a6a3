"""Structured, replay-safe logging for one agent run.

Every record carries an `agent` field (session, turn, phase, plus the caller's: tool, outcome,
latency_ms, tokens, ...) that `runtime.log_format` prints as text or JSON. The SDK's workflow
logger drops records during replay, so nothing is logged twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from temporalio import workflow


class RunLog:
    """Logs with the run's context fields, read from `context()` at each call."""

    def __init__(self, context: Callable[[], dict[str, Any]]):
        self._context = context

    def __call__(self, message: str, *args: Any, level: int = logging.INFO, **fields: Any) -> None:
        workflow.logger.log(level, message, *args, extra={"agent": {**self._context(), **fields}})


def ms_since(started: datetime) -> int:
    """Milliseconds of workflow time since `started`."""
    return int((workflow.now() - started).total_seconds() * 1000)
