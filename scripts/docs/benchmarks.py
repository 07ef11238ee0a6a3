"""BENCHMARKS.md's and RELIABILITY.md's figures, recorded from real runs and rendered as tables.

A benchmark or soak run is recorded with what it needs to be trusted later: the command, the date,
the machine's load before and after, the git commit, and the JSON the run wrote itself:

    python -m scripts.docs.benchmarks record fleet --result /tmp/f.json -- \\
        .venv/bin/python -m bench.fleet --out /tmp/f.json

writes `bench/results/measured/fleet.json`. Those files are committed; the tables of
BENCHMARKS.md and RELIABILITY.md are rendered from them by `scripts/doc_excerpts.py` (the same
`<!-- generated: NAME -->` markers as the docs' command output: `--write` renders, `--check` and
`tests/test_doc_excerpts.py` fail when a table and its file disagree). A table's recipe is a
function of this module registered with `table("NAME")`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

if TYPE_CHECKING:
    from bench.report import Row

ROOT = Path(__file__).resolve().parent.parent.parent
MEASURED = ROOT / "bench" / "results" / "measured"
"""The recorded runs the published tables come from (committed, unlike the rest of results/)."""


class MeasuredRun(BaseModel):
    """One real run of a benchmark or soak: how it was run, where, and what it wrote."""

    command: str
    """The command as typed from the project folder."""
    date: str
    """When it started, UTC, to the minute."""
    seconds: float | None
    """How long it ran (None: not recorded, for a run kept from before the recorder)."""
    load_average: tuple[float, float] | None
    """The 1-minute load average when it started and when it ended (2 shared cores)."""
    commit: str
    """`git describe --always --dirty` of the tree it ran on (the shared tree is always dirty)."""
    machine: str
    exit_code: int
    result: Any
    """The JSON the run wrote, unchanged; with several files, each by its file name."""


def load(name: str) -> MeasuredRun:
    """The recorded run `name` (`bench/results/measured/NAME.json`)."""
    return MeasuredRun.model_validate_json((MEASURED / f"{name}.json").read_text())


def record(name: str, result_paths: Sequence[Path], command: Sequence[str]) -> MeasuredRun:
    """Run `command` here, then keep its result file with how and where it ran."""
    commit = subprocess.run(
        ["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    started, load_before = time.monotonic(), os.getloadavg()[0]
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    code = subprocess.run(list(command), cwd=ROOT).returncode
    run = MeasuredRun(
        command=shlex.join(command),
        date=date,
        seconds=round(time.monotonic() - started, 1),
        load_average=(round(load_before, 1), round(os.getloadavg()[0], 1)),
        commit=commit,
        machine=f"{os.cpu_count()} cores, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}",
        exit_code=code,
        result=read_results(result_paths),
    )
    MEASURED.mkdir(parents=True, exist_ok=True)
    (MEASURED / f"{name}.json").write_text(run.model_dump_json(indent=1) + "\n")
    return run


def read_results(paths: Sequence[Path]) -> Any:
    """The JSON of one result file, or of several by file name."""
    if len(paths) == 1:
        return json.loads(paths[0].read_text())
    return {path.name: json.loads(path.read_text()) for path in paths}


F = TypeVar("F", bound=Callable[..., Any])


def registrar(registry: dict[str, F], name: str) -> Callable[[F], F]:
    """A decorator that registers a generated block's recipe under the name its marker uses
    (a table's here, a command transcript's in `scripts/doc_excerpts.py`)."""

    def register(function: F) -> F:
        registry[name] = function
        return function

    return register


TableRecipe = Callable[[], str]
TABLES: dict[str, TableRecipe] = {}
"""Each generated table of BENCHMARKS.md / RELIABILITY.md, by its marker's name."""


def table(name: str) -> Callable[[TableRecipe], TableRecipe]:
    """Register a table rendered from recorded runs under the name its marker uses."""
    return registrar(TABLES, name)


def how_it_ran(run: MeasuredRun) -> str:
    """A run's command, date, duration, load and commit, as the line under a table says them."""
    took = "duration not recorded" if run.seconds is None else f"{run.seconds:.0f} s"
    load = (
        "load not recorded"
        if run.load_average is None
        else f"load {run.load_average[0]} → {run.load_average[1]}"
    )
    return f"`{run.command}` ({run.date}, {took}, {load}, {run.machine}, commit {run.commit})"


def provenance(*runs: MeasuredRun) -> str:
    """The line under a table: how each run it shows ran."""
    return "Measured by " + "; ".join(how_it_ran(r) for r in runs) + "."


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table of `rows` under `header`."""
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def percent(share: float) -> str:
    return f"{share * 100:.1f}%"


# -- the tables ---------------------------------------------------------------------------------


MAKE_BENCH = "bench-full"
"""The recorded full `make bench` (`bench.run_all`, every target at its full size) that the
tables of its targets come from."""


@table("bench-targets")
def bench_targets() -> str:
    """`make bench`'s table (`bench.run_all`): ours against the naive loop, as the run printed."""
    from bench.report import table as targets_table

    run = load(MAKE_BENCH)
    summary = run.result["summary.json"]
    shown = targets_table(recorded_rows(run))
    return (
        f"{shown}\n\n{provenance(run)} Workloads: {summary['mode']}; the server's transfer queue: "
        f"{summary['server']}; {summary['machine'].split(', ')[-1]}."
    )


def recorded_rows(run: MeasuredRun, target: str = "") -> list[Row]:
    """The rows of a recorded `make bench` table (those of one `target` number: "6"), as the
    run printed them."""
    from bench.report import Row

    rows = [Row(**row) for row in run.result["summary.json"]["rows"]]
    return [row for row in rows if row.target.split(" ")[0].rstrip(".") == target or not target]


@table("bench-stream")
def bench_stream() -> str:
    """Target 6's rows (the live event stream: latency, fan-out, history and CPU per turn), for
    the event stream's page."""
    from bench.report import table as targets_table
    from bench.stream import WRITING_S

    run = load(MAKE_BENCH)
    latency = run.result["6_stream.json"]["latency"]
    return (
        f"{targets_table(recorded_rows(run, '6'))}\n\n{provenance(run)} "
        f"{latency['runs_at_once']} sessions of {latency['turns_each']} turns streaming at once, "
        f"the fake model waiting {WRITING_S * 1000:g} ms before each chunk of a reply "
        "(`bench/stream.py`)."
    )


@table("session-history")
def session_history() -> str:
    """Target 3's rows (a 100-turn session's history per turn, ours against the naive loop),
    for the sessions how-to."""
    from bench.report import session_rows
    from bench.report import table as targets_table

    run = load(MAKE_BENCH)
    result = run.result["3_session_history.json"]
    return f"{targets_table(session_rows(result))}\n\n" + (
        f"{provenance(run)} Each turn adds {result['ours']['new_text_chars']:,} characters of "
        "new text: a message, a tool output and an answer (`bench/session_history.py`)."
    )


@table("bench-large-document")
def bench_large_document() -> str:
    """Target 10's rows (a 5 MB document with and without a payload store), for the fleet page."""
    from bench.large_document import rows as document_rows
    from bench.report import table as targets_table

    run = load(MAKE_BENCH)
    result = run.result["10_large_document.json"]
    runs = len(result["read_file"]["runs"])
    return (
        f'{targets_table(document_rows(result))}\n\n{provenance(run)} "ours" is a run with a '
        f'payload store, "naive" the same without one; medians of {runs} runs each; the store '
        f"held {result['stored_files']} files, "
        f"{result['stored_bytes'] / 1e6:.1f} MB, for the runs with a store."
    )


@table("bench-code-mode")
def bench_code_mode() -> str:
    """Target 7's three strategies for a task of 10 tool calls (`bench.code_mode`)."""
    from bench.code_mode import table as strategies_table

    run = load(MAKE_BENCH)
    result = run.result["7_code_mode.json"]
    repeats = {r["repeats"] for r in result.values()}
    return (
        f"{strategies_table(result)}\n\n{provenance(run)} Medians of {min(repeats)} runs "
        "each, alternating, after one warm-up."
    )


def fleet_cell(side: dict[str, Any], one: dict[str, Any] | None = None) -> list[str]:
    """One fleet configuration's column: resent model calls, history per turn, completed."""
    resent = f"{side['resends']} of {side['model_calls']} ({percent(side['resend_share'])})"
    history = f"{side['history_bytes_per_turn']:,}"
    if one is not None:
        history += f" ({side['history_bytes_per_turn'] / one['history_bytes_per_turn']:.2f}x)"
    return [resent, history, f"{side['completed']} of {side['runs']}"]


@table("bench-fleet")
def bench_fleet() -> str:
    """Target 8: one worker, three, three with affinity off (`bench.fleet`), and the kill."""
    run = load("fleet")
    r = run.result
    one = r["one_worker"]
    columns = [fleet_cell(one), fleet_cell(r["fleet"], one)]
    header = [f"{r['runs']} {r['turns']}-turn runs", "1 worker", f"{r['workers']} workers"]
    if "fleet_no_affinity" in r:
        columns.append(fleet_cell(r["fleet_no_affinity"], one))
        header.append(f"{r['workers']} workers, affinity off")
    names = ["model calls resent", "history bytes per turn", "runs completed"]
    goals = ["≤ 5%", "≤ 1.05x", "all"]
    rows = [[n, *(c[i] for c in columns), goals[i]] for i, n in enumerate(names)]
    kill = r["kill"]
    killed = [
        [
            f"{kill['runs']} approved `write_file` runs, a worker SIGKILLed after "
            f"{kill['killed_after_approvals']} approvals",
            f"{kill['completed']} of {kill['runs']}",
            f"{len(kill['lost_runs'])} / {kill['duplicated']}",
            f"{kill['files']} ({kill['wrong_content']} wrong, "
            f"{kill['unexpected_files']} unexpected)",
            f"{kill['scheduled_after_kill']} calls, at most "
            f"{kill['longest_wait_scheduled_after_kill_s']} s (fallback {kill['fallback_s']} s)",
        ]
    ]
    return "\n\n".join(
        [
            markdown_table([*header, "goal"], rows),
            markdown_table(
                [
                    "the kill",
                    "completed",
                    "lost / duplicated",
                    "files written",
                    "calls on the dead worker's queue: waited",
                ],
                killed,
            ),
            f"{provenance(run)} Result: {'PASS' if r['passed'] else 'FAIL'}.",
        ]
    )


@table("bench-issue-38")
def bench_issue_38() -> str:
    """Issue 38's four targets, each with no affinity setting (`auto`)."""
    defaults, fleet, levers = load("server-defaults"), load("fleet"), load("levers-affinity")
    speed = {row["target"].split(":")[1].split("(")[0].strip(): row for row in
             defaults.result["rows"]}  # fmt: skip
    wall, cpu = speed["wall"], speed["worker CPU"]
    f = fleet.result
    by_name = {row["lever"]: row for row in levers.result}

    def lever_cell(name: str) -> str:
        row = by_name[name]
        return (
            f"`{name.split()[1]}` {row[name]['wall_ms_per_turn']:.1f} against `auto` "
            f"{row['baseline']['wall_ms_per_turn']:.1f} ms a turn"
        )

    auto_ok = all(
        by_name[n]["baseline"]["wall_ms_per_turn"] <= by_name[n][n]["wall_ms_per_turn"] * 1.05
        for n in ("affinity off",)
        if n in by_name
    )
    kill = f["kill"]
    rows = [
        [
            "(a) a dev server at its defaults, one worker",
            f"ours {wall['ours']} ms wall, {cpu['ours']} ms CPU a turn; naive {wall['naive']}, "
            f"{cpu['naive']}: **{wall['ratio']} / {cpu['ratio']}**",
            "≥ 2x on both",
            "PASS" if wall["passed"] and cpu["passed"] else "FAIL",
        ],
        [
            f"(b) {f['workers']} workers, eager dispatch off",
            f"**{f['fleet']['resends']} of {f['fleet']['model_calls']}** model calls resent; "
            f"history **{f['history_ratio']:.2f}x** one worker's",
            "≤ 5%, ≤ 1.05x",
            "PASS" if f["fleet"]["resend_share"] <= 0.05 and f["history_ratio"] <= 1.05 else "FAIL",
        ],
        [
            "(c) the embedded server's defaults: `auto` no slower than `off`",
            "; ".join(lever_cell(n) for n in by_name),
            "`auto` ≤ `off` (within 5%)",
            "PASS" if auto_ok else "FAIL",
        ],
        [
            f"(d) one of the {f['workers']} workers SIGKILLed during {kill['runs']} "
            "approved writes",
            f"{kill['completed']} of {kill['runs']} completed: **{len(kill['lost_runs'])} lost, "
            f"{kill['duplicated']} duplicated**",
            "0 / 0",
            "PASS" if not kill["lost_runs"] and not kill["duplicated"] else "FAIL",
        ],
    ]
    return "\n\n".join(
        [
            markdown_table(["target (issue 38)", "measured", "goal", "result"], rows),
            "(a) " + provenance(defaults),
            "(b), (d) " + provenance(fleet),
            "(c) " + provenance(levers),
        ]
    )


CACHE_COLUMNS = [
    "case",
    "window (`max_context_tokens`)",
    "calls",
    "prompt tokens after the first call",
    "cached",
]
"""The first columns of the prompt-cache tables (`cache_row`'s first five cells)."""


def cache_row(case: str, window: str, part: dict[str, Any]) -> list[str]:
    cuts = part.get("calls_after_a_cut", [])
    return [
        case,
        window,
        str(part.get("calls", part.get("turns"))) + ("" if "calls" in part else " turns"),
        f"{part['prompt_tokens_after_first']:,}",
        f"{part['cached_tokens_after_first']:,}",
        f"**{percent(part['cache_share_after_first'])}**",
        ", ".join(f"{c['full_prompt_rereads']:.3f}" for c in cuts) or "–",
    ]


@table("bench-prompt-cache")
def bench_prompt_cache() -> str:
    """Issue 36 part 1: the prompt cache's share with the fake server acting as llama-server."""
    whole, cut = load("prompt-cache"), load("prompt-cache-cut")
    run, cut_run = whole.result["tool_run"], cut.result["tool_run"]
    rows = [
        cache_row(f"{run['steps']}-step tool run", f"{run['max_context_tokens']:,}", run),
        cache_row(
            f"{cut_run['steps']}-step tool run", f"{cut_run['max_context_tokens']:,}", cut_run
        ),
    ]
    if "session" in whole.result:
        session = whole.result["session"]
        rows.append(cache_row(f"{session['turns']}-turn session", "the default", session))
    header = [*CACHE_COLUMNS, "share", "calls after a cut: read anew / whole prompt"]
    return markdown_table(header, rows) + "\n\n" + provenance(whole, cut)


@table("bench-prompt-cache-real")
def bench_prompt_cache_real() -> str:
    """Issue 36 part 1 on the real llama-server: the cache's share after the first call
    (target at least 90%) and the worst re-read (target at most one whole prompt)."""
    run = load("prompt-cache-real")
    parts = {"tool_run": "-step tool run", "session": "-turn session"}
    rows = []
    for key, label in parts.items():
        part = run.result[key]
        size = part["steps"] if key == "tool_run" else part["turns"]
        window = f"{part['max_context_tokens']:,}" if key == "tool_run" else "the default"
        worst = part["worst_reread"]
        met = part["cache_share_after_first"] >= 0.9 and worst["full_prompt_rereads"] <= 1
        rows.append(
            [
                *cache_row(f"{size}{label}", window, part)[:6],
                f"call {worst['call']}: {worst['full_prompt_rereads']:.3f}",
                "PASS" if met else "FAIL",
            ]
        )
    header = [
        *CACHE_COLUMNS,
        "share (goal ≥ 90%)",
        "worst re-read: whole prompts (goal ≤ 1)",
        "result",
    ]
    return f"{markdown_table(header, rows)}\n\n{provenance(run)}"


@table("bench-context-fit")
def bench_context_fit() -> str:
    """Issue 36 part 4: `fit_context`'s cost at turn 300 against turn 10 (`bench.context_fit`)."""
    run = load("context-fit")
    r = run.result

    def micro(m: dict[str, Any]) -> str:
        return f"{m['turn_10_us']} → {m['turn_300_us']} µs ({m['ratio']:.1f}x)"

    rows = [
        [f"context decisions alone, {name}", micro(m["tally"]), micro(m["no_tally"])]
        for name, m in r["decisions"].items()
    ]
    tally, no_tally = r["run"]["tally"], r["run"]["no_tally"]

    def ratios(side: dict[str, Any]) -> str:
        each = ", ".join(f"{x['ratio']:.2f}" for x in side["runs"])
        return f"ratios {each}: median **{side['median_ratio']:.2f}**"

    rows.append(
        [
            f"a {r['turns']}-turn `AgentWorkflow`, worker CPU per turn "
            f"({len(tally['runs'])} runs each)",
            ratios(tally) + (" (pass)" if tally["median_ratio"] <= 1.2 else " (FAIL)"),
            ratios(no_tally),
        ]
    )
    header = [
        "measurement",
        "with the run's `TokenTally` (now)",
        "every message estimated (before)",
    ]
    return markdown_table(header, rows) + "\n\n" + provenance(run)


@table("bench-telemetry")
def bench_telemetry() -> str:
    """Issue 37 part 3: what telemetry costs per turn, on against off (`bench.telemetry`)."""
    run = load("telemetry")
    off, on, extra = run.result["off"], run.result["on"], run.result["overhead"]
    rows = [
        ["wall time", f"{off['wall_ms']} ms", f"{on['wall_ms']} ms",
         f"+{extra['wall_ms']} ms ({extra['wall_pct']}%)"],
        ["worker CPU", f"{off['cpu_ms']} ms", f"{on['cpu_ms']} ms", f"+{extra['cpu_ms']} ms"],
    ]  # fmt: skip
    header = [
        f"per turn (median of {run.result['turns']} turns x {run.result['rounds']} runs)",
        "telemetry off",
        "telemetry on (OTLP/HTTP)",
        "overhead",
    ]
    return f"{markdown_table(header, rows)}\n\n{provenance(run)}"


@table("soak")
def soak() -> str:
    """RELIABILITY.md: the soak runs (`bench.soak`), every figure from their reports."""
    runs = [load(name) for name in ("soak", "soak-200") if (MEASURED / f"{name}.json").exists()]
    rows = []
    for run in runs:
        r = run.result
        faults = sum(r["faults_injected"].values())
        rows.append(
            [
                f"`{run.command.removeprefix('.venv/bin/python -m ')}`",
                f"{faults} faults ({len(r['faults_injected'])} kinds), {r['kills']} SIGKILLs + "
                f"{r['graceful_stops']} SIGTERMs ({r['workers_started']} worker processes), "
                f"{r['approvals_needed']} approvals",
                f"{r['completed']} completed, {r['failed']} failed, {r['hung']} hung in "
                f"{r['seconds']:.0f} s; slowest run {r['slowest_run_seconds']} s",
                f"{r['tool_calls_recorded']} calls, {r['effects']} effects, {r['ledger_files']} "
                f"ledger files; {r['restarted_executions']} started again, "
                f"{r['skipped_as_already_done']} of them skipped as done, "
                f"{r['finished_more_than_once']} finished twice; **{len(r['duplicates'])}** "
                f"duplicated, **{len(r['lost_effects'])}** lost",
                f"{r['model_requests_repeated_after_kills']} model requests sent again after a "
                f"kill; requests per model call: "
                + ", ".join(f"{n} × {k}" for k, n in r["requests_per_model_call"].items()),
            ]
        )
    header = ["command", "injected", "outcome", "tool effects", "model requests"]
    return markdown_table(header, rows) + "\n\n" + provenance(*runs)


def server_sum(counts: dict[str, float], prefix: str) -> float:
    """The sum of the server counters whose `name/operation` starts with `prefix`."""
    return round(sum(v for k, v in counts.items() if k.startswith(prefix)), 2)


def approval_rows(side: dict[str, Any]) -> list[str]:
    """One system's column of the approval-cost table (`bench.approval_cost`)."""
    a, run, server = side["approval"], side["whole_run"], side["server_per_approval"]
    per_run, cpu = side.get("server_per_run"), side["cpu_ms_per_approval"]
    frontend = [
        f"{v:g} {k.split('/')[1]}"
        for k, v in server.items()
        if k.startswith("service_requests/")
        and k.split("/")[1] in ("SignalWorkflowExecution", "UpdateWorkflowExecution",
                                "QueryWorkflow", "DescribeWorkflowExecution")
    ]  # fmt: skip
    return [
        f"{a['events']}" + ("" if side["approval_same_in_every_run"] else " (runs differ)"),
        f"{a['workflow_tasks']} / {a['activity_tasks']} / {a['local_activities_or_markers']}",
        f"{a['search_attribute_upserts']} / {a['memo_changes']}",
        f"{a['bytes']:,}",
        ", ".join(frontend) or "–",
        f"{server_sum(server, 'task_requests/Transfer'):g} / "
        f"{server_sum(server, 'task_requests/TimerActiveTaskWorkflowTask'):g} + "
        f"{server_sum(server, 'task_requests/TimerActiveTaskActivity'):g} / "
        f"{server_sum(server, 'task_requests/Visibility'):g}",
        f"{server_sum(server, 'persistence_requests/UpdateWorkflowExecution'):g} / "
        f"{server_sum(server, 'persistence_requests/ReadHistoryBranch'):g} / "
        f"{server_sum(server, 'visibility_persistence_requests/'):g}",
        f"{run['events']} events, {run['bytes']:,} bytes; {run['workflow_tasks']} / "
        f"{run['activity_tasks']} / {run['local_activities_or_markers']}; "
        f"{run['search_attribute_upserts']} / {run['memo_changes']}",
        "not recorded"
        if per_run is None
        else f"{server_sum(per_run, 'persistence_requests/UpdateWorkflowExecution'):g} / "
        f"{server_sum(per_run, 'visibility_persistence_requests/'):g}",
        f"{cpu['worker']} / {cpu['server']}",
    ]


@table("bench-approval-cost")
def bench_approval_cost() -> str:
    """Issue 36 part 3: what one approval costs in counts, ours against OpenAI Agents'."""
    run = load("approval-cost")
    systems = run.result["systems"]
    labels = [
        "history events from the approval to the end",
        "workflow tasks / activity tasks / markers (local activities, patches)",
        "search-attribute upserts / memo changes (visibility writes)",
        "history bytes from the approval to the end",
        "frontend requests the approval needs",
        "server tasks: transfer / timer (workflow-task + activity timeouts) / visibility",
        "server persistence: execution updates / history reads / visibility writes",
        "the whole run: history; workflow / activity tasks / markers; upserts / memo changes",
        "the whole run, server: execution updates / visibility writes",
        "CPU ms per approval, worker / server (load-dependent)",
    ]
    columns = [approval_rows(side) for side in systems.values()]
    rows = [[label, *(column[i] for column in columns)] for i, label in enumerate(labels)]
    header = [f"per approval ({run.result['runs']} runs each)", *systems]
    return markdown_table(header, rows) + "\n\n" + provenance(run)


# -- a real model (issue 32: `bench.real_model`, llama-server with `make real-model`'s model) ---


def real_model_line(r: dict[str, Any]) -> str:
    """Which model, server build and settings the real-model figures come from."""
    return (
        f"Model: {r['model']} (sha256 `{r['model_sha256'][:8]}…{r['model_sha256'][-5:]}`); "
        f"server: {r['server']}, `{r['server_args']}`, template `{r['template']}`; "
        f"each run may take {r['run_timeout_seconds']} s, each model call "
        f"{r['model_timeout_seconds']} s."
    )


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def eval_cell(run: dict[str, Any] | None) -> str:
    """One eval run: met or not, tool steps, model calls, tokens in / out, wall seconds."""
    if run is None:
        return "–"
    m = run["model"]
    verdict = "**pass**" if run["passed"] else "fail"
    return (
        f"{verdict} · {plural(run['steps'], 'step')} · {plural(m['requests'], 'call')} · "
        f"{m['prompt_tokens']:,} / {m['completion_tokens']:,} tok · {run['wall_seconds']:.0f} s"
    )


def eval_summary_row(mode: str, part: dict[str, Any]) -> list[str]:
    """A mode's totals: completion, averages per run, wall per case, recovery."""
    runs, s = part["runs"], part["summary"]
    n = len(runs)

    def mean(key: str) -> float:
        return sum(r["model"][key] for r in runs) / n

    walls = sorted(r["wall_seconds"] for r in runs)
    recovery = (
        f"{s['recovered_runs']} of {s['failure_runs']}" if s["failure_runs"] else "nothing failed"
    )
    return [
        mode,
        f"**{s['passed']} of {s['runs']}** ({percent(s['completion_rate'] or 0)})",
        f"{sum(r['steps'] for r in runs) / n:.1f}",
        f"{mean('requests'):.1f}",
        f"{mean('prompt_tokens'):,.0f} / {mean('completion_tokens'):,.0f}",
        f"{sum(walls) / n:.0f} s ({walls[0]:.0f}–{walls[-1]:.0f})",
        recovery,
    ]


def eval_modes_table(run: MeasuredRun, modes: dict[str, dict[str, Any]], kind: str) -> str:
    """An eval measured in several `modes` (`kind`: what differs between them): a row of
    totals per mode, a row per case with each mode's run, and the model and run lines."""
    totals = [eval_summary_row(name, part) for name, part in modes.items()]
    by_case: dict[str, dict[str, dict[str, Any]]] = {}
    for name, part in modes.items():
        for one in part["runs"]:
            by_case.setdefault(one["scenario"], {})[name] = one
    cases = [[f"`{case}`", *(eval_cell(runs.get(m)) for m in modes)] for case, runs in
             by_case.items()]  # fmt: skip
    header = [
        kind,
        "completed as expected",
        "avg tool steps",
        "avg model calls",
        "avg tokens in / out",
        "wall per case (min–max)",
        "recovered (runs where a tool or call failed)",
    ]
    return "\n\n".join(
        [
            markdown_table(header, totals),
            markdown_table(["case", *modes], cases),
            f"{real_model_line(run.result)} {provenance(run)}",
        ]
    )


@table("eval-real-model")
def eval_real_model() -> str:
    """EVALS.md: the seed suite against the real model, ReAct and plan-and-execute."""
    run = load("real-model-eval")
    r = run.result["modes"]
    modes = {"ReAct": r["react"], "plan-and-execute": r["plan_and_execute"]}
    return eval_modes_table(run, modes, "mode")


@table("sizing-measured")
def sizing_measured() -> str:
    """docs/sizing.md: the recorded figures its arithmetic starts from (waiting runs of ours on
    one worker: RSS, CPU per approval; `make bench`, targets 4 and 9)."""
    run = load(MAKE_BENCH)
    four = run.result["4_waiting.json"]["ours"]
    nine = run.result["9_scale.json"]
    rows = [
        ["worker RSS, idle / with the runs waiting (MB)",
         f"{four['rss_idle_mb']} / {four['rss_waiting_mb']}", f"{four['runs']} runs, all cached"],
        ["RSS per cached waiting run (KB)", f"{four['rss_per_waiting_run_kb']}",
         "the worker's growth over the runs"],
        ["CPU ms per approval at 25/s, worker / server (target 4)",
         f"{four['worker_cpu_ms_each']} / {four['server_cpu_ms_each']}",
         f"{four['runs']} waiting, approved by the `approve` signal"],
    ]  # fmt: skip
    for phase in ("open_loop", "closed_loop"):
        p = nine[phase]
        how = "at 25/s" if phase == "open_loop" else f"with {p['in_flight']} in flight"
        rows.append(
            [
                f"CPU ms per approval {how}, worker / server / client (target 9)",
                f"{p['worker_cpu_ms_each']} / {p['server_cpu_ms_each']} / "
                f"{p['client_cpu_ms_each']}",
                f"{nine['waiting']} waiting ({nine['cached']} cached); "
                f"{p['approvals_per_second']}/s achieved",
            ]
        )
    header = ["measured (one worker of ours, the dev server on the same 2 cores)", "figure", "of"]
    return markdown_table(header, rows) + "\n\n" + provenance(run)


def cost_row(name: str, t: dict[str, Any]) -> list[str]:
    share = "–" if t["overhead_share"] is None else f"**{percent(t['overhead_share'])}**"
    return [
        name,
        f"{t['passed']} of {t['runs']}",
        str(t["model_calls"]),
        f"{t['model_seconds_per_call']:.1f} s",
        f"{t['overhead_seconds_per_call'] * 1000:.0f} ms",
        share,
        f"{t['tokens_per_task']:,.0f} ({t['prompt_tokens']:,} / {t['completion_tokens']:,})",
    ]


@table("bench-real-model")
def bench_real_model() -> str:
    """BENCHMARKS.md: overhead per turn against the model's time, tokens per task vs naive."""
    run = load("real-model-cost")
    r = run.result
    rows = [cost_row("ours (`AgentWorkflow`)", r["ours"]["totals"])]
    rows.append(cost_row("naive loop (`bench.naive_workflow`)", r["naive"]["totals"]))
    header = [
        f"{len(r['cases'])} cases, one at a time",
        "answered right",
        "model calls",
        "model's time per call",
        "the rest per call (overhead)",
        "overhead / model's time (goal < 2%)",
        "tokens per task (in / out, all cases)",
    ]
    per_case = [
        [
            f"`{o['scenario']}`",
            f"{o['model']['prompt_tokens'] + o['model']['completion_tokens']:,} "
            f"({o['model']['requests']} calls)",
            f"{n['model']['prompt_tokens'] + n['model']['completion_tokens']:,} "
            f"({n['model']['requests']} calls)",
        ]
        for o, n in zip(r["ours"]["runs"], r["naive"]["runs"], strict=True)
    ]
    return "\n\n".join(
        [
            markdown_table(header, rows),
            markdown_table(["case: tokens", "ours", "naive"], per_case),
            f"{real_model_line(r)} {provenance(run)}",
        ]
    )


# -- issue 36's like-for-like targets against the real peers, and the levers (issue 34) --------


@table("bench-levers")
def bench_levers() -> str:
    """Each lever against today's defaults in the same run (`bench.levers`), as it printed."""
    from bench.levers import table as levers_table

    run = load("levers")
    repeats = {row["repeats"] for row in run.result}
    what = "; ".join(f"*{row['lever']}*: {row['what']}" for row in run.result)
    return (
        f"{levers_table(run.result)}\n\nThe levers: {what}.\n\n{provenance(run)} Target 1's "
        f"workload (20-turn runs), medians of {min(repeats)} alternating runs each after a "
        "warm-up; a ratio under 1 is the lever faster or cheaper than the baseline measured "
        "beside it; the spread is the lever's, then the baseline's."
    )


def ratio_target(
    label: str, ours: float | None, against: tuple[str, float] | None, goal: float
) -> list[str]:
    """A per-turn target, lower is better: ours against a peer's figure, `goal` times lower,
    and, where it is missed, by how much (the milliseconds ours would have to lose)."""
    from bench.report import verdict

    if not ours or against is None:
        return [label, "–" if not ours else f"{ours:.1f}", "–", "–", f"≥ {goal}x lower", "–", ""]
    peer, theirs = against
    ratio, needed = theirs / ours, theirs / goal
    missed = "" if ratio >= goal else (
        f"{ratio:.2f}x of {goal}x: ours {ours - needed:.1f} ms too slow (≤ {needed:.1f} needed)"
    )  # fmt: skip
    return [label, f"{ours:.1f}", f"{theirs:.1f} ({peer})", f"{ratio:.2f}x", f"≥ {goal}x lower",
            verdict(ratio >= goal), missed]  # fmt: skip


def approval_target(server: str, wait: dict[str, Any]) -> list[str]:
    """Workload 4: server CPU per approval, ours at most OpenAI Agents', worker CPU not worse;
    where missed, by how much."""
    from bench.report import verdict

    label = f"4 CPU ms an approval, server / worker, ours vs openai-agents ({server})"
    goal = "server ≤ theirs, worker not worse"
    ours, oa = wait.get("ours") or {}, wait.get("openai-agents") or {}
    if "server_cpu_ms_each" not in ours or "server_cpu_ms_each" not in oa:
        return [label, "–", "–", "–", goal, "–", "not measured"]
    shown = [f"{side['server_cpu_ms_each']:.1f} / {side['worker_cpu_ms_each']:.1f}"
             for side in (ours, oa)]  # fmt: skip
    over = [
        f"{what} +{ours[key] - oa[key]:.1f} ms ({ours[key] / oa[key]:.2f}x theirs)"
        for key, what in (("server_cpu_ms_each", "server"), ("worker_cpu_ms_each", "worker"))
        if ours[key] > oa[key]
    ]
    ratio = f"{oa['server_cpu_ms_each'] / ours['server_cpu_ms_each']:.2f}x"
    return [label, shown[0], shown[1], ratio, goal, verdict(not over), "; ".join(over)]


def like_for_like_targets(results: dict[str, Any]) -> list[list[str]]:
    """Issue 36's targets against the peers, from one `make bench-peers` run: ours' default
    against every peer's default per turn (≥ 1.5x), ours with local model calls against OpenAI
    Agents' (≥ 1.3x), and the server's CPU per approval against OpenAI Agents' (workload 4)."""
    from bench.peers.report import DEFAULT_GOAL, LOCAL_GOAL, best_peer, like_for_like_sides

    rows = []
    for server, entry in results["servers"].items():
        per_turn = entry.get("per_turn") or {}
        for key, what in (("wall_ms_per_turn", "wall"), ("cpu_ms_per_turn", "worker CPU")):
            defaults, local = like_for_like_sides(per_turn, key)
            rows.append(ratio_target(
                f"1 per turn, {what} ms: default vs the best peer's default ({server})",
                defaults.get("ours"), best_peer(defaults, lower=True), DEFAULT_GOAL,
            ))  # fmt: skip
            rows.append(ratio_target(
                f"1 per turn, {what} ms: `+local model` vs OpenAI Agents' ({server})",
                local["ours"], best_peer(local, lower=True), LOCAL_GOAL,
            ))  # fmt: skip
        if entry.get("waiting"):
            rows.append(approval_target(server, entry["waiting"]))
    return rows


@table("bench-peers")
def bench_peers() -> str:
    """`make bench-peers` (`bench.peers.run`): every figure per system and server, issue 36's
    like-for-like targets, and the run's other targets for ours (each against the best peer,
    as the run printed them but for its per-turn like-for-like rows, which issue 36's table
    states with what a miss is short by)."""
    from bench.peers.report import errors, figures, like_for_like, targets

    run = load("peers")
    r = run.result
    systems = list(r["systems"])
    issue_36 = ["target (issue 36)", "ours", "against", "ratio", "goal", "result", "missed by"]
    printed_36 = [row for server, entry in r["servers"].items()
                  for row in like_for_like(entry.get("per_turn") or {}, server)]  # fmt: skip
    others = [row for row in targets(r) if row not in printed_36]
    parts = [
        markdown_table(["workload", *systems], figures(r)),
        markdown_table(issue_36, like_for_like_targets(r)),
        markdown_table(["target (ours)", "ours", "best peer", "ratio", "goal", "result"], others),
    ]
    found = errors(r)
    if found:
        parts.append("Errors:\n\n" + "\n".join(f"- {line}" for line in found))
    size = r["size"]
    parts.append(
        f"{provenance(run)} A {r['mode']} run of {r['seconds']} s: per turn medians of "
        f"{size['repeats']} runs each, {size['runs']}-run bursts, {size['calls']} model calls in "
        f"workload 3, {size['waiting']:,} waiting runs; {r['machine']}."
    )
    return "\n\n".join(parts)


# -- the site's pages: figures and a transcript recorded from runs too slow for `make test` ----


def distributions(names: Sequence[str]) -> str:
    """A count of distributions, with their names when there are only a few."""
    shown = f"{len(names)}"
    return shown if len(names) > 6 or not names else f"{shown}: {', '.join(names)}"


@table("install-sizes")
def install_sizes() -> str:
    """docs/install.md: what the core install, each extra, `[all]` and `[dev]` weigh, each in
    a fresh venv (`scripts.docs.install_sizes`)."""
    from scripts.docs.install_sizes import Install

    run = load("install-sizes")
    core, *others = [Install.model_validate(one) for one in run.result["installs"]]
    rows = [["the core: `.`", f"{core.megabytes} MB", "–", distributions(core.packages)]]
    for one in others:
        added = sorted(set(one.packages) - set(core.packages))
        rows.append(
            [f"`{one.spec}`", f"{one.megabytes} MB", f"+{one.megabytes - core.megabytes} MB",
             distributions(added)]
        )  # fmt: skip
    header = ["`pip install`", "fresh venv", "over the core", "distributions (added to the core)"]
    return (
        f"{markdown_table(header, rows)}\n\n{provenance(run)} Each a fresh venv (`python -m venv`, "
        "then `pip install -c constraints.txt SPEC`, the project's pins as `make run` installs "
        "them), measured with `du -sm`: Python's own venv files and pip included."
    )


@table("stream-timeline")
def stream_timeline() -> str:
    """docs/events.md, "A session's timeline": a session's history events by who follows its
    stream (`tests/test_stream_timeline.py`, run as a module to record)."""
    run = load("stream-timeline")
    r = run.result
    rows = [
        [who, f"{f['events']} ({f['events'] / r['turns']:g})", f["poll_updates"]]
        for who, f in r["followed_by"].items()
    ]
    header = ["followed by", "history events (per turn)", "of them, poll updates"]
    chars = " and ".join(map(str, r["reply_chars"]))
    return (
        f"{markdown_table(header, rows)}\n\n{provenance(run)} A session of {r['turns']} short "
        f"streamed turns, the fake model writing each reply ({chars} characters) in pieces of "
        f"{r['piece_chars']} characters, "
        f"{r['piece_seconds'] * 1000:g} ms before each; its history's events once every turn is "
        "answered."
    )


@table("rolling-deploy")
def rolling_deploy() -> str:
    """docs/fleet.md: `scripts/rolling_deploy.py`'s transcript, as a recorded run printed it."""
    run = load("rolling-deploy")
    r = run.result
    transcript = "\n".join(line.rstrip() for line in r["transcript"].splitlines())
    return (
        f"{provenance(run)} The drain took {r['drain_seconds']:.0f} s of it.\n\n"
        f"```text\n{transcript}\n```"
    )


@table("bench-peers-cache")
def bench_peers_cache() -> str:
    """Issue 36 part 1 on the peers: workload 6 of `make bench-peers` (`bench.peers.cache`),
    each system's prompt-cache share over the same two cases on the same model server."""
    from bench.peers.cache import HEADER
    from bench.peers.cache import rows as cache_rows

    run = load("peers-cache")
    measured = run.result["servers"]["tuned"]["cache"]
    server = measured["model_server"]
    where = (
        "the fake server acting as llama-server's cache (JSON characters / 4 as tokens): a "
        "test of the plumbing, not a measurement"
        if server == "fake"
        else f"llama-server at `{server}`"
    )
    return (
        f"Model server: {where}.\n\n{markdown_table(HEADER, cache_rows(measured))}\n\n"
        f"{provenance(run)}"
    )


@table("eval-tool-calling")
def eval_tool_calling() -> str:
    """EVALS.md: native against prompted tool calling on the same cases and model
    (`bench.real_model tools`)."""
    run = load("real-model-tools")
    modes = {name: run.result["modes"][name] for name in ("native", "prompted")}
    return eval_modes_table(run, modes, "tool calling")


@table("eval-from-runs-real")
def eval_from_runs_real() -> str:
    """docs/how-to/evals-from-runs.md: `agent eval --from-runs` against the real model, as it
    printed (`bench.real_model from-runs`)."""
    run = load("real-model-from-runs")
    r = run.result
    report = r["report"]
    source, prompt = report["source"], report["system_prompt"]
    argv = ["agent", "eval", "--from-runs", source, "--system-prompt", prompt]
    command = shlex.join([*argv, "--concurrency", "1"])
    return (  # (the lines first: a block whose first line is a fence is read as a code block)
        f"{real_model_line(r)} {provenance(run)}\n\n"
        f"```text\n$ {command}\n{r['printed'].rstrip()}\n```"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.docs.benchmarks", description=__doc__)
    sub = parser.add_subparsers(dest="action", required=True)
    rec = sub.add_parser("record", help="run a benchmark and keep its result with how it ran")
    rec.add_argument("name")
    rec.add_argument(
        "--result", type=Path, action="append", required=True, help="a JSON file the run writes"
    )
    rec.add_argument("command", nargs="+", help="after --: the command, from the project folder")
    args = parser.parse_args(argv)
    command = args.command
    run = record(args.name, args.result, command)
    print(provenance(run))
    return run.exit_code


if __name__ == "__main__":
    sys.exit(main())
