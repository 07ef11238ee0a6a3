"""A decision's maker is believed only when a server signed it (issue 35 part 3; the attack
suite's "a forged `by`" and "a starter approving their own two-person call").

Against a real `agent serve` with a principals file, the real worker and dev server: a maker
typed into a raw signal, a raw `decide` update or the Temporal CLI (claiming to be anna, a
server's principal) cannot approve alice's two-person call, and the call keeps waiting until anna
approves it through the server, which records her as signed; the signed maker of that approval,
copied out of the run's history onto another run, is recorded there as self-declared; both
histories replay. Each attack is counted by tests/test_access_attacks.py's `TALLY`.

The decision key itself (`runtime.decision_key`) is tested without a server.
"""

from __future__ import annotations

import json
import os
import stat
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from durable_agents.client import AgentClient
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.approvals import HumanDecision
from durable_agents.contracts.maker_signature import SIGN_MAKERS_ACTIVITY, SignedMessage
from durable_agents.contracts.principals import DecisionMaker, Principal
from durable_agents.runtime.decision_key import (
    DECISION_KEY_ENV,
    DECISION_KEY_FILE_ENV,
    DecisionKeyError,
    decision_key,
    key_file_path,
    signature,
    signature_matches,
)
from durable_agents.runtime.settings import EnvironmentSettings
from tests.conftest import AgentHarness, local_activities
from tests.replaying import assert_replays
from tests.test_access_attacks import TALLY
from tests.test_cli_approval_flow import Cli
from tests.test_session_forwarding import write_model
from tests.test_tenant_attacks import (
    TWO_PERSON,
    People,
    alices_waiting_run,
    people,  # noqa: F401  (the fixture)
    serve,
)

FORGED = {"name": "anna", "tenant": "acme", "self_declared": False}
"""alice (or anyone who can signal the run) claiming to be anna, signed by a server."""
SIGNED_ANNA = DecisionMaker(name="anna", tenant="acme", self_declared=False)
ALICE = Principal(name="alice", tenant="acme", roles=frozenset({"start", "approve", "read"}))
SIGNED_ALICE = DecisionMaker(name="alice", tenant="acme", self_declared=False)


async def waits_for_w1(handle: WorkflowHandle[Any, Any]) -> bool:
    pending = await handle.query("pending_approvals")
    return [p["call_id"] for p in pending] == ["w1"]


def last_decide_input(history_events: Any) -> dict[str, Any]:
    """The input of the last `decide` update a run accepted (what anyone who can read its
    history sees)."""
    inputs = []
    for event in history_events:
        if event.HasField("workflow_execution_update_accepted_event_attributes"):
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request
            if request.input.name == "decide":
                inputs.append(json.loads(request.input.args.payloads[0].data))
    assert inputs, "no decide update in the history"
    decoded: dict[str, Any] = inputs[-1]
    return decoded


async def test_a_forged_maker_cannot_approve_and_a_copied_signature_is_not_believed(
    agent: AgentHarness,
    people: People,  # noqa: F811
    temporal_env: WorkflowEnvironment,
) -> None:
    async with serve(agent, people) as api:
        run, digest = await alices_waiting_run(agent, api, people, approval_policy=TWO_PERSON)
        handle = agent.client.get_workflow_handle(run)
        forged_signals = {
            "a forged maker in a raw signal": {"call_id": "w1", "maker": FORGED},
            "a forged maker with a made-up signature": {
                "call_id": "w1",
                "maker": {**FORGED, "signature": "ab" * 32},
            },
        }
        for payload in forged_signals.values():
            await handle.signal("approve", payload)
        cli = Cli(temporal_env.client.service_client.config.target_host)
        cli_input = json.dumps({"call_id": "w1", "by": "anna", "maker": FORGED})
        await cli("workflow", "signal", "--workflow-id", run, "--name", "approve",
                  "--input", cli_input)  # fmt: skip
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update(
                "decide",
                {"call_id": "w1", "decision": "approve", "args_digest": digest, "maker": FORGED},
            )
        message = str(refused.value.cause)
        TALLY.record("a forged maker in a raw decide update", "server signed" in message)
        assert "needs an approver a server signed" in message, message
        still_waiting = await waits_for_w1(handle)
        for case in [*forged_signals, "a forged maker sent with the Temporal CLI"]:
            TALLY.record(case, still_waiting)
        assert still_waiting

        approved = await api.http.post(
            f"/v1/runs/{run}/decisions",
            json={"call_id": "w1", "decision": "approve", "args_digest": digest},
            headers=people.auth("anna"),
        )  # the forged approvals took nothing: the call is still anna's to approve
        assert approved.status_code == 200, approved.text
        assert HumanDecision.model_validate(approved.json()).maker == SIGNED_ANNA
        result = await api.http.get(f"/v1/runs/{run}/result?wait=true", headers=people.auth("anna"))
        [step] = result.json()["steps"]
        assert DecisionMaker.model_validate(step["human"]["maker"]) == SIGNED_ANNA

        history = await handle.fetch_history()
        copied = last_decide_input(history.events)
        assert copied["maker"]["signature"], copied  # a server's, as history shows it
        other, _ = await alices_waiting_run(agent, api, people)
        other_handle = agent.client.get_workflow_handle(other)
        replayed: HumanDecision = await other_handle.execute_update(
            "decide", copied, result_type=HumanDecision
        )  # the same call id and digest: only the run it was signed for differs
        believed = replayed.maker is not None and not replayed.maker.self_declared
        TALLY.record("a server's signed decision copied onto another run", not believed)
        assert replayed.maker == DecisionMaker(name="anna", self_declared=True)
        await other_handle.result()

    await assert_replays(history)
    await assert_replays(await other_handle.fetch_history())


async def test_a_session_signs_what_it_forwards_to_its_child_turn(agent: AgentHarness) -> None:
    """Alice's approval (the `decide` update) and rejection (the `reject` signal, `*`) sent to
    her session reach its child turns signed for them: each turn records her as signed, and
    the session's history holds the signatures it made for them."""
    agent.fake.set_handler(write_model)
    alices = AgentClient(agent.client, task_queue=agent.task_queue, principal=ALICE)
    session = await alices.start_session({"turns": "child"}, id=f"signed-{uuid.uuid4().hex[:8]}")
    for text, turn in (("write a", 1), ("write b", 2)):
        await session.send_nowait(text)
        request = await session.next_request()
        assert request is not None and request.call_id.startswith("call_"), request
        if turn == 1:
            decision = await session.approve(request.call_id, digest=request.args_digest)
            assert decision.maker == SIGNED_ALICE
        else:
            assert await session._calls.decide_all("reject", reason="not b")
        turn_run = agent.client.get_workflow_handle(
            f"{session.id}/turn-{turn}", result_type=AgentResult
        )
        result = await turn_run.result()
        [step] = [s for s in result.steps if s.human is not None]
        assert step.human is not None and step.human.maker == SIGNED_ALICE, step.human
    signed = [a for a, _ in await local_activities(session.workflow) if a == SIGN_MAKERS_ACTIVITY]
    assert len(signed) == 2
    await session.end()


def test_the_decision_key_comes_from_the_environment_or_a_private_file(tmp_path: Path) -> None:
    """`AGENT_DECISION_KEY` when set (32 characters at least); else the key file, made once
    with mode 0600 under `AGENT_DECISION_KEY_FILE` or the state directory, the same key after."""
    named = tmp_path / "keys" / "decision-key"
    env = {DECISION_KEY_FILE_ENV: str(named)}
    key = decision_key(env)
    assert stat.S_IMODE(os.stat(named).st_mode) == 0o600
    assert decision_key(env) == key and len(key) == 64
    assert decision_key({**env, DECISION_KEY_ENV: "k" * 32}) == b"k" * 32
    assert decision_key({**env, DECISION_KEY_ENV: ""}) == key  # compose's ${...:-} when unset
    assert EnvironmentSettings.model_validate({DECISION_KEY_ENV: ""}).decision_key is None
    with pytest.raises(DecisionKeyError, match=DECISION_KEY_ENV):
        decision_key({DECISION_KEY_ENV: "short"})
    state = {"XDG_STATE_HOME": str(tmp_path / "state")}
    assert key_file_path(state) == tmp_path / "state" / "durable-agents" / "decision-key"
    (tmp_path / "blocked").write_text("")
    with pytest.raises(DecisionKeyError, match="blocked"):
        decision_key({DECISION_KEY_FILE_ENV: str(tmp_path / "blocked" / "key")})


def test_a_signature_binds_the_run_the_message_and_the_key() -> None:
    message = SignedMessage(workflow_id="run-a", message="approve", payload={"call_id": "w1"})
    signed = signature(b"k" * 32, message)
    assert signature_matches(b"k" * 32, message, signed)
    for other in (
        message.model_copy(update={"workflow_id": "run-b"}),
        message.model_copy(update={"message": "reject"}),
        message.model_copy(update={"payload": {"call_id": "w2"}}),
    ):
        assert not signature_matches(b"k" * 32, other, signed)
    assert not signature_matches(b"j" * 32, message, signed)  # a rotated key
