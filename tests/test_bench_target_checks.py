"""Target 6's fan-out check (`bench.stream`): what it counts and when it passes; target 5's
replay figures (`bench.replay`), judged on wall time with the CPU time beside it.

The stream's followers read through a query, which records nothing in a history, so the count
the target used (poll updates in the sessions' histories) was 0.0 on both sides and its check
`0.0 <= max(0.0 * 1.5, 0.0 + 2)` passed without measuring anything. It now counts the queries
the dev server answered (its Prometheus `/metrics`), and a count of nothing is not a pass.
"""

from __future__ import annotations

from bench import replay
from bench.report import Row, replay_cell
from bench.stream import one_subscription_per_run, per_turn, queries_served
from scripts.docs.benchmarks import unmeasured_fan_out
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


def test_a_run_recorded_before_the_query_count_shows_no_verdict() -> None:
    """The recorded quick run's 0.0 / 0.0 PASS is shown as not measured; a run that counted
    the queries keeps its row."""
    row = Row(
        "6 agent serve: stream polls per turn, 3 SSE clients / 1 follower",
        "0.0 / 0.0", "–", "–", "one subscription per run", True,
    )  # fmt: skip
    old = {"latency": {"sse": {"poll_updates_per_turn": 0.0}}}
    shown = unmeasured_fan_out(row, old)
    assert shown.passed is None and "not measured" in shown.goal
    assert shown.ours == "0.0 / 0.0 (updates)"
    counted = {"latency": {"sse": {"poll_queries_per_turn": 7.0, "poll_updates_per_turn": 0.0}}}
    assert unmeasured_fan_out(row, counted) == row


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
