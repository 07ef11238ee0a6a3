"""Structured, replay-safe logs: every model turn and tool call logs who, what, how long and
how it went, as fields a log pipeline can index."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from durable_agents.runtime.log_format import CHATTY_LOGGERS, JsonFormatter, configure_logging
from durable_agents.testing import fake_openai as fake
from tests.conftest import AgentHarness


def agent_fields(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    fields = [getattr(r, "agent", None) for r in caplog.records]
    return [f for f in fields if isinstance(f, dict)]


async def test_workflow_and_activities_log_structured_fields(
    agent: AgentHarness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    agent.fake.enqueue(
        fake.tool_calls(fake.call("calculator", {"expression": "2+2"})), fake.text("4")
    )
    _, handle = await agent.run({"prompt": "2+2?", "tools": ["calculator"]})
    fields = agent_fields(caplog)
    tool_outcomes = [
        f for f in fields if f.get("tool") == "calculator" and f.get("outcome") == "ok"
    ]
    assert len(tool_outcomes) == 2  # one from the activity, one from the workflow
    assert all(isinstance(f["latency_ms"], int) for f in tool_outcomes)
    model_turns = [f for f in fields if f.get("model") == "fake-model-1" and "latency_ms" in f]
    assert {f["turn"] for f in model_turns} == {1, 2}
    finished = [f for f in fields if f.get("outcome") == "completed"]
    assert finished and finished[0]["tokens"] == 30 and finished[0]["phase"] == "done"
    records = [
        r for r in caplog.records if getattr(r, "agent", None) and r.name == "temporalio.workflow"
    ]
    assert records, "no structured workflow log records"
    assert all(r.__dict__["temporal_workflow"]["workflow_id"] == handle.id for r in records)


def test_json_formatter_keeps_structured_fields() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "tool %s ok", ("calc",), None)
    record.__dict__["agent"] = {"tool": "calc", "latency_ms": 3}
    record.__dict__["temporal_workflow"] = {"workflow_id": "w1"}
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "tool calc ok"
    assert line["agent"] == {"tool": "calc", "latency_ms": 3}
    assert line["temporal_workflow"] == {"workflow_id": "w1"}
    assert line["level"] == "INFO"


def test_http_clients_log_each_request_only_at_debug() -> None:
    """httpx logs every request at INFO (each model call, the Web UI probe): the worker keeps
    it at WARNING unless it logs at DEBUG."""
    root, levels = logging.getLogger(), {n: logging.getLogger(n).level for n in CHATTY_LOGGERS}
    handlers, root_level = root.handlers[:], root.level
    try:
        configure_logging("INFO")
        assert logging.getLogger("httpx").getEffectiveLevel() == logging.WARNING
        for name in CHATTY_LOGGERS:
            logging.getLogger(name).setLevel(logging.NOTSET)
        configure_logging("DEBUG")
        assert logging.getLogger("httpx").getEffectiveLevel() == logging.DEBUG
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        root.handlers[:] = handlers
        root.setLevel(root_level)
