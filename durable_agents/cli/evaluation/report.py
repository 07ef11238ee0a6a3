"""What `agent eval` shows and writes: the terminal table, `results.json` and `chart.png`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from durable_agents.cli.evaluation.scoring import Metrics, RunRecord, Summary

CHART_FILE = "chart.png"
RESULTS_FILE = "results.json"


# -- numbers as text ---------------------------------------------------------------------------


def percent(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.0f}%"


def number(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def dollars(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"${value:.4f}" if value < 100 else f"${value:,.2f}"


def recovery(metrics: Metrics) -> str:
    """`100% (2/2)`, or `–` when no run had a failure to recover from."""
    if not metrics.failure_runs:
        return "–"
    rate = percent(metrics.failure_recovery_rate)
    return f"{rate} ({metrics.recovered_runs}/{metrics.failure_runs})"


# -- the table ---------------------------------------------------------------------------------

COLUMNS = (
    ("scenario", "<"),
    ("model", "<"),
    ("passed", ">"),
    ("completion", ">"),
    ("recovery", ">"),
    ("avg steps", ">"),
    ("avg turns", ">"),
    ("avg tokens", ">"),
    ("avg cost", ">"),
    ("p50 s", ">"),
    ("p95 s", ">"),
)


CACHED_COLUMN = ("cached", ">")
"""The share of prompt tokens served from the provider's prompt cache: shown after `avg tokens`
when a provider reported any (OpenAI, llama-server; the demo model reports none)."""


def cached_text(m: Metrics) -> str:
    """` (62% of prompt tokens cached)` when the provider reported cached tokens, else ``."""
    return (
        f" ({percent(m.prompt_cache_share)} of prompt tokens cached)"
        if m.prompt_cache_share
        else ""
    )


def _row(scenario: str, model: str, m: Metrics, cached: bool = False) -> list[str]:
    row = _plain_row(scenario, model, m)
    return [*row[:8], percent(m.prompt_cache_share), *row[8:]] if cached else row


def _plain_row(scenario: str, model: str, m: Metrics) -> list[str]:
    return [
        scenario,
        model,
        f"{m.passed}/{m.runs}",
        percent(m.completion_rate),
        recovery(m),
        number(m.avg_steps),
        number(m.avg_turns),
        number(m.avg_tokens, 0),
        dollars(m.avg_cost_usd),
        number(m.latency_p50_seconds, 2),
        number(m.latency_p95_seconds, 2),
    ]


def _columns(cached: bool) -> list[tuple[str, str]]:
    return [*COLUMNS[:8], CACHED_COLUMN, *COLUMNS[8:]] if cached else list(COLUMNS)


def _aligned(rows: Sequence[Sequence[str]], cached: bool = False) -> list[str]:
    columns = _columns(cached)
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    lines = []
    for row in rows:
        cells = [
            cell.ljust(width) if align == "<" else cell.rjust(width)
            for cell, width, (_, align) in zip(row, widths, columns, strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
    return lines


def table_lines(summary: Summary) -> list[str]:
    """Per scenario and model, then every scenario per model (`all`)."""
    cached = any(m.prompt_cache_share for m in summary.by_model.values())
    header = [name for name, _ in _columns(cached)]
    rows = [_row(s.scenario, s.model, s, cached) for s in summary.by_scenario]
    totals = [_row("all", label, m, cached) for label, m in summary.by_model.items()]
    lines = _aligned([header, *rows, *totals], cached)
    rule = "-" * max(len(line) for line in lines)
    return [lines[0], rule, *lines[1 : 1 + len(rows)], rule, *lines[1 + len(rows) :]]


def headline_lines(summary: Summary) -> list[str]:
    """The four seed-003 metrics per model, in words."""
    lines = []
    for label, m in summary.by_model.items():
        lines.append(
            f"{label}: completion rate {percent(m.completion_rate)} ({m.passed}/{m.runs}) · "
            f"avg steps {number(m.avg_steps)} · avg tokens {number(m.avg_tokens, 0)}"
            f"{cached_text(m)} · "
            f"failure recovery {recovery(m)} · avg cost {dollars(m.avg_cost_usd)} · "
            f"latency p50 {number(m.latency_p50_seconds, 2)} s, "
            f"p95 {number(m.latency_p95_seconds, 2)} s"
        )
    return lines


def problem_lines(records: Sequence[RunRecord]) -> list[str]:
    """One block per run that missed an expectation."""
    lines = []
    for record in records:
        if record.passed:
            continue
        run = f"{record.scenario} · {record.label} #{record.repeat}"
        lines.append(f"✗ {run}  ({record.workflow_id})")
        lines += [f"    {problem}" for problem in record.problems]
    return lines


def run_line(record: RunRecord) -> str:
    """One finished run, for the progress output."""
    mark = "✓" if record.passed else "✗"
    model = record.model or f"{record.answered_by or 'worker default'}"
    ending = record.stop_reason if record.ending == "completed" else record.ending
    latency = f" · {record.latency_seconds:.2f} s" if record.latency_seconds is not None else ""
    why = f" · {record.problems[0]}" if record.problems else ""
    return f"{mark} {record.scenario} · {model} #{record.repeat} · {ending}{latency}{why}"


# -- files -------------------------------------------------------------------------------------


def results_json(
    *,
    eval_id: str,
    suite: dict[str, Any],
    target: dict[str, Any],
    started_at: str,
    finished_at: str,
    summary: Summary,
    records: Sequence[RunRecord],
) -> dict[str, Any]:
    """Everything of the evaluation: where and when, the metrics, and every run."""
    return {
        "eval_id": eval_id,
        "suite": suite,
        "target": target,
        "started_at": started_at,
        "finished_at": finished_at,
        "models": list(summary.by_model),
        "summary": summary.model_dump(mode="json"),
        "runs": [{**r.model_dump(mode="json"), "passed": r.passed} for r in records],
    }


def write_results(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def write_chart(path: Path, summary: Summary, title: str) -> None:
    """Models side by side: completion rate per scenario (and over all), and the average
    cost of a run. PNG, drawn with matplotlib's Agg canvas (no display needed)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    models = list(summary.by_model)
    scenarios = list(dict.fromkeys(s.scenario for s in summary.by_scenario))
    rates = {(s.scenario, s.model): s.completion_rate or 0.0 for s in summary.by_scenario}
    for label, m in summary.by_model.items():
        rates[("all", label)] = m.completion_rate or 0.0
    groups = [*scenarios, "all"]

    figure = Figure(figsize=(max(8.0, 1.1 * len(groups) + 4), 4.8), layout="constrained")
    FigureCanvasAgg(figure)
    left, right = figure.subplots(1, 2, width_ratios=[3, 1])
    width = 0.8 / len(models)
    for index, model in enumerate(models):
        xs = [g + (index - (len(models) - 1) / 2) * width for g in range(len(groups))]
        heights = [rates.get((group, model), 0.0) * 100 for group in groups]
        bars = left.bar(xs, heights, width, label=model)
        left.bar_label(bars, labels=[f"{h:.0f}" for h in heights], fontsize=7, padding=1)
    left.set_xticks(range(len(groups)), groups, rotation=25, ha="right")
    left.set_ylim(0, 110)
    left.set_ylabel("completion rate (%)")
    left.set_title("expectations met")
    figure.legend(loc="outside lower center", ncols=min(len(models), 6), fontsize=8)

    costs = [summary.by_model[m].avg_cost_usd for m in models]
    colors = [f"C{index}" for index in range(len(models))]  # as the bars on the left
    bars = right.bar(range(len(models)), [c or 0.0 for c in costs], color=colors)
    right.bar_label(bars, labels=[dollars(c) for c in costs], fontsize=8, padding=2)
    right.set_xticks(range(len(models)), models, rotation=25, ha="right")
    right.set_ylabel("US$ per run")
    right.set_title("average cost")
    top = max((c for c in costs if c), default=0.0)
    right.set_ylim(0, top * 1.3 if top else 1.0)
    figure.suptitle(title)
    figure.savefig(path, dpi=120)
