"""This repository's own application (`worker.py`, `workflows/`, `activities/`): the notes agent
runs on the engine through the public API, its tools get the notebook as their dependency."""

from __future__ import annotations

import uuid
from pathlib import Path

from activities.notes import Notebook
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.testing import AgentTestEnvironment, TestModel, call, text
from workflows import AGENTS
from workflows.notes_agent import notes


async def test_the_notes_agent_writes_and_reads_notes_in_its_notebook(tmp_path: Path) -> None:
    book = Notebook(tmp_path / "notes")
    model = TestModel(
        [
            call("write_note", title="meeting", text="moved to Friday"),
            call("read_notes"),
            text("Noted: the meeting moved to Friday."),
        ]
    )
    async with AgentTestEnvironment.start(AGENTS, deps=book) as env:
        with notes.override(model=model):
            result = await env.client.execute_workflow(
                "AgentWorkflow",
                notes.input("Note that the meeting moved to Friday"),
                id=f"notes-{uuid.uuid4().hex[:6]}",
                task_queue=env.task_queue,
                result_type=AgentResult,
            )
    assert (tmp_path / "notes" / "meeting.txt").read_text() == "moved to Friday"
    assert [step.tool for step in result.steps] == ["write_note", "read_notes"]
    assert result.steps[1].observation == "# meeting\nmoved to Friday"
    assert result.answer == "Noted: the meeting moved to Friday."
    tools = {t["function"]["name"] for t in model.requests[0]["tools"]}
    assert tools == {"write_note", "read_notes", "delete_note", "current_time"}


async def test_a_bad_title_goes_back_to_the_model_as_an_error(tmp_path: Path) -> None:
    model = TestModel([call("write_note", title="../escape", text="x"), text("sorry")])
    async with AgentTestEnvironment.start(AGENTS, deps=Notebook(tmp_path)) as env:
        with notes.override(model=model):
            result = await env.client.execute_workflow(
                "AgentWorkflow", notes.input("write it"), id=f"notes-{uuid.uuid4().hex[:6]}",
                task_queue=env.task_queue, result_type=AgentResult,
            )  # fmt: skip
    assert result.steps[0].observation.startswith("Error: a note title is 1-64 letters")
    assert not list(tmp_path.iterdir())
