"""Agent definitions with identities (issue 37 part 1), the pure parts: the digest, the label,
what a run does at a turn boundary, the tools a run that keeps its definition shows, and the
diff between two definitions (`loop.definition`, `loop.definition_diff`). The runs themselves
(a deploy while runs wait, replay, `agent diff`) are in tests/test_definition_deploys.py."""

from __future__ import annotations

import json

from durable_agents.agent import Agent
from durable_agents.cli.definitions import carried_definition
from durable_agents.contracts.agent_input import AgentInput, AgentSettings
from durable_agents.contracts.model_io import ToolSchema
from durable_agents.loop.definition import (
    definition_of,
    definition_on,
    end_record,
    pinned_tools,
    settings_of,
    sparse_settings,
    turn_record,
    worker_settings,
)
from durable_agents.loop.definition_diff import definition_diff, diff_lines
from tests.catalog import TEST_CATALOG


def tool(name: str, *, description: str = "d", **properties: object) -> ToolSchema:
    return ToolSchema(
        name=name, description=description, parameters={"type": "object", "properties": properties}
    )


LOOKUP = tool("lookup", q={"type": "string"})
SHOP = AgentSettings(agent_name="shop", agent_version="1", system_prompt="Sell things.")


def test_the_digest_is_of_what_shapes_behaviour_not_of_who_runs_it() -> None:
    base = definition_of(SHOP, [LOOKUP])
    assert len(base.digest) == 64 and base.label == "shop@1"
    # who runs it, and how its history is kept: the same definition
    same = SHOP.model_copy(update={"tenant": "acme", "memory_scope": "u1", "stream_deltas": False})
    assert definition_of(same, [LOOKUP]).digest == base.digest
    # tool order on the worker: the same definition
    other = tool("other")
    assert (
        definition_of(SHOP, [LOOKUP, other]).digest == definition_of(SHOP, [other, LOOKUP]).digest
    )
    # the version is the label's, not the digest's
    assert (
        definition_of(SHOP.model_copy(update={"agent_version": "2"}), [LOOKUP]).digest
        == base.digest
    )
    # what the model is told or allowed: another definition
    for changed, tools in [
        (SHOP.model_copy(update={"system_prompt": "Sell more."}), [LOOKUP]),
        (SHOP, [tool("lookup", q={"type": "integer"})]),
        (SHOP.model_copy(update={"model": "m2"}), [LOOKUP]),
        (SHOP.model_copy(update={"fallback_models": ["m3"]}), [LOOKUP]),
        (SHOP.model_copy(update={"max_iterations": 3}), [LOOKUP]),
        (SHOP.model_copy(update={"on_new_definition": "migrate_at_turn"}), [LOOKUP]),
    ]:
        assert definition_of(changed, tools).digest != base.digest


def test_an_unversioned_unnamed_run_is_labelled_by_its_digest() -> None:
    made = definition_of(AgentSettings(), [])
    assert made.name == "assistant" and made.version is None
    assert made.label == f"assistant@{made.digest[:12]}"


def test_an_agent_defined_in_code_names_its_runs() -> None:
    shop = Agent("shop", instructions="Sell things.", version="7", max_iterations=4)
    sent = shop.input("hi")
    assert (sent.agent_name, sent.agent_version, sent.on_new_definition) == ("shop", "7", "keep")
    assert definition_of(sent, []).label == "shop@7"
    assert shop.profile().definition == shop.defined_settings()


def test_at_a_turn_boundary_the_new_definitions_policy_decides() -> None:
    running = definition_of(SHOP, [LOOKUP])
    assert turn_record(running, running, 2).outcome == "same"
    changed = SHOP.model_copy(update={"system_prompt": "Sell more.", "agent_version": "2"})
    kept = turn_record(running, definition_of(changed, [LOOKUP]), 2)
    assert (kept.outcome, kept.previous, kept.label, kept.definition) == (
        "kept", running.digest, "shop@2", None,
    )  # fmt: skip
    migrating = definition_of(
        changed.model_copy(update={"on_new_definition": "migrate_at_turn"}), []
    )
    moved = turn_record(running, migrating, 3)
    assert (moved.outcome, moved.turn, moved.current) == ("migrated", 3, migrating.digest)
    assert moved.definition == migrating
    # a version bump alone is a new label: recorded, and kept
    bumped = definition_of(SHOP.model_copy(update={"agent_version": "1.1"}), [LOOKUP])
    assert turn_record(running, bumped, 2).outcome == "kept"


def test_a_migrated_run_takes_the_definition_and_keeps_who_runs_it() -> None:
    session = SHOP.model_copy(update={"tenant": "acme", "starter": "ann"})
    worker = definition_of(
        SHOP.model_copy(update={"system_prompt": "New.", "max_iterations": 4, "model": "m2"}),
        [LOOKUP],
    )
    moved = settings_of(session, worker)
    assert (moved.system_prompt, moved.max_iterations, moved.model) == ("New.", 4, "m2")
    assert (moved.tenant, moved.starter, moved.tools) == ("acme", "ann", ["lookup"])
    assert definition_of(moved, [LOOKUP]).digest == worker.digest


def test_the_workers_settings_replace_what_the_agent_defines() -> None:
    shop = Agent("shop", instructions="Sell more.", version="2", tools=["lookup"])
    run = AgentInput(prompt="x", agent_name="shop", system_prompt="Sell things.", tenant="acme")
    current = worker_settings(run, shop.defined_settings())
    assert (current.system_prompt, current.agent_version, current.tenant) == (
        "Sell more.", "2", "acme",
    )  # fmt: skip
    assert worker_settings(run, None) is run


def test_a_kept_definition_shows_its_own_tool_schemas() -> None:
    recorded = definition_of(SHOP, [LOOKUP, tool("gone")])
    changed = tool("lookup", q={"type": "integer"})
    offered = [changed, tool("added"), tool("final_result"), tool("mcp__x")]
    shown = pinned_tools(offered, recorded, worker_tools={"lookup", "added"})
    assert shown == [LOOKUP, tool("final_result"), tool("mcp__x")]


def test_the_diff_names_prompt_tools_model_policy_and_settings() -> None:
    a = definition_of(SHOP, [LOOKUP, tool("weather")])
    b_settings = AgentSettings.model_validate(
        {
            **SHOP.model_dump(),
            "agent_version": "2",
            "system_prompt": "Sell things.\nNever refund.",
            "model": "m2",
            "max_iterations": 3,
            "approval_policy": {"rules": [{"tools": "refund", "action": "ask"}]},
        }
    )
    b = definition_of(b_settings, [tool("lookup", q={"type": "integer"}), tool("refund")])
    diff = definition_diff(a, b, ("run-a", "run-b"))
    assert not diff.same and (diff.a, diff.b) == ("shop@1", "shop@2")
    assert "+Never refund." in diff.prompt_diff and diff.prompt_diff[0] == "--- run-a"
    assert (diff.tools_added, diff.tools_removed) == (["refund"], ["weather"])
    assert [t.name for t in diff.tools_changed] == ["lookup"]
    assert '-      "type": "string"' in diff.tools_changed[0].schema_diff
    assert diff.model is not None and (diff.model.before, diff.model.after) == (None, "m2")
    assert diff.approval_policy is not None and diff.approval_policy.before is None
    assert set(diff.settings) == {"max_iterations"}
    text = diff_lines(diff)
    assert text[0].startswith("definitions: shop@1 (") and "tool added: refund" in text
    assert "setting max_iterations: 10 -> 3" in text
    assert diff_lines(definition_diff(a, a))[0].startswith("same definition: shop@1")


def test_agent_diff_reads_the_definition_a_continued_run_carries() -> None:
    """The latest run of a continue-as-new chain may have recorded nothing yet: its input
    carries the definition (a run's `definition`, a session's `carry.definition`)."""
    made = definition_of(SHOP, [LOOKUP])
    dumped = made.model_dump(mode="json")
    assert carried_definition({"prompt": "x", "definition": dumped}) == made
    assert carried_definition({"carry": {"definition": dumped, "turns": 3}}) == made
    assert carried_definition({"prompt": "x"}) is None
    assert carried_definition({"carry": None}) is None
    assert carried_definition("not an input") is None


def test_a_one_shot_run_keeps_its_definition_to_its_end() -> None:
    running = definition_of(SHOP, [LOOKUP])
    assert end_record(running, running).outcome == "same"
    newer = definition_of(
        SHOP.model_copy(update={"agent_version": "2", "on_new_definition": "migrate_at_turn"}), []
    )
    kept = end_record(running, newer)
    assert (kept.outcome, kept.previous, kept.label, kept.definition) == (
        "kept", running.digest, "shop@2", None,
    )  # fmt: skip


def test_the_settings_a_run_sends_to_be_recorded_give_its_definition_back() -> None:
    """What a run that starts sends the `record_definition` activity (`agent-definition-once`):
    its settings that differ from the defaults, from which the activity makes the definition."""
    shop = Agent(
        "shop", instructions="Sell things.", version="7", tools=["lookup"], max_iterations=4,
        model="m2", fallback_models=["m3"], on_new_definition="migrate_at_turn",
        approval_policy={"rules": [{"tools": "lookup", "action": "ask"}]},
    )  # fmt: skip
    sent = shop.input("hi").model_copy(update={"tenant": "acme", "memory_scope": "u1"})
    sparse = sparse_settings(sent)
    assert "prompt" not in sparse and "max_observation_chars" not in sparse  # (a default)
    assert sparse["max_iterations"] == 4 and "tenant" not in sparse  # (who runs it: not sent)
    back = AgentSettings.model_validate(json.loads(json.dumps(sparse)))
    assert definition_of(back, [LOOKUP]) == definition_of(sent, [LOOKUP])
    assert sparse_settings(AgentSettings()) == {}
    # the activity's side: the schemas of the worker's tools the settings allow
    calc = back.model_copy(update={"tools": ["calculator"]})
    made = definition_on(calc, TEST_CATALOG.tools)
    assert [t.name for t in made.tools] == ["calculator"] and made.label == "shop@7"
    assert made == definition_of(calc, [TEST_CATALOG.tools.select(["calculator"])[0].schema()])
