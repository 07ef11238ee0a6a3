"""The one table `make bench` prints (ours, naive, ratio, target, pass/fail), and the chart of
history bytes per session turn (ours vs naive)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

KIB = 1024


@dataclass(frozen=True)
class Row:
    target: str
    ours: str
    naive: str
    ratio: str
    goal: str
    passed: bool | None
    """None: not measured in this run."""


def ratio_text(naive: float | None, ours: float | None) -> str:
    if not naive or not ours:
        return "–"
    return f"{naive / ours:.2f}x"


def kib(value: float | None) -> str:
    return "–" if value is None else f"{value / KIB:.1f} KiB"


def speed_rows(speed: dict[str, Any]) -> list[Row]:
    ours, naive = speed["ours"], speed["naive"]
    rows = []
    for key, label in (("wall_ms_per_turn", "wall"), ("cpu_ms_per_turn", "worker CPU")):
        value, base = ours[key], naive[key]
        rows.append(
            Row(
                f"1 per turn: {label} (ms, median of {speed['repeats']})",
                f"{value:.1f}",
                f"{base:.1f}",
                ratio_text(base, value),
                "≥ 2x lower",
                base / value >= 2.0,
            )
        )
    return rows


def throughput_rows(result: dict[str, Any]) -> list[Row]:
    ours, naive = result["ours"], result["naive"]
    return [
        Row(
            f"2 throughput: {result['runs']} runs x {result['turns']} turns (s)",
            f"{ours['seconds']:.1f}",
            f"{naive['seconds']:.1f}",
            ratio_text(naive["seconds"], ours["seconds"]),
            "≥ 2x faster",
            naive["seconds"] / ours["seconds"] >= 2.0,
        )
    ]


def session_rows(result: dict[str, Any]) -> list[Row]:
    ours, naive = result["ours"], result["naive"]
    late = ours["late_window"]
    naive_late = (
        kib(naive["late_bytes_per_turn"])
        if naive["late_bytes_per_turn"]
        else f"stopped at {naive['stopped']}"
    )
    return [
        Row(
            f"3 history per turn, turns {late[0]}–{late[1]}",
            f"{kib(ours['late_bytes_per_turn'])} ({ours['late_over_new_text']}x text)",
            naive_late,
            ratio_text(naive["late_bytes_per_turn"], ours["late_bytes_per_turn"]),
            f"≤ 4x new text ({kib(4 * ours['new_text_chars'])})",
            ours["late_bytes_per_turn"] is not None
            and ours["late_bytes_per_turn"] <= 4 * ours["new_text_chars"],
        ),
        Row(
            f"3 history per turn, mean of turns 1–{ours['turns_done']} (with continue-as-new)",
            f"{kib(ours['mean_bytes_per_turn'])} ({ours['mean_over_new_text']}x text)",
            f"{kib(naive['mean_bytes_per_turn'])} (to turn {naive['turns_done']})",
            ratio_text(naive["mean_bytes_per_turn"], ours["mean_bytes_per_turn"]),
            f"≤ 4x new text ({kib(4 * ours['new_text_chars'])})",
            ours["mean_bytes_per_turn"] is not None
            and ours["mean_bytes_per_turn"] <= 4 * ours["new_text_chars"],
        ),
        Row(
            f"3 flat: turns {late[0]}–{late[1]} / 20–40",
            f"{ours['flat_ratio']}x",
            f"{naive['flat_ratio']}x" if naive["flat_ratio"] else "not reached",
            "–",
            "≤ 1.5x",
            ours["flat_ratio"] is not None and ours["flat_ratio"] <= 1.5,
        ),
        Row(
            "3 full copies of a turn's tool output",
            str(ours["most_full_observation_copies"]),
            str(naive["most_full_observation_copies"]),
            "–",
            "≤ 2",
            (ours["most_full_observation_copies"] or 99) <= 2,
        ),
    ]


def waiting_rows(result: dict[str, Any]) -> list[Row]:
    ours, naive = result["ours"], result["naive"]
    return [
        Row(
            f"4 worker RSS, {ours['runs']} waiting, {ours['cached']} cached (MB)",
            f"{ours['rss_waiting_mb']:.0f}",
            f"{naive['rss_waiting_mb']:.0f}",
            ratio_text(naive["rss_waiting_mb"], ours["rss_waiting_mb"]),
            "≤ 300 MB",
            ours["rss_waiting_mb"] <= 300,
        ),
        Row(
            f"4 p99 signal → done, {ours['signal_rate_per_second']:g} signals/s (s)",
            f"{ours['p99_signal_to_completion_s']}",
            f"{naive['p99_signal_to_completion_s']}",
            ratio_text(naive["p99_signal_to_completion_s"], ours["p99_signal_to_completion_s"]),
            "< 2 s",
            ours["p99_signal_to_completion_s"] is not None
            and ours["p99_signal_to_completion_s"] < 2.0
            and ours["completed"] == ours["runs"],
        ),
    ]


def replay_cell(side: dict[str, Any]) -> str:
    """A side's cold / warm replay wall seconds, and its CPU seconds when recorded (the
    replay's own cost: on busy shared cores the wall time also counts waiting for one)."""
    shown = f"{side['cold_seconds']:.2f} / {side['warm_median_seconds']:.2f}"
    if "cold_cpu_seconds" in side:
        shown += f" (CPU {side['cold_cpu_seconds']:.2f} / {side['warm_median_cpu_seconds']:.2f})"
    return shown


def replay_rows(result: dict[str, Any]) -> list[Row]:
    ours, naive = result["ours"], result["naive"]
    worst, base = (
        max(ours["cold_seconds"], ours["warm_median_seconds"]),
        max(naive["cold_seconds"], naive["warm_median_seconds"]),
    )
    return [
        Row(
            f"5 replay 100-turn history, cold / warm wall (s; {ours['events']} events)",
            replay_cell(ours),
            replay_cell(naive),
            ratio_text(base, worst),
            "< 1 s",
            worst < 1.0,
        )
    ]


def verdict(passed: bool | None) -> str:
    return "–" if passed is None else "PASS" if passed else "FAIL"


def table(rows: Sequence[Row]) -> str:
    header = ("target", "ours", "naive", "naive/ours", "goal", "result")
    cells = [
        (
            r.target,
            r.ours,
            r.naive,
            r.ratio,
            r.goal,
            "–" if r.passed is None else "PASS" if r.passed else "FAIL",
        )
        for r in rows
    ]
    widths = [max(len(str(c[i])) for c in [header, *cells]) for i in range(len(header))]
    lines = [" | ".join(str(c).ljust(w) for c, w in zip(header, widths, strict=True))]
    lines.append("-|-".join("-" * w for w in widths))
    lines += [
        " | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells
    ]
    return "\n".join(f"| {line} |" for line in lines)


def rows_json(rows: Sequence[Row]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]


def chart(session: dict[str, Any], path: Path) -> None:
    """History bytes per turn over the session, ours vs naive (log scale), with the target."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5))
    for kind, style in (("ours", "-"), ("naive", "--")):
        values = session[kind]["per_turn_bytes"]
        points = [(i + 1, v / KIB) for i, v in enumerate(values) if v is not None]
        if points:
            xs, ys = zip(*points, strict=True)
            stopped = session[kind]["stopped"]
            label = f"{kind} ({stopped})" if stopped else kind
            ax.plot(xs, ys, style, label=label)
    limit = 4 * session["ours"]["new_text_chars"] / KIB
    ax.axhline(limit, color="grey", linestyle=":", label=f"target: 4x new text ({limit:.1f} KiB)")
    ax.set_yscale("log")
    ax.set_xlabel("turn")
    ax.set_ylabel("history bytes added by the turn (KiB, log)")
    ax.set_title(
        "Session history per turn: 2 KB message + 2 KB tool output + 200-char answer\n"
        "(summed over the session's runs and the turn's own run)"
    )
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
