"""The journeys the real model cannot do (strict xfails in `test_journeys.py`, listed in
EVALS.md), run unchanged with the scripted fake model in its place: the same `worker.py`, the
same `agent` commands and the same checks of outcome and history. They pass, so what fails
against the real model is the model, not the project.

Not marked `real_model`: they run in `make test`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from tests.real.conftest import RealWorker
from tests.real.test_journeys import (
    test_a_rejected_write_is_answered_around as rejected_journey,
)
from tests.real.test_journeys import (
    test_a_sub_agent_does_the_work as sub_agent_journey,
)
from tests.real.test_journeys import (
    test_an_approved_write_runs as approved_journey,
)
from tests.real.test_journeys import (
    test_an_edited_write_runs_with_the_edited_arguments as edited_journey,
)
from tests.real.test_journeys import (
    test_ask_user_gets_the_missing_number as ask_user_journey,
)
from tests.real.test_journeys import (
    test_two_tools_one_after_the_other as two_tools_journey,
)


def write(path: str, content: str) -> fake.Completion:
    return fake.tool_calls(fake.call("write_file", {"path": path, "content": content}))


def calls(name: str, **arguments: str) -> fake.Completion:
    return fake.tool_calls(fake.call(name, arguments))


Journey = Callable[[RealWorker], Awaitable[None]]
SCRIPTS: dict[str, tuple[Journey, list[fake.Completion]]] = {
    "two tools one after the other": (
        two_tools_journey,
        [
            calls("read_file", path="order.txt"),
            calls("calculator", expression="17 * 25"),
            fake.text("The order's total is 425 dollars."),
        ],
    ),
    "an approved write": (
        approved_journey,
        [write("notes.txt", "hello world"), fake.text("Written.")],
    ),
    "a rejected write": (
        rejected_journey,
        [
            write("secret-plans.txt", "launch on monday"),
            fake.text("I could not write it: the file is read-only for agents."),
        ],
    ),
    "an edited write": (
        edited_journey,
        [write("draft.txt", "first draft"), fake.text("Written.")],
    ),
    "ask_user": (
        ask_user_journey,
        [
            calls("ask_user", question="How many of you are there?"),
            calls("calculator", expression="120 / 4"),
            fake.text("Each of you pays 30 dollars."),
        ],
    ),
    "a sub-agent": (
        sub_agent_journey,
        [
            calls("researcher", task="How much do 17 shirts at 25 dollars each cost?"),
            calls("calculator", expression="17 * 25"),  # the researcher's run
            fake.text("17 shirts at 25 dollars cost 425 dollars."),  # its report
            fake.text("They cost 425 dollars."),  # the parent's answer
        ],
    ),
}


@pytest.mark.parametrize("journey", list(SCRIPTS))
async def test_the_journey_passes_with_the_scripted_fake(
    scripted_worker: RealWorker, scripted_model: FakeOpenAIServer, journey: str
) -> None:
    run, replies = SCRIPTS[journey]
    scripted_model.enqueue(*replies)

    await run(scripted_worker)

    assert scripted_model.pending_replies == 0
