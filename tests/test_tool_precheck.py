"""A tool's `precheck`: arguments that can never succeed are refused before a person is asked.

The pure parts (the workspace's path rule, what a precheck may be, what it returns) are tested
directly; the rest runs the real workflow on a real Temporal server with the scripted model:
a `write_file` outside the workspace is an `Error: ...` observation at once (nothing pending,
no activity), a valid one still asks, a run's policy `ask` is prechecked too, a test-only tool
brings its own precheck, and a precheck that raises falls through to asking.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from temporalio.client import WorkflowHandle

from durable_agents.contracts.approvals import PendingRequest
from durable_agents.loop import approvals
from durable_agents.tools.builtin.files import ReadFileArgs, read_file, read_file_precheck
from durable_agents.tools.builtin.workspace import path_problem, resolve_in_workspace
from durable_agents.tools.builtin.write_file import WriteFileArgs, write_file, write_file_precheck
from durable_agents.tools.definition import Tool, ToolError, ToolOptions, tool
from testkit.eventually import eventually
from tests import scripted_model as sm
from tests.catalog import TEST_CATALOG
from tests.conftest import ScriptedHarness, activity_types
from tests.hitl_support import wait_for_pending
from tests.replaying import assert_replays

# --- test-only tools ---------------------------------------------------------------------------


class TransferArgs(BaseModel):
    amount: float
    to: str


def transfer_precheck(args: TransferArgs) -> str | None:
    """A transfer of nothing, or to nobody, can never succeed."""
    if args.amount <= 0:
        return f"the amount must be positive, got {args.amount:g}"
    if not args.to.strip():
        return "say whom to pay"
    return None


@tool(requires_approval=True, precheck=transfer_precheck)
async def transfer(args: TransferArgs) -> str:
    """Transfer money; a person approves each transfer."""
    return f"transferred {args.amount:g} to {args.to}"


def _broken_precheck(args: TransferArgs) -> str | None:
    raise ZeroDivisionError("a bug in the precheck")


@tool(requires_approval=True, precheck=_broken_precheck)
async def transfer_buggy_check(args: TransferArgs) -> str:
    """Transfer money; its precheck is broken."""
    return f"transferred {args.amount:g} to {args.to}"


for _item in (transfer, transfer_buggy_check):
    if TEST_CATALOG.tools.get(_item.name) is None:
        TEST_CATALOG.tools.register(_item)


# --- pure: the path rule -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../outside.txt", "'..' is not allowed"),
        ("a/../../x", "'..' is not allowed"),
        ("a\\..\\x", "'..' is not allowed"),
        ("/etc/passwd", "absolute paths are not allowed"),
        ("C:\\Windows\\x", "absolute paths are not allowed"),
        ("C:x", "absolute paths are not allowed"),
        ("\\\\server\\share\\x", "absolute paths are not allowed"),
        ("", "empty"),
        ("   ", "empty"),
        ("a\x00b", "NUL"),
    ],
)
def test_path_rule_refuses_from_the_string_alone(path: str, reason: str, tmp_path: Path) -> None:
    problem = path_problem(path)
    assert problem is not None and reason in problem
    # One rule: the activity's check refuses with exactly the same words.
    with pytest.raises(ToolError) as refused:
        resolve_in_workspace(tmp_path, path, must_exist=False)
    assert str(refused.value) == problem


@pytest.mark.parametrize("path", ["notes.txt", "a/b/c.md", "a..b.txt", ".hidden", "./x", "dir/"])
def test_path_rule_passes_paths_it_cannot_judge(path: str) -> None:
    assert path_problem(path) is None


def test_file_tools_precheck_their_path() -> None:
    assert write_file.options.precheck is write_file_precheck
    assert read_file.options.precheck is read_file_precheck
    assert write_file_precheck(WriteFileArgs(path="notes.txt", content="x")) is None
    assert "'..'" in (write_file_precheck(WriteFileArgs(path="../o.txt", content="x")) or "")
    assert read_file_precheck(ReadFileArgs(path="docs/a.md")) is None
    assert "absolute" in (read_file_precheck(ReadFileArgs(path="/etc/passwd")) or "")


# --- pure: what a precheck may be, and what it returns -------------------------------------------


async def _async_check(args: Any) -> str | None:
    return None


def _generator_check(args: Any) -> Any:
    yield None


def _two_parameters(args: Any, ctx: Any) -> str | None:
    return None


def _no_parameters() -> str | None:
    return None


@pytest.mark.parametrize(
    ("precheck", "message"),
    [
        ("not a function", "must be a function"),
        (_async_check, "cannot be async"),
        (_generator_check, "cannot be async or a generator"),
        (_two_parameters, "one parameter"),
        (_no_parameters, "one parameter"),
    ],
)
def test_a_precheck_that_makes_no_sense_is_refused_at_definition(
    precheck: Any, message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        ToolOptions(precheck=precheck)


def test_a_precheck_for_other_arguments_is_refused_at_definition() -> None:
    with pytest.raises(TypeError, match="precheck takes WriteFileArgs"):

        @tool(precheck=write_file_precheck)
        async def pay_someone(args: TransferArgs) -> str:
            """Pay."""
            return "paid"


def test_plain_prechecks_are_accepted() -> None:
    def with_a_default(args: Any, strict: bool = True) -> str | None:
        return None

    for precheck in (lambda args: None, with_a_default, transfer_precheck):
        assert ToolOptions(precheck=precheck).precheck is precheck


def _with_precheck(precheck: Any) -> Tool:
    return Tool(
        name="t",
        description="t",
        args_model=TransferArgs,
        function=transfer.function,
        options=ToolOptions(precheck=precheck),
    )


def test_precheck_refusal_reads_the_validated_arguments() -> None:
    assert approvals.precheck_refusal(transfer, {"amount": 5, "to": "bob"}) is None
    assert approvals.precheck_refusal(transfer, {"amount": 0, "to": "bob"}) == (
        "the amount must be positive, got 0"
    )
    assert (
        approvals.precheck_refusal(TEST_CATALOG.tools.get("echo") or transfer, {"text": "x"})
        is None
    )
    seen: list[Any] = []
    approvals.precheck_refusal(
        _with_precheck(lambda args: seen.append(args)), {"amount": 1, "to": "a"}
    )
    assert seen == [TransferArgs(amount=1, to="a")]


@pytest.mark.parametrize("returned", ["", "   ", 0, False, ["no"]])
def test_a_precheck_returning_no_reason_and_not_none_is_a_bug(returned: Any) -> None:
    with pytest.raises(TypeError, match="must return None or a reason"):
        approvals.precheck_refusal(_with_precheck(lambda args: returned), {"amount": 1, "to": "a"})


def test_precheck_observation() -> None:
    assert approvals.precheck_observation("write_file", "absolute paths are not allowed.") == (
        "Error: absolute paths are not allowed. The write_file call was not run, and nobody was "
        "asked to approve it."
    )


# --- through the workflow ------------------------------------------------------------------------


async def replays(handle: WorkflowHandle[Any, Any]) -> None:
    await assert_replays(await handle.fetch_history())


async def test_a_write_outside_the_workspace_is_refused_without_asking(
    scripted_agent: ScriptedHarness,
) -> None:
    answer = asyncio.Event()
    args = {"path": "../outside.txt", "content": "x"}
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("write_file", args, id="w1")),
        sm.gate(answer, sm.text("I cannot write there.")),
    )
    handle = await scripted_agent.start({"prompt": "write outside", "tools": ["write_file"]})

    def answering() -> bool:  # the second model call is in flight: the round is over
        return len(scripted_agent.model.requests) == 2

    await eventually(answering, what="the model call after the refused write")
    pending = await handle.query("pending_approvals", result_type=list[PendingRequest])
    assert pending == []
    answer.set()
    result = await handle.result()

    assert result.answer == "I cannot write there." and result.stop_reason == "completed"
    [step] = result.steps
    assert step.status == "error" and step.human is None
    assert step.policy == approvals.PRECHECK
    assert step.args == {**args, "overwrite": True}
    assert step.observation == (
        "Error: '..' is not allowed in paths ('../outside.txt'); give a path from the workspace "
        "root, e.g. 'docs/readme.md'. The write_file call was not run, and nobody was asked to "
        "approve it."
    )
    tool_message = scripted_agent.model.requests[1].messages[-1]
    assert (tool_message.tool_call_id, tool_message.content) == ("w1", step.observation)
    assert await activity_types(handle) == ["call_model", "call_model"]
    assert not (scripted_agent.workspace.parent / "outside.txt").exists()
    await replays(handle)


async def test_a_valid_write_still_asks_beside_a_refused_one(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(
            sm.call("write_file", {"path": "/etc/passwd", "content": "x"}, id="bad"),
            sm.call("write_file", {"path": "notes/ok.txt", "content": "ok"}, id="good"),
        ),
        sm.text("done"),
    )
    handle = await scripted_agent.start({"prompt": "write", "tools": ["write_file"]})

    [pending] = await wait_for_pending(handle)
    assert (pending.call_id, pending.args["path"]) == ("good", "notes/ok.txt")
    await handle.signal("approve", {"call_id": "*", "by": "alice"})
    result = await handle.result()

    bad, good = result.steps
    assert bad.status == "error" and bad.human is None and bad.policy == approvals.PRECHECK
    assert bad.observation.startswith("Error: absolute paths are not allowed ('/etc/passwd')")
    assert good.status == "ok" and good.human is not None and good.human.by == "alice"
    assert (scripted_agent.workspace / "notes" / "ok.txt").read_text() == "ok"
    assert await activity_types(handle) == ["call_model", "write_file", "call_model"]


async def test_a_valid_write_is_asked_by_its_tool_definition(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("write_file", {"path": "a.txt", "content": "a"}, id="w1")),
        sm.text("done"),
    )
    handle = await scripted_agent.start({"prompt": "write", "tools": ["write_file"]})
    await wait_for_pending(handle)
    await handle.execute_update("decide", {"call_id": "w1", "decision": "approve"})
    result = await handle.result()
    assert [s.status for s in result.steps] == ["ok"]
    assert result.steps[0].policy == "tool definition"


async def test_a_policy_ask_is_prechecked_too(scripted_agent: ScriptedHarness) -> None:
    (scripted_agent.workspace / "inside.txt").write_text("inside")
    scripted_agent.model.enqueue(
        sm.tool_calls(
            sm.call("read_file", {"path": "/etc/passwd"}, id="r1"),
            sm.call("read_file", {"path": "inside.txt"}, id="r2"),
        ),
        sm.text("read"),
    )
    handle = await scripted_agent.start(
        {
            "prompt": "read",
            "tools": ["read_file"],
            "approval_policy": {"rules": [{"tools": "read_file", "action": "ask"}]},
        }
    )
    [pending] = await wait_for_pending(handle)
    assert pending.call_id == "r2"
    await handle.signal("approve", {"call_id": "r2"})
    result = await handle.result()
    refused, read = result.steps
    assert refused.status == "error" and refused.human is None
    assert "absolute paths are not allowed" in refused.observation
    assert "root:" not in refused.observation
    assert (read.status, read.observation) == ("ok", "inside")
    assert await activity_types(handle) == ["call_model", "read_file", "call_model"]


async def test_a_tool_brings_its_own_precheck(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(
            sm.call("transfer", {"amount": -5, "to": "bob"}, id="t1"),
            sm.call("transfer", {"amount": 10, "to": "  "}, id="t2"),
            sm.call("transfer", {"amount": 10, "to": "bob"}, id="t3"),
        ),
        sm.text("one transfer done"),
    )
    handle = await scripted_agent.start({"prompt": "pay", "tools": ["transfer"]})
    [pending] = await wait_for_pending(handle)
    assert pending.call_id == "t3"
    await handle.signal("approve", {"call_id": "t3"})
    result = await handle.result()

    assert [(s.call_id, s.status, s.observation) for s in result.steps] == [
        ("t1", "error", "Error: the amount must be positive, got -5. The transfer call was not "
         "run, and nobody was asked to approve it."),
        ("t2", "error", "Error: say whom to pay. The transfer call was not run, and nobody was "
         "asked to approve it."),
        ("t3", "ok", "transferred 10 to bob"),
    ]  # fmt: skip
    assert await activity_types(handle) == ["call_model", "transfer", "call_model"]


async def test_a_precheck_that_raises_falls_through_to_asking(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("transfer_buggy_check", {"amount": 3, "to": "ann"}, id="b1")),
        sm.text("done"),
    )
    handle = await scripted_agent.start({"prompt": "pay", "tools": ["transfer_buggy_check"]})
    [pending] = await wait_for_pending(handle)
    assert pending.call_id == "b1"
    await handle.signal("approve", {"call_id": "b1"})
    result = await handle.result()
    [step] = result.steps
    assert (step.status, step.observation) == ("ok", "transferred 3 to ann")
    assert step.human is not None and step.human.outcome == "approved"
