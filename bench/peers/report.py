"""The peers table (`make bench-peers`, and `make bench` once `bench/results/peers.json`
exists): every figure per system and server, the targets for ours as ratios to the best peer
in the same run, and the chart of history bytes against model calls (one line per system)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.peers import cache
from bench.peers.systems import OA_LEVERS, OURS_LOCAL
from bench.report import KIB, verdict

MIB = 1024 * 1024
REPLAY_TARGET_S = 0.3
Cell = Callable[[dict[str, Any]], str]


def grid(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "|-" + "-|-".join("-" * w for w in widths) + "-|"
    return "\n".join([line(header), rule, *map(line, rows)])


def size(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value / MIB:.2f} MiB" if value >= MIB else f"{value / KIB:.1f} KiB"


def short(error: str) -> str:
    """An error as a table cell: its last line, cut (the whole is under the table)."""
    lines = [line.strip() for line in error.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else error
    return f"cannot run: {last[:60]}{'…' if len(last) > 60 else ''}"


def cell(data: dict[str, Any] | None, fmt: Cell, error: str | None = None) -> str:
    """One system's figure, or why it has none."""
    if data is None:
        return short(error) if error else "–"
    if "error" in data and not ("history_bytes" in data or "cold_seconds" in data):
        return short(str(data["error"]))
    return fmt(data)


def errors(results: dict[str, Any]) -> list[str]:
    """Every error of the run, one line each: `server / workload / system: error`."""
    found = []
    for server, entry in results.get("servers", {}).items():
        for name, error in (entry.get("errors") or {}).items():
            found.append(f"{server} / 1, 2 / {name}: {error}")
        for name, error in (entry.get("throughput_errors") or {}).items():
            found.append(f"{server} / 2 / {name}: {error}")
        for workload in ("long", "waiting", "replay"):
            for name, data in (entry.get(workload) or {}).items():
                if isinstance(data, dict) and data.get("error"):
                    found.append(f"{server} / {workload} / {name}: {data['error']}")
    return [" ".join(line.split())[:400] for line in found]


def waited(key: str, fmt: str) -> Cell:
    def show(data: dict[str, Any]) -> str:
        value = data.get(key)
        text = "–" if value is None else fmt.format(value)
        done = data["completed"] == data["runs"]
        return text if done else f"{text} ({data['completed']}/{data['runs']} done)"

    return show


def completes(data: dict[str, Any]) -> str:
    state = "yes" if data["completed"] else f"NO: {data['close']}, {data.get('error')}"
    return f"{state} ({data['model_calls']} calls)"


def history_at(calls: str) -> Cell:
    return lambda data: size(data["history_bytes_at"].get(calls))


def figures(results: dict[str, Any]) -> list[list[str]]:
    systems = list(results.get("systems") or {"ours": ""})
    rows: list[list[str]] = []

    def add(label: str, data: dict[str, Any], fmt: Cell, errors: dict[str, str]) -> None:
        rows.append([label, *(cell(data.get(n), fmt, errors.get(n)) for n in systems)])

    for server, entry in results.get("servers", {}).items():
        errors = entry.get("errors") or {}
        per_turn, burst = entry.get("per_turn") or {}, entry.get("throughput") or {}
        if per_turn:
            add(
                f"1 wall ms/turn ({server})",
                per_turn,
                lambda d: f"{d['wall_ms_per_turn']:.1f}",
                errors,
            )
            add(
                f"1 worker CPU ms/turn ({server})",
                per_turn,
                lambda d: f"{d['cpu_ms_per_turn']:.1f}",
                errors,
            )
        if burst:
            label = f"2 throughput runs/s, {burst['runs']} x {burst['turns']} turns ({server})"
            stalled = {**errors, **(entry.get("throughput_errors") or {})}
            add(label, burst, lambda d: f"{d['runs_per_second']:.2f}", stalled)
        long = entry.get("long") or {}
        if long:
            for calls in ("10", "25", "50", "100"):
                add(f"3 history at call {calls}", long, history_at(calls), {})
            add("3 completes", long, completes, {})
            add("3 largest single payload", long, lambda d: size(d["largest_payload_bytes"]), {})
        wait = entry.get("waiting") or {}
        if wait:
            runs = next((v["runs"] for v in wait.values() if "runs" in v), "?")
            rate = next((v["signal_rate_per_second"] for v in wait.values() if "runs" in v), "?")
            p99 = f"4 p99 approval → done at {rate}/s (s, {server})"
            add(p99, wait, waited("p99_signal_to_completion_s", "{}"), {})
            add(
                f"4 RSS per waiting run (KB, {server})",
                wait,
                waited("rss_per_waiting_run_kb", "{:.0f}"),
                {},
            )
            add(
                f"4 worker RSS, {runs} waiting (MB, {server})",
                wait,
                waited("rss_waiting_mb", "{:.0f}"),
                {},
            )
            add(
                f"4 CPU ms an approval, worker / server ({server})",
                wait,
                lambda d: (
                    f"{d['worker_cpu_ms_each']:.0f} / {d['server_cpu_ms_each']:.0f}"
                    if "server_cpu_ms_each" in d
                    else "–"
                ),
                {},
            )
        replays = entry.get("replay") or {}
        if replays:

            def replayed(d: dict[str, Any]) -> str:
                return (
                    f"{d['cold_seconds']:.2f} / {d['warm_median_seconds']:.2f} ({d['events']} ev)"
                )

            add("5 replay of workload 3, cold / warm (s)", replays, replayed, {})
    return rows


def best_peer(values: dict[str, Any], lower: bool) -> tuple[str, float] | None:
    """The best peer's figure (never one of ours' own modes: `ours`, `ours +local model`)."""
    found = [(n, float(v)) for n, v in values.items() if not n.startswith("ours") and v]
    if not found:
        return None
    return (min if lower else max)(found, key=lambda item: item[1])


def target(
    label: str,
    values: dict[str, Any],
    lower: bool,
    goal: str,
    check: Callable[[float, float], bool],
    fmt: str = "{:.1f}",
) -> list[str]:
    """A row: ours, the best peer, best/ours (lower is better) or ours/best, pass or fail."""
    ours, best = values.get("ours"), best_peer(values, lower)
    if not ours or best is None:
        return [label, "–" if not ours else fmt.format(ours), "–", "–", goal, verdict(None)]
    ratio = best[1] / ours if lower else ours / best[1]
    shown = f"{fmt.format(best[1])} ({best[0]})"
    return [label, fmt.format(ours), shown, f"{ratio:.2f}x", goal, verdict(check(ours, best[1]))]


def figures_of(data: dict[str, Any], key: str) -> dict[str, Any]:
    return {n: d.get(key) for n, d in data.items() if isinstance(d, dict)}


DEFAULT_GOAL, LOCAL_GOAL = 1.5, 1.3
"""Issue 36's per-turn goals, like for like: ours' default this many times lower than the best
peer's default, ours with local model calls than OpenAI Agents with `use_local_activity=True`."""


def like_for_like_sides(
    per_turn: dict[str, Any], key: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The figures `key` that issue 36 compares like for like: ours' default and every peer's
    documented configuration (the columns without a `+`), then ours with local model calls
    (as `ours`) and OpenAI Agents with `use_local_activity=True`."""
    values = figures_of(per_turn, key)
    defaults = {n: v for n, v in values.items() if "+" not in n}
    local = {"ours": values.get(OURS_LOCAL.name), OA_LEVERS.name: values.get(OA_LEVERS.name)}
    return defaults, local


def like_for_like(per_turn: dict[str, Any], server: str) -> list[list[str]]:
    """Issue 36's per-turn targets, like for like (`like_for_like_sides`)."""
    rows = []
    for key, what in (("wall_ms_per_turn", "wall"), ("cpu_ms_per_turn", "worker CPU")):
        defaults, local = like_for_like_sides(per_turn, key)
        rows.append(
            target(
                f"1 per turn, {what} ms, default vs each peer's default ({server})",
                defaults,
                True,
                f"≥ {DEFAULT_GOAL}x lower than the best peer's default",
                lambda o, b: b / o >= DEFAULT_GOAL,
            )
        )
        rows.append(
            target(
                f"1 per turn, {what} ms, local vs OpenAI Agents' local ({server})",
                local,
                True,
                f"≥ {LOCAL_GOAL}x lower",
                lambda o, b: b / o >= LOCAL_GOAL,
            )
        )
    return rows


def targets(results: dict[str, Any]) -> list[list[str]]:
    rows: list[list[str]] = []
    for server, entry in results.get("servers", {}).items():
        per_turn, burst = entry.get("per_turn") or {}, entry.get("throughput") or {}
        if per_turn:
            rows += like_for_like(per_turn, server)
        for key, what in (("wall_ms_per_turn", "wall"), ("cpu_ms_per_turn", "worker CPU")):
            if per_turn:
                rows.append(
                    target(
                        f"1 per turn, {what} ms ({server})",
                        figures_of(per_turn, key),
                        True,
                        "≥ 2x lower than the best peer",
                        lambda o, b: b / o >= 2.0,
                    )
                )
        if burst:
            rows.append(
                target(
                    f"2 throughput runs/s ({server})",
                    figures_of(burst, "runs_per_second"),
                    False,
                    "≥ 2x the best peer",
                    lambda o, b: o / b >= 2.0,
                    "{:.2f}",
                )
            )
        long = entry.get("long") or {}
        if "history_bytes_at" in long.get("ours", {}):
            ours = long["ours"]
            whole = bool(ours["completed"]) and ours["model_calls"] >= results["size"]["calls"]
            at = {n: (d.get("history_bytes_at") or {}).get("50") for n, d in long.items()}

            def tenth(o: float, b: float, whole: bool = whole) -> bool:
                return o <= b / 10 and whole

            rows.append(
                target(
                    "3 history at call 50 (bytes), and ours completes",
                    at,
                    True,
                    "≤ 1/10 of the best peer's; completes",
                    tenth,
                    "{:.0f}",
                )
            )
        wait = entry.get("waiting") or {}
        if wait:
            rows.append(
                target(
                    f"4 RSS per waiting run, KB ({server})",
                    figures_of(wait, "rss_per_waiting_run_kb"),
                    True,
                    "lower than the best peer",
                    lambda o, b: o < b,
                    "{:.0f}",
                )
            )
        replayed = (entry.get("replay") or {}).get("ours") or {}
        if "cold_seconds" in replayed:
            worst = max(replayed["cold_seconds"], replayed["warm_median_seconds"])
            goal = f"< {REPLAY_TARGET_S} s"
            label = "5 replay ours' history, worst of cold / warm (s)"
            rows.append([label, f"{worst:.2f}", "–", "–", goal, verdict(worst < REPLAY_TARGET_S)])
    return rows


def text(results: dict[str, Any]) -> str:
    systems = list(results.get("systems") or {"ours": ""})
    rows = figures(results)
    parts = [grid(["workload", *systems], rows)] if rows else []
    rows = targets(results)
    if rows:
        parts.append(grid(["target (ours)", "ours", "best peer", "ratio", "goal", "result"], rows))
    for server in (results.get("servers") or {}).values():
        if "cache" in server:
            title = f"6 prompt cache (model server: {server['cache']['model_server']}):\n"
            parts.append(title + grid(cache.HEADER, cache.rows(server["cache"])))
    found = errors(results)
    if found:
        parts.append("Errors:\n" + "\n".join(f"- {line}" for line in found))
    return "\n\n".join(parts)


def saved_table(path: Path) -> str:
    """The table of a saved `peers.json` (`make bench` prints it beside its own)."""
    results = json.loads(path.read_text())
    head = f"Against the real peers ({path}, {results.get('mode')} run, {results.get('date')}):"
    return f"{head}\n{text(results)}"


def chart(results: dict[str, Any], path: Path) -> None:
    """History bytes against model calls in workload 3, one line per system (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    long = (results.get("servers", {}).get("tuned") or {}).get("long") or {}
    fig, ax = plt.subplots(figsize=(9, 5))
    for name, data in long.items():
        values = data.get("per_call_bytes") or []
        if values:
            stopped = "" if data.get("completed") else f" (did not complete: {data.get('close')})"
            ax.plot(range(1, len(values) + 1), [v / KIB for v in values], label=name + stopped)
    ax.set_yscale("log")
    ax.set_xlabel("model calls")
    ax.set_ylabel("history bytes so far (KiB, log)")
    ax.set_title("One run of model calls that each call fixed_output (2,000 characters)")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
