"""Target 6's fan-out check (`bench.stream`): what it counts and when it passes; target 5's
replay figures (`bench.replay`), judged on wall time with the CPU time beside it; issue 36's
like-for-like targets against the peers (BENCHMARKS.md's `bench-peers` table).

The stream's followers read through a query, which records nothing in a history, so the count
the target used (poll updates in the sessions' histories) was 0.0 on both sides and its check
`0.0 <= max(0.0 * 1.5, 0.0 + 2)` passed without measuring anything. It now counts the queries
the dev server answered (its Prometheus `/metrics`), and a count of nothing is not a pass.
"""

from __future__ import annotations

from bench import replay
from bench.report import replay_cell
from bench.stream import one_subscription_per_run, per_turn, queries_served
from scripts.docs.benchmarks import (
    approval_target,
    like_for_like_targets,
    ratio_target,
)
from tests.test_replay_configurations import HISTORIES, committed_history

METRICS = """\
# HELP service_requests service_requests counter
# TYPE service_requests counter
service_requests{namespace="default",operation="QueryWorkflow",service_name="frontend"} 41
service_requests{namespace="default",operation="QueryWorkflow",service_name="history"} 41
service_requests{namespace="default",operation="PollWorkflowTaskQueue",service_name="frontend"} 9
service_requests{namespace="other",operation="QueryWorkflow",service_name="frontend"} 1
client_requests{namespace="default",operation="HistoryClientQueryWorkflow",service_name="frontend",service_role="history"} 41
"""  # noqa: E501


def test_nothing_counted_is_not_a_pass() -> None:
    assert not one_subscription_per_run(0.0, 0.0)
    assert not one_subscription_per_run(0.0, 5.2)
    assert not one_subscription_per_run(5.2, 0.0)


def test_a_server_whose_count_is_not_read_gets_no_verdict() -> None:
    """A Temporal server the bench did not start (`bench_stack(server_address=...)`): its
    metrics are not read, so the fan-out has no verdict instead of a crash or a pass."""
    assert per_turn(None, 12, 6) is None and per_turn(3, None, 6) is None
    assert per_turn(3, 45, 6) == 7.0
    assert one_subscription_per_run(None, 5.2) is None
    assert one_subscription_per_run(5.1, None) is None


def test_shared_subscription_passes_and_one_per_client_fails() -> None:
    assert one_subscription_per_run(5.13, 5.17)
    assert one_subscription_per_run(7.5, 5.0)  # within 1.5x
    assert not one_subscription_per_run(15.3, 5.1)  # 3 clients, 3 subscriptions
    assert one_subscription_per_run(2.9, 1.0)  # few polls: 2 a turn of slack
    assert not one_subscription_per_run(3.1, 1.0)


def test_queries_are_counted_at_the_frontend_in_every_namespace() -> None:
    assert queries_served(METRICS) == 42
    assert queries_served("") == 0


# -- target 5: replay, judged on wall time, its CPU time recorded beside it --------------------


def test_replay_summary_keeps_the_cpu_beside_the_wall_time() -> None:
    shown = replay.summary("ours", 812, [1.646, 1.006, 1.007, 0.946], [0.92, 0.75, 0.8, 0.72])
    assert shown["passed"] is False  # judged on wall time: 1.646 s cold
    assert (shown["cold_cpu_seconds"], shown["warm_median_cpu_seconds"]) == (0.92, 0.75)
    assert replay_cell(shown) == "1.65 / 1.01 (CPU 0.92 / 0.75)"
    old = replay.summary("ours", 812, [0.9, 0.8])
    assert old["passed"] is True and replay_cell(old) == "0.90 / 0.80"


async def test_a_replay_records_its_cpu_time() -> None:
    history = committed_history(HISTORIES / "simple.json")
    cpu: list[float] = []
    times = await replay.replay_times("ours", history, repeats=2, cpu=cpu)
    assert len(times) == len(cpu) == 2
    assert all(seconds > 0 for seconds in cpu)


# -- issue 36's like-for-like targets against the peers (BENCHMARKS.md's `bench-peers`) --------


def turn_figures(wall: float, cpu: float) -> dict[str, float]:
    return {"wall_ms_per_turn": wall, "cpu_ms_per_turn": cpu}


def test_a_missed_per_turn_target_says_by_how_much() -> None:
    missed = ratio_target("1 per turn", 20.0, ("openai-agents", 27.0), 1.5)
    assert missed[3:6] == ["1.35x", "≥ 1.5x lower", "FAIL"]
    assert missed[6] == "1.35x of 1.5x: ours 2.0 ms too slow (≤ 18.0 needed)"
    met = ratio_target("1 per turn", 18.0, ("openai-agents", 27.0), 1.5)
    assert met[3:] == ["1.50x", "≥ 1.5x lower", "PASS", ""]
    assert ratio_target("1 per turn", None, ("openai-agents", 27.0), 1.5)[5] == "–"


def test_the_approval_target_is_the_servers_cpu_with_the_workers_not_worse() -> None:
    oa = {"server_cpu_ms_each": 27.0, "worker_cpu_ms_each": 22.0}
    worse = approval_target(
        "tuned",
        {"ours": {"server_cpu_ms_each": 38.0, "worker_cpu_ms_each": 28.0}, "openai-agents": oa},
    )
    assert worse[1:3] == ["38.0 / 28.0", "27.0 / 22.0"] and worse[5] == "FAIL"
    assert worse[6] == "server +11.0 ms (1.41x theirs); worker +6.0 ms (1.27x theirs)"
    cheaper = {"server_cpu_ms_each": 25.0, "worker_cpu_ms_each": 22.0}
    assert approval_target("tuned", {"ours": cheaper, "openai-agents": oa})[5:] == ["PASS", ""]
    worker_worse = {"server_cpu_ms_each": 25.0, "worker_cpu_ms_each": 23.0}
    assert approval_target("tuned", {"ours": worker_worse, "openai-agents": oa})[5] == "FAIL"
    gone = approval_target("tuned", {"ours": cheaper, "openai-agents": {"error": "stalled"}})
    assert gone[5:] == ["–", "not measured"]


def test_like_for_like_compares_defaults_with_defaults_and_local_with_local() -> None:
    """A peer's lever column (`+...`) is not its default: ours' default is compared with the
    best peer default, and ours `+local model` with OpenAI Agents' `+local model`."""
    results = {"servers": {"tuned": {"per_turn": {
        "ours": turn_figures(20.0, 14.0),
        "openai-agents": turn_figures(30.0, 21.0),
        "pydantic-ai": turn_figures(46.0, 31.0),
        "ours +local model": turn_figures(14.0, 16.0),
        "openai-agents +local model +passthrough": turn_figures(19.6, 19.5),
        "pydantic-ai +calculator in workflow +passthrough": turn_figures(10.0, 10.0),
    }}}}  # fmt: skip
    rows = like_for_like_targets(results)
    wall_default, wall_local, cpu_default, cpu_local = rows
    assert wall_default[2] == "30.0 (openai-agents)" and wall_default[5] == "PASS"
    assert wall_local[2] == "19.6 (openai-agents +local model +passthrough)"
    assert wall_local[3:6] == ["1.40x", "≥ 1.3x lower", "PASS"]
    assert cpu_default[3] == "1.50x" and cpu_local[5] == "FAIL"
