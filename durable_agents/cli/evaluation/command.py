"""`agent eval SUITE.yaml [--model M ...] [--concurrency N] [--out DIR]`, and
`agent eval --from-runs QUERY|IDS [--save NAME] [--compare exact|normalized|judge]`
(`from_runs`: recorded runs rebuilt as cases, rerun and compared with their recordings).

Runs every scenario of the suite with every model (`--model`, repeatable; else the suite's
`models`; else the worker's default model), `repeat` times, at most `--concurrency` runs at
once, as real `AgentWorkflow` runs on the configured server and task queue (the same
connection options as every `agent` command). A progress bar on a terminal (one line per
finished run elsewhere) goes to stderr; the table goes to stdout (`--json`: the results instead).
Writes `results.json` and `chart.png` to `--out` (default `eval-results/<eval id>/`).

Exit code: 0 when every run met its expectations, 1 when some did not, 4 when the suite or
the command is wrong (the error names the scenario and the field).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from durable_agents.cli.commands import Context
from durable_agents.cli.errors import OK, RUN_FAILED, CliError
from durable_agents.cli.evaluation import report
from durable_agents.cli.evaluation.from_runs import (
    DEFAULT_LIMIT,
    compare_suite,
    evaluate_runs,
    existing_suite,
    system_prompt_option,
)
from durable_agents.cli.evaluation.runner import Job, new_eval_id, plan_jobs, run_all, run_job
from durable_agents.cli.evaluation.scoring import RunRecord, relabel_default, summarize
from durable_agents.cli.evaluation.suite import Suite, SuiteError, load_suite
from durable_agents.client import AgentClient
from durable_agents.runtime.extras import require

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

DEFAULT_CONCURRENCY = 4
RESULTS_ROOT = Path("eval-results")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `agent eval`."""
    parser.add_argument(
        "suite",
        metavar="SUITE.yaml",
        nargs="?",
        help="the suite file (evals/*.yaml), or the NAME a suite was saved under (--save)",
    )
    parser.add_argument(
        "--model",
        action="append",
        metavar="M",
        help="a model to evaluate (repeat to compare several; default: the suite's models, "
        "else the worker's default model)",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=DEFAULT_CONCURRENCY,
        metavar="N",
        help=f"runs at once (default {DEFAULT_CONCURRENCY})",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="where results.json and chart.png go (default eval-results/<eval id>)",
    )
    parser.add_argument(
        "--repeat", type=int, metavar="N", help="runs per scenario and model (default: suite's)"
    )
    parser.add_argument(
        "--scenario", action="append", metavar="NAME", help="only this scenario (repeatable)"
    )
    parser.add_argument(
        "--tag", action="append", metavar="TAG", help="only scenarios with this tag (repeatable)"
    )
    parser.add_argument(
        "--system-prompt",
        type=system_prompt_option,
        metavar="TEXT|@FILE",
        help="the system prompt every run uses instead of the suite's (or the recorded one)",
    )
    recorded = parser.add_argument_group(
        "evals from recorded runs (docs/how-to/evals-from-runs.md)"
    )
    recorded.add_argument(
        "--from-runs",
        metavar="QUERY|IDS",
        help="rebuild finished runs as cases (a visibility query, or workflow ids separated by "
        "commas) and rerun them with their recorded tool outputs, compared with the recording",
    )
    recorded.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"at most N runs from the query (default {DEFAULT_LIMIT})",
    )
    recorded.add_argument(
        "--save", metavar="NAME", help="write the cases as the suite evals/NAME.yaml (or a path)"
    )
    recorded.add_argument(
        "--compare",
        choices=("exact", "normalized", "judge"),
        default="normalized",
        help="how answers are compared with the recording (default normalized)",
    )
    recorded.add_argument(
        "--judge-model",
        metavar="M",
        help="the model that judges with --compare judge (default: the worker's default)",
    )


class _Progress:
    """A rich progress bar on a terminal; one plain line per finished run otherwise (a pipe,
    a file, CI), so logs get no control characters."""

    def __init__(self, stream: TextIO, total: int) -> None:
        self.bar: Progress | None = None
        self.stream = stream
        self.task: TaskID | None = None
        if stream.isatty():
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self.bar = Progress(
                TextColumn("running"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[failed]} not met"),
                TimeElapsedColumn(),
                console=Console(file=stream, highlight=False),
                transient=True,
            )
            self.task = self.bar.add_task("runs", total=total, failed=0)
        self.failed = 0

    def __enter__(self) -> _Progress:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *_: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def done(self, record: RunRecord) -> None:
        self.failed += not record.passed
        line = report.run_line(record)
        if self.bar is not None and self.task is not None:
            self.bar.console.print(line, markup=False)
            self.bar.update(self.task, advance=1, failed=self.failed)
        else:
            self.stream.write(line + "\n")
            self.stream.flush()


def announce(ctx: Context, line: str) -> None:
    """An evaluation's first line: on stdout, or on stderr with `--json` (stdout is JSON)."""
    stream = ctx.err if ctx.json else ctx.out
    stream.write(line + "\n")
    stream.flush()


async def run_jobs(
    ctx: Context,
    agents: AgentClient,
    jobs: list[Job],
    suite: Suite,
    eval_id: str,
    concurrency: int,
) -> list[RunRecord]:
    """Every run of an evaluation on the target's task queue, with the progress on stderr; the
    records in the jobs' order, the worker's default model named after what answered."""
    task_queue = ctx.target.task_queue

    async def one(job: Job) -> RunRecord:
        return await run_job(agents, job, suite=suite, eval_id=eval_id, task_queue=task_queue)

    with _Progress(ctx.err, len(jobs)) as progress:
        return relabel_default(await run_all(jobs, one, concurrency, progress.done))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


async def evaluate(args: argparse.Namespace, ctx: Context) -> int:
    """`agent eval`: run the suite, print the table, write results.json and the chart."""
    require("evals", "agent eval")
    if args.concurrency < 1:
        raise CliError("--concurrency must be at least 1")
    if args.from_runs is not None:
        return await evaluate_runs(args, ctx)
    if args.suite is None:
        raise CliError("give a suite file (or the NAME of a saved one), or --from-runs")
    try:
        suite = load_suite(existing_suite(args.suite))
        scenarios = suite.select(args.scenario, args.tag)
    except SuiteError as error:
        raise CliError(str(error)) from None
    if scenarios and all(s.recorded is not None for s in scenarios):
        return await compare_suite(args, ctx, suite, scenarios, source=args.suite)
    if args.repeat is not None and args.repeat < 1:
        raise CliError("--repeat must be at least 1")
    models: list[str | None] = list(args.model or suite.models) or [None]
    eval_id = new_eval_id()
    out = Path(args.out) if args.out else RESULTS_ROOT / eval_id
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CliError(f"--out: cannot create {out}: {error.strerror or error}") from None
    agents = await ctx.agents()
    jobs = plan_jobs(suite, scenarios, models, eval_id, args.repeat)
    if args.system_prompt:
        jobs = [
            replace(j, payload={**j.payload, "system_prompt": args.system_prompt}) for j in jobs
        ]
    task_queue = ctx.target.task_queue
    names = ", ".join(m or "worker default" for m in models)
    intro = (
        f"eval {eval_id} · suite {suite.name!r} · {_count(len(scenarios), 'scenario')} × "
        f"{_count(len(models), 'model')} ({names}) = {_count(len(jobs), 'run')} · "
        f"task queue {task_queue} at {ctx.target.address}"
    )
    announce(ctx, intro)
    started_at = _now()
    records = await run_jobs(ctx, agents, jobs, suite, eval_id, args.concurrency)
    summary = summarize(records)
    data = report.results_json(
        eval_id=eval_id,
        suite={
            "name": suite.name,
            "file": str(args.suite),
            "scenarios": [s.name for s in scenarios],
        },
        target={
            "address": ctx.target.address,
            "namespace": ctx.target.namespace,
            "task_queue": task_queue,
        },
        started_at=started_at,
        finished_at=_now(),
        summary=summary,
        records=records,
    )
    results_path, chart_path = out / report.RESULTS_FILE, out / report.CHART_FILE
    report.write_results(results_path, data)
    report.write_chart(chart_path, summary, f"agent eval · {suite.name} · {eval_id}")
    if ctx.json:
        ctx.emit(data)
    else:
        lines = ["", *report.table_lines(summary), "", *report.headline_lines(summary)]
        problems = report.problem_lines(records)
        if problems:
            lines += ["", *problems]
        lines += ["", f"results: {results_path}", f"chart:   {chart_path}"]
        ctx.say(*lines)
    return OK if all(r.passed for r in records) else RUN_FAILED
