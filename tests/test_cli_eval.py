"""`agent eval` end to end: the real CLI as a subprocess, the real dev server, the application's
worker in process with the offline demo model (`activities.demo_model.DemoChatModel`) on its own
task queue. The shipped suite (evals/seed_cases.yaml) must pass, print the four seed-003 metrics
and write results.json and the chart; evaluations never mix; a malformed suite is one error
line naming the scenario and the field; failing runs are reported, never waited on forever."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.demo_model import DemoChatModel
from examples.weather_service import DemoWeatherService
from tests.conftest import started_workers
from tests.test_cli_run import AgentCli

ROOT = Path(__file__).resolve().parent.parent
SEED_SUITE = str(ROOT / "evals" / "seed_cases.yaml")
EVAL_TIMEOUT = 90.0


class DemoWorker:
    def __init__(self, cli: AgentCli, workspace: Path, env: WorkflowEnvironment) -> None:
        self.cli = cli
        self.workspace = workspace
        self.env = env

    async def workflow_ids(self, prefix: str) -> list[str]:
        query = f'WorkflowId STARTS_WITH "{prefix}"'
        return sorted([w.id async for w in self.env.client.list_workflows(query)])


@pytest.fixture
async def demo(
    temporal_env: WorkflowEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[DemoWorker]:
    """The real worker with the offline demo model, and an `agent` CLI pointed at it; its
    `weather` tool asks the repository's demo weather service (as `make run`'s worker does)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    async with AsyncExitStack() as stack:
        weather = DemoWeatherService().start()
        stack.callback(weather.stop)
        monkeypatch.setenv("WEATHER_URL", weather.base_url)
        queue = await started_workers(stack, temporal_env.client, DemoChatModel(), workspace)
        address = temporal_env.client.service_client.config.target_host
        yield DemoWorker(AgentCli(address, queue), workspace, temporal_env)


def eval_id_in(text: str) -> str:
    found = re.search(r"\beval (eval-\d{8}T\d{6}Z-[0-9a-f]{6}) ", text)
    assert found, text
    return found.group(1)


async def test_the_seed_suite_passes_on_the_demo_model_for_two_models(
    demo: DemoWorker, tmp_path: Path
) -> None:
    out = tmp_path / "results"
    done = await demo.cli(
        "eval", SEED_SUITE, "--model", "demo-a", "--model", "demo-b", "--out", str(out),
        timeout=EVAL_TIMEOUT,
    )  # fmt: skip

    assert done.code == 0, done
    eval_id = eval_id_in(done.out)
    assert "7 scenarios × 2 models (demo-a, demo-b) = 14 runs" in done.out
    # the progress (stderr is not a terminal: one plain line per run, no control characters)
    assert len([line for line in done.err.splitlines() if line.startswith("✓ ")]) == 14
    assert "\x1b" not in done.err
    # the table: every scenario for both models, then the totals
    rows = [line.split() for line in done.out.splitlines()]
    for scenario in ("normal", "missing_information", "tool_failure", "service_recovers",
                     "user_cancel", "approval_rejected", "max_iterations"):  # fmt: skip
        for model in ("demo-a", "demo-b"):
            assert [scenario, model, "1/1", "100%"] in [row[:4] for row in rows], done.out
    assert ["all", "demo-a", "7/7", "100%", "100%", "(2/2)"] in [row[:6] for row in rows]
    # the four seed-003 metrics, per model
    for model in ("demo-a", "demo-b"):
        headline = next(line for line in done.out.splitlines() if line.startswith(f"{model}: "))
        assert "completion rate 100% (7/7)" in headline
        assert re.search(r"avg steps \d+\.\d", headline)
        assert re.search(r"avg tokens \d+", headline)
        assert "failure recovery 100% (2/2)" in headline
        assert "avg cost $0.0000" in headline
        assert re.search(r"latency p50 \d+\.\d\d s, p95 \d+\.\d\d s", headline)

    data = json.loads((out / "results.json").read_text())
    assert data["eval_id"] == eval_id
    assert data["models"] == ["demo-a", "demo-b"]
    assert data["target"]["task_queue"] == demo.cli.task_queue
    runs: list[dict[str, Any]] = data["runs"]
    assert len(runs) == 14 and all(run["passed"] for run in runs)
    assert {run["workflow_id"] for run in runs} == set(await demo.workflow_ids(eval_id))
    by_key = {(run["scenario"], run["model"]): run for run in runs}
    recovered = by_key[("tool_failure", "demo-a")]
    assert recovered["failures"]["tool_errors"] == 1
    assert recovered["failures"]["activity_failures"] == 1  # read from the history
    assert recovered["answer"] == "The answer is 425."
    weather = by_key[("service_recovers", "demo-b")]  # the service's 503, retried
    assert weather["failures"]["activity_retries"] == 1 and weather["tools"] == ["weather"]
    assert weather["answer"].startswith("The weather in Paris: ")
    cancelled = by_key[("user_cancel", "demo-b")]
    assert cancelled["ending"] == "cancelled" and cancelled["tools"] == ["calculator"]
    assert cancelled["people"] == ["cancelled after 1 tool step"]
    asked = by_key[("missing_information", "demo-a")]
    assert asked["tools"] == ["ask_user", "calculator"] and asked["answer"] == "The answer is 30."
    rejected = by_key[("approval_rejected", "demo-b")]
    assert rejected["people"][0].startswith("rejected write_file")
    assert rejected["people"][1].startswith("approved write_file")
    limited = by_key[("max_iterations", "demo-a")]
    assert limited["stop_reason"] == "max_iterations" and limited["turns"] == 3
    assert data["summary"]["by_model"]["demo-a"]["failure_recovery_rate"] == 1.0
    assert (demo.workspace / "eval-notes.txt").read_text() == "hello world"
    assert not (demo.workspace / "eval-total.txt").exists()

    chart = out / "chart.png"
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(chart) as image:
        assert image.format == "PNG" and image.width >= 800


async def test_evaluations_never_mix_and_json_goes_to_stdout(
    demo: DemoWorker, tmp_path: Path
) -> None:
    first = await demo.cli(
        "eval", SEED_SUITE, "--scenario", "normal", "--scenario", "tool_failure", "--repeat",
        "2", "--json", "--out", str(tmp_path / "one"), timeout=EVAL_TIMEOUT,
    )  # fmt: skip
    second = await demo.cli(
        "eval", SEED_SUITE, "--tag", "normal", "--json", "--out", str(tmp_path / "two"),
        timeout=EVAL_TIMEOUT,
    )  # fmt: skip

    assert first.code == 0, first
    assert second.code == 0, second
    one, two = first.json(), second.json()  # stdout is only JSON; the rest went to stderr
    assert one["eval_id"] != two["eval_id"]
    assert eval_id_in(first.err) == one["eval_id"]
    assert len(one["runs"]) == 4 and len(two["runs"]) == 1
    assert await demo.workflow_ids(one["eval_id"]) == sorted(r["workflow_id"] for r in one["runs"])
    assert await demo.workflow_ids(two["eval_id"]) == [two["runs"][0]["workflow_id"]]
    assert two["models"] == ["demo-offline"]  # the worker's default model, by its answer
    handle = demo.env.client.get_workflow_handle(two["runs"][0]["workflow_id"])
    memo = await (await handle.describe()).memo()
    assert memo["eval_id"] == two["eval_id"] and memo["eval_scenario"] == "normal"
    assert json.loads((tmp_path / "two" / "results.json").read_text()) == two


async def test_a_malformed_suite_is_one_error_line(demo: DemoWorker, tmp_path: Path) -> None:
    suite = tmp_path / "bad.yaml"
    suite.write_text(
        "name: bad\nscenarios:\n"
        "  - name: ask\n    prompt: Ask me\n    people:\n      - {action: reply, txt: blue}\n"
    )

    done = await demo.cli("eval", str(suite), "--out", str(tmp_path / "out"))

    assert done.code == 4
    assert done.one_error_line() == (
        f"agent: {suite}: scenario 'ask': people[0].text: Field required; scenario 'ask': "
        "people[0].txt: unknown field (did you mean 'text'?)"
    )
    assert not (tmp_path / "out").exists()


async def test_failing_runs_are_reported_not_waited_on(demo: DemoWorker, tmp_path: Path) -> None:
    suite = tmp_path / "failing.yaml"
    suite.write_text(
        """
name: failing on purpose
scenarios:
  - name: wrong_answer
    prompt: What is 17 * 25?
    expect: {answer_contains: "426"}
  - name: nobody_approves
    prompt: Write 'x' to x.txt
  - name: never_cancels
    prompt: Write 'y' to y.txt
    people: [{action: cancel, after_steps: 5}]
    timeout_seconds: 1
"""
    )

    done = await demo.cli("eval", str(suite), "--out", str(tmp_path / "out"), timeout=60)

    assert done.code == 1, done
    assert "✗ wrong_answer · demo-offline #1" in done.out
    assert "the answer does not contain '426': The answer is 425." in done.out
    assert (
        "write_file waited for approval and no scripted person answers it "
        "(agent eval cancelled the run)" in done.out
    )
    assert "no end within 1 s (agent eval cancelled the run)" in done.out
    runs = json.loads((tmp_path / "out" / "results.json").read_text())["runs"]
    assert [r["ending"] for r in runs] == ["completed", "cancelled", "cancelled"]
    assert not any(r["passed"] for r in runs)
    assert not (demo.workspace / "x.txt").exists()
