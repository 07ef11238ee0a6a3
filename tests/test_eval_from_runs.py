"""`agent eval --from-runs` end to end: the real CLI as a subprocess, the real dev server, the
real worker in process with the real `openai` client talking to the fake model server, whose
answers depend on the system prompt (so a new prompt answers differently and calls a new tool).

Three runs are recorded once for the module: a side effect that waited for an approval (its
executions are counted), a payment a person rejected, and a two-turn session. They are rebuilt
from a visibility query and rerun against a changed system prompt: no tool runs again (the side
effect's count does not move), the recorded decisions are replayed, and the report says case by
case what changed, under each compare mode; `--save` writes a suite that `agent eval NAME` runs
again.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.testing import WorkflowEnvironment

from durable_agents.cli.commands import Context
from durable_agents.cli.errors import CliError
from durable_agents.cli.evaluation.compare import normalized, read_verdict, same_answers
from durable_agents.cli.evaluation.recorded import case_name, runs_query
from durable_agents.cli.main import build_parser
from durable_agents.client import AgentClient
from durable_agents.client.connection import Target
from durable_agents.contracts.tool_fixtures import ToolFixture
from durable_agents.loop.tool_fixtures import FixtureBook
from durable_agents.runtime.settings import EnvironmentSettings
from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from tests import agent_test_tools
from tests.conftest import agent_harness
from tests.test_cli_run import AgentCli, Done

TOOLS = ["side_effect", "pay", "echo", "ask_user"]
TERSE = "You are terse."


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    return content if isinstance(content, str) else json.dumps(content)


def _judge(messages: list[dict[str, Any]]) -> fake.Completion:
    """SAME when the two answers hold the same words once lowercased, else DIFFERENT."""
    asked = _text(messages[-1])
    recorded = re.findall(r"Recorded answer:\n(.*)", asked)
    new = re.findall(r"New answer:\n(.*)", asked)
    alike = [set(re.findall(r"\w+", a.lower())) for a in recorded] == [
        set(re.findall(r"\w+", b.lower())) for b in new
    ]
    return fake.text("SAME: the same words" if alike else "DIFFERENT: other words")


def model(request: dict[str, Any]) -> fake.Completion:
    """The scripted model: what it answers depends on the system prompt, the user's last
    message and the tool results it has read since."""
    messages: list[dict[str, Any]] = request["messages"]
    system = _text(messages[0])
    if system.startswith("You compare two answers"):
        return _judge(messages)
    terse = TERSE in system
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    user = _text(messages[last_user])
    tools = [m for m in messages[last_user:] if m["role"] == "tool"]
    if user.startswith("Do the effect"):
        if not tools:
            return fake.tool_calls(fake.call("side_effect", {"label": "x"}))
        if terse and len(tools) == 1:
            return fake.tool_calls(fake.call("echo", {"text": "check"}))
        return fake.text("Done and checked." if terse else "Done: " + _text(tools[0]))
    if user.startswith("Pay"):
        if not tools:
            return fake.tool_calls(fake.call("pay", {"amount": 500, "to": "bob"}))
        return fake.text("i did **not** pay bob" if terse else "I did not pay Bob.")
    if user.startswith("Say hello"):
        if not tools:
            return fake.tool_calls(fake.call("side_effect", {"label": "hello"}))
        return fake.text("The effect said: " + _text(tools[0]))
    if not tools:
        return fake.tool_calls(fake.call("ask_user", {"question": "Anything else?"}))
    return fake.text("Welcome." if terse else "You are welcome.")


@dataclass
class Recorded:
    cli: AgentCli
    prefix: str
    ids: dict[str, str]
    env: WorkflowEnvironment

    @property
    def query(self) -> str:
        return f"WorkflowId STARTS_WITH '{self.prefix}'"

    async def eval(self, *argv: str) -> Done:
        """`agent eval ...` in this process (the subprocess costs seconds of start-up on a busy
        machine; one test runs the real CLI): its exit code, stdout and stderr."""
        args = build_parser().parse_args(
            ["--address", self.cli.address, "--task-queue", self.cli.task_queue, "eval", *argv]
        )
        target = Target.resolve(
            EnvironmentSettings.from_env(), args.address, args.namespace, args.task_queue
        )
        out, err = io.StringIO(), io.StringIO()
        try:
            code = await args.handler(args, Context(target, json=args.json, out=out, err=err))
        except CliError as error:
            code = error.code
            err.write(f"agent: {error}\n")
        return Done(code, out.getvalue(), err.getvalue())


def executions() -> int:
    return sum(agent_test_tools.executions.values())


async def _record(agents: AgentClient, prefix: str, queue: str) -> dict[str, str]:
    ids = {k: f"{prefix}{k}" for k in ("effect", "pay", "chat")}
    effect = await agents.start(
        None, "Do the effect x", id=ids["effect"], task_queue=queue, tools=TOOLS
    )
    request = await effect.next_request()
    assert request is not None
    await effect.approve(request.call_id, digest=request.args_digest, by="ann")
    assert (await effect.result()).answer == "Done: did x"
    pay = await agents.start(None, "Pay 500 to bob", id=ids["pay"], task_queue=queue, tools=TOOLS)
    request = await pay.next_request()
    assert request is not None
    await pay.reject(request.call_id, reason="too much", by="ann")
    assert (await pay.result()).answer == "I did not pay Bob."
    chat = await agents.start_session({"agent": {"tools": TOOLS}}, id=ids["chat"], task_queue=queue)
    turn = await chat.send_nowait("Say hello")
    request = await chat.next_request()
    assert request is not None
    await chat.approve(request.call_id, digest=request.args_digest, by="ann")
    assert (await turn.result()).answer == "The effect said: did hello"
    turn = await chat.send_nowait("Thanks")
    request = await chat.next_request()
    assert request is not None
    await chat.reply(request.call_id, "no", by="ann")
    assert (await turn.result()).answer == "You are welcome."
    await chat.end()
    await agents.client.get_workflow_handle(ids["chat"]).result()
    return ids


@pytest.fixture(scope="module")
async def recorded(
    temporal_env: WorkflowEnvironment, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Recorded]:
    """The worker (real openai client, fake model server) and three recorded runs; the side
    effect ran twice (once in the first run, once in the session's first turn)."""
    with FakeOpenAIServer() as server:
        server.set_handler(model)
        tmp = tmp_path_factory.mktemp("from-runs")
        async with agent_harness(temporal_env, server, tmp) as harness:
            agents = AgentClient(temporal_env.client)
            prefix = f"rec-{uuid.uuid4().hex[:8]}-"
            ids = await _record(agents, prefix, harness.task_queue)
            query = runs_query(f"WorkflowId STARTS_WITH '{prefix}'")
            for _ in range(100):  # visibility catches up
                if len([w async for w in temporal_env.client.list_workflows(query)]) == 3:
                    break
                await asyncio.sleep(0.1)
            address = temporal_env.client.service_client.config.target_host
            yield Recorded(AgentCli(address, harness.task_queue), prefix, ids, temporal_env)


def by_case(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {case["recorded_run"].rsplit("-", 1)[-1]: case for case in report["cases"]}


async def test_recorded_runs_rerun_against_a_new_prompt_run_no_tool_and_are_saved(
    recorded: Recorded, tmp_path: Path
) -> None:
    before = executions()
    saved = tmp_path / "suites" / "shop.yaml"
    done = await recorded.cli(
        "eval", "--from-runs", recorded.query, "--system-prompt", TERSE, "--save", str(saved),
        "--json", "--out", str(tmp_path / "out"), timeout=60,
    )  # fmt: skip

    assert done.code == 1, done  # answers changed
    assert executions() == before  # the side effect did not run again
    report = done.json()
    cases = by_case(report)
    assert set(cases) == {"effect", "pay", "chat"}
    assert report["summary"] == {
        "cases": 3, "unchanged": 1, "changed": 2, "failed": 0, "with_new_tool_calls": 1,
    }  # fmt: skip
    effect = cases["effect"]
    assert effect["verdict"] == "changed" and effect["compare"] == "normalized"
    assert effect["recorded_answers"] == ["Done: did x"]
    assert effect["answers"] == ["Done and checked."]
    assert effect["new_tool_calls"] == [{"tool": "echo", "args": {"text": "check"}}]
    assert effect["new_tools"] == ["echo"]
    assert effect["steps"] == {"recorded": 1, "now": 2}
    assert effect["model_calls"] == {"recorded": 2, "now": 3}
    assert effect["tokens"] == {"recorded": 30, "now": 45}
    assert effect["people"][0].startswith("approved side_effect")
    pay = cases["pay"]  # the rejection replayed; the answer differs only in case and marks
    assert pay["verdict"] == "unchanged" and pay["answers"] == ["i did **not** pay bob"]
    assert pay["people"] == [
        f"rejected pay ({pay['people'][0].split('(')[1].split(')')[0]}): too much"
    ]
    chat = cases["chat"]
    assert chat["verdict"] == "changed"
    assert chat["recorded_answers"] == ["The effect said: did hello", "You are welcome."]
    assert chat["answers"] == ["The effect said: did hello", "Welcome."]
    assert chat["people"][0].startswith("approved side_effect")
    assert chat["people"][1].startswith("replied to ask_user") and chat["people"][1].endswith(
        ": no"
    )
    assert chat["new_tool_calls"] == [] and chat["steps"] == {"recorded": 2, "now": 2}
    assert json.loads((tmp_path / "out" / "comparison.json").read_text()) == report

    suite = yaml.safe_load(saved.read_text())
    assert suite["name"] == "shop"
    scenarios = {s["recorded"]["workflow_id"]: s for s in suite["scenarios"]}
    assert set(scenarios) == set(recorded.ids.values())
    effect_case = scenarios[recorded.ids["effect"]]
    assert effect_case["input"]["tool_fixtures"] == [
        {"tool": "side_effect", "args": {"label": "x"}, "observation": "did x", "status": "ok"}
    ]
    assert effect_case["people"][0] == {"action": "approve", "tool": "side_effect", "times": 1}
    chat_case = scenarios[recorded.ids["chat"]]
    assert (chat_case["prompt"], chat_case["turns"]) == ("Say hello", ["Thanks"])
    assert [f["tool"] for f in chat_case["input"]["tool_fixtures"]] == ["side_effect"]
    assert chat_case["people"][1] == {
        "action": "reply",
        "tool": "ask_user",
        "times": 1,
        "text": "no",
    }

    suite["prices"] = {"*": {"input_per_million": 1.0, "output_per_million": 2.0}}
    saved.write_text(yaml.safe_dump(suite))  # a price, as a suite may give one
    again = await recorded.eval(
        str(saved), "--compare", "exact", "--json", "--out", str(tmp_path / "again"),
    )  # fmt: skip
    assert again.code == 0, again  # the recorded prompt: every answer as recorded
    assert executions() == before
    rerun = again.json()
    assert rerun["summary"]["unchanged"] == 3 and rerun["compare"] == "exact"
    assert all(c["new_tool_calls"] == [] for c in rerun["cases"])
    priced = by_case(rerun)["effect"]["cost_usd"]  # 2 calls of 10 prompt + 5 completion tokens
    assert priced == {"recorded": pytest.approx(40e-6), "now": pytest.approx(40e-6)}


async def test_each_compare_mode_and_the_table(recorded: Recorded, tmp_path: Path) -> None:
    exact = await recorded.eval(
        "--from-runs", recorded.ids["pay"], "--system-prompt", TERSE, "--compare",
        "exact", "--out", str(tmp_path / "exact"),
    )  # fmt: skip
    assert exact.code == 1, exact
    assert re.search(r"^\S*pay\s+\S+\s+changed\s+1\s+2\s+30\s+n/a\s+–$", exact.out, re.M), exact.out
    assert "~ " in exact.out and "'I did not pay Bob.' → 'i did **not** pay bob'" in exact.out
    assert (
        "1 case: 0 unchanged, 1 changed, 0 failed; 0 with new tool calls (compared exact)"
        in exact.out
    )

    judged = await recorded.eval(
        "--from-runs", f"{recorded.ids['pay']},{recorded.ids['effect']}",
        "--system-prompt", TERSE, "--compare", "judge", "--json", "--out", str(tmp_path / "j"),
    )  # fmt: skip
    assert judged.code == 1, judged
    cases = by_case(judged.json())
    assert cases["pay"]["verdict"] == "unchanged"
    assert cases["pay"]["judge_reason"] == "the same words"
    assert cases["effect"]["verdict"] == "changed"
    assert cases["effect"]["judge_reason"] == "other words"

    rerun = cases["effect"]["rerun"]  # an evaluation's own runs are not recorded runs
    refused = await recorded.eval("--from-runs", rerun)
    assert refused.code == 4
    assert refused.err == (
        f"agent: --from-runs: no finished agent run or session to rebuild ({rerun}: a run agent "
        "eval made)\n"
    )


async def test_a_query_without_runs_is_one_error_line(recorded: Recorded) -> None:
    done = await recorded.eval("--from-runs", "nobody-ran-this-1")
    assert done.code == 4
    assert done.one_error_line() == (
        "agent: --from-runs: no finished agent run or session to rebuild (it lists none)"
    )


# -- the pure parts ----------------------------------------------------------------------------


def test_a_fixture_book_answers_by_name_and_arguments_in_order() -> None:
    book = FixtureBook(
        [
            ToolFixture(tool="count", args={"n": 1}, observation="1"),
            ToolFixture(tool="count", args={"n": 1}, observation="2"),
            ToolFixture(tool="fail", args={}, observation="boom", status="error"),
        ]
    )
    assert [book.answer("count", {"n": 1}).observation for _ in range(3)] == ["1", "2", "2"]
    assert book.answer("fail", {}).status == "error"
    new = book.answer("count", {"n": 2})
    assert not new.recorded and new.status == "error"
    assert new.observation.startswith("Error: new tool call: count was not run.")


def test_answers_compare_exactly_or_normalised() -> None:
    assert normalized("  The **Answer** is\n425. ") == "the answer is 425"
    assert same_answers(["I did not pay Bob."], ["i did **not** pay bob"], "normalized")
    assert not same_answers(["I did not pay Bob."], ["i did **not** pay bob"], "exact")
    assert not same_answers(["a", "b"], ["a"], "normalized")
    assert read_verdict("SAME: alike") == (True, "alike")
    assert read_verdict("**different** - no") == (False, "no")
    assert read_verdict("maybe")[0] is None


def test_ids_and_queries_and_case_names() -> None:
    assert runs_query("a-1, b/2") == (
        '(WorkflowId = "a-1" OR WorkflowId = "b/2") AND (WorkflowType = "AgentWorkflow" OR '
        'WorkflowType = "SessionWorkflow") AND ExecutionStatus = "Completed"'
    )
    assert runs_query("StartTime > '2026-01-01'").startswith("(StartTime > '2026-01-01') AND")
    taken: set[str] = set()
    assert case_name("shop/order 17", taken) == "shop_order_17"
    assert case_name("shop/order 17", taken) == "shop_order_17-2"


def test_the_demo_model_obeys_a_terse_double_checking_system_prompt() -> None:
    """What the how-to's rerun shows offline: the check is a call the recording never made."""
    from durable_agents.activities.demo_model import system_prompt_move
    from durable_agents.contracts.messages import ChatMessage
    from durable_agents.contracts.messages import ToolCall as Call

    asked = Call(id="c1", name="calculator", arguments='{"expression": "17 * 25"}')
    turn = [
        ChatMessage(role="system", content="Be terse. Double-check every calculation."),
        ChatMessage(role="user", content="What is 17 * 25?"),
        ChatMessage(role="assistant", content=None, tool_calls=[asked]),
        ChatMessage(role="tool", content="425", tool_call_id="c1"),
    ]
    check = system_prompt_move(turn, {"calculator"})
    assert isinstance(check, Call) and json.loads(check.arguments) == {
        "expression": "425 - (17 * 25)"
    }
    checked = [
        *turn,
        ChatMessage(
            role="assistant", content=None, tool_calls=[check.model_copy(update={"id": "c2"})]
        ),
        ChatMessage(role="tool", content="Error: new tool call: ...", tool_call_id="c2"),
    ]
    assert system_prompt_move(checked, {"calculator"}) == "425"
    assert system_prompt_move(turn[1:], {"calculator"}) is None  # the default prompt: no rule
