"""`agent eval --from-runs QUERY|IDS [--save NAME] [--compare MODE] [--model M]
[--system-prompt TEXT|@FILE]`, and `agent eval NAME` for a suite saved from it.

Finished runs (a visibility query, or workflow ids separated by commas) are rebuilt as cases
(`recorded`), optionally saved as a suite (`--save`: the suite YAML `agent eval` reads, with
the recorded tool outputs and the baseline in it), rerun against the new definition (the
model of `--model`, else each recorded run's own; the system prompt of `--system-prompt`,
else the recorded one) with their recorded tool outputs as fixtures, so no tool runs, and
compared case by case with their recordings (`compare`). The table goes to stdout (`--json`:
the `FromRunsReport` instead), the report to `--out` (default `eval-results/<eval id>/`).

Exit code: 0 when every case answered as recorded with no new tool call, 1 when one changed,
failed or called a tool anew, 4 when the command is wrong or no run could be rebuilt.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from durable_agents.cli.commands import Context
from durable_agents.cli.errors import OK, RUN_FAILED, CliError
from durable_agents.cli.evaluation.compare import (
    FromRunsReport,
    SkippedRun,
    case_report,
    detail_lines,
    judge,
    same_answers,
    summary_of,
    table_lines,
)
from durable_agents.cli.evaluation.recorded import Skipped, rebuild, runs_query
from durable_agents.cli.evaluation.runner import Job, model_slug, new_eval_id
from durable_agents.cli.evaluation.scoring import RunRecord
from durable_agents.cli.evaluation.suite import Scenario, Suite, load_suite
from durable_agents.client import AgentClient

SUITES_DIR = Path("evals")
REPORT_FILE = "comparison.json"
DEFAULT_LIMIT = 50


def suite_path(name: str) -> Path:
    """Where `--save NAME` writes and `agent eval NAME` reads: NAME itself when it is a path
    (a `/` or a `.yaml` suffix), else `evals/NAME.yaml`."""
    if "/" in name or name.endswith((".yaml", ".yml")):
        return Path(name)
    return SUITES_DIR / f"{name}.yaml"


def existing_suite(name: str) -> str:
    """The suite file `agent eval NAME` means: NAME when it exists, else a saved suite's."""
    if Path(name).exists():
        return name
    saved = suite_path(name)
    return str(saved) if saved.exists() else name


def save_suite(suite: Suite, name: str) -> Path:
    """Write `suite` as YAML (checked by reading it back as `agent eval` will)."""
    import yaml

    path = suite_path(name)
    data = suite.model_dump(mode="json", exclude_defaults=True)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "# Saved by agent eval --from-runs: rerun with `agent eval "
            f"{name}`.\n" + yaml.safe_dump(data, sort_keys=False, allow_unicode=True),
            encoding="utf-8",
        )
    except OSError as error:
        raise CliError(f"--save: cannot write {path}: {error.strerror or error}") from None
    load_suite(path)
    return path


def system_prompt_option(text: str) -> str:
    """`--system-prompt TEXT`, or `@FILE` for a file's text."""
    if not text.startswith("@"):
        return text
    try:
        return Path(text[1:]).read_text(encoding="utf-8")
    except OSError as error:
        raise argparse.ArgumentTypeError(f"cannot read {text[1:]}: {error.strerror}") from None


async def rebuilt_suite(
    agents: AgentClient, source: str, limit: int, name: str
) -> tuple[Suite, list[SkippedRun]]:
    """The cases of the runs `source` names, and the runs that gave none."""
    scenarios: list[Scenario] = []
    skipped: list[SkippedRun] = []
    taken: set[str] = set()
    converter = agents.client.data_converter
    async for execution, history in agents.histories(runs_query(source), limit=limit):
        case = await rebuild(execution, history, converter, taken)
        if isinstance(case, Skipped):
            skipped.append(SkippedRun(workflow_id=case.workflow_id, reason=case.reason))
        else:
            scenarios.append(case)
    if not scenarios:
        why = "; ".join(f"{s.workflow_id}: {s.reason}" for s in skipped) or "it lists none"
        raise CliError(f"--from-runs: no finished agent run or session to rebuild ({why})")
    description = f"rebuilt by agent eval --from-runs from: {source}"
    scenarios.sort(key=lambda s: s.name)  # (a listing's order of runs started together varies)
    return Suite(name=name, description=description, scenarios=scenarios), skipped


def plan(
    suite: Suite,
    scenarios: list[Scenario],
    models: list[str],
    eval_id: str,
    overrides: dict[str, Any],
) -> list[Job]:
    """One rerun of each case with each model (none given: the recorded run's own)."""
    jobs = []
    for scenario in scenarios:
        assert scenario.recorded is not None
        chosen: list[str | None] = list(models) or [scenario.recorded.model]
        for model in chosen:
            jobs.append(
                Job(
                    scenario=scenario,
                    model=model,
                    repeat=1,
                    workflow_id=f"{eval_id}/{scenario.name}/{model_slug(model)}/1",
                    payload={**suite.payload(scenario, model), **overrides},
                    timeout_seconds=scenario.timeout_seconds or suite.timeout_seconds,
                )
            )
    return jobs


async def _alike(
    args: argparse.Namespace,
    agents: AgentClient,
    job: Job,
    record: RunRecord,
    eval_id: str,
    task_queue: str,
) -> tuple[bool | None, str | None]:
    """Whether a rerun answered as its recording, by `--compare` (the judge is asked only when
    the texts differ); None when it did not complete or the judge said neither."""
    scenario = job.scenario
    assert scenario.recorded is not None
    answers = record.answers or ([record.answer] if record.answer is not None else [])
    if record.ending != "completed":
        return None, None
    if args.compare != "judge":
        return same_answers(scenario.recorded.answers, answers, args.compare), None
    if same_answers(scenario.recorded.answers, answers, "exact"):
        return True, "the same text"
    return await judge(
        agents,
        scenario,
        record,
        workflow_id=f"{eval_id}/judge/{scenario.name}/{model_slug(job.model)}",
        task_queue=task_queue,
        model=args.judge_model,
    )


async def compare_suite(
    args: argparse.Namespace,
    ctx: Context,
    suite: Suite,
    scenarios: list[Scenario],
    *,
    source: str,
    skipped: list[SkippedRun] | None = None,
    saved: Path | None = None,
) -> int:
    """Rerun recorded cases and report each against its recording."""
    from durable_agents.cli.evaluation.command import (  # (imports this module)
        RESULTS_ROOT,
        announce,
        run_jobs,
    )

    agents = await ctx.agents()
    eval_id = new_eval_id()
    out = Path(args.out) if args.out else RESULTS_ROOT / eval_id
    overrides = {"system_prompt": args.system_prompt} if args.system_prompt else {}
    models = list(args.model or suite.models)
    jobs = plan(suite, scenarios, models, eval_id, overrides)
    task_queue = ctx.target.task_queue
    prompt = "system prompt replaced" if args.system_prompt else "recorded system prompt"
    intro = (
        f"eval {eval_id} · {len(scenarios)} recorded run{'s' if len(scenarios) != 1 else ''} "
        f"from {source} · models: {', '.join(models) or 'as recorded'} · {prompt} · "
        f"compare {args.compare} · task queue {task_queue} at {ctx.target.address}"
    )
    announce(ctx, intro)
    records = await run_jobs(ctx, agents, jobs, suite, eval_id, args.concurrency)
    cases = []
    for job, record in zip(jobs, records, strict=True):
        same, reason = await _alike(args, agents, job, record, eval_id, task_queue)
        cases.append(case_report(job.scenario, record, args.compare, same, reason, suite.prices))
    report = FromRunsReport(
        eval_id=eval_id,
        source=source,
        compare=args.compare,
        models=sorted({r.label for r in records}),
        system_prompt=args.system_prompt,
        saved=str(saved) if saved else None,
        summary=summary_of(cases),
        cases=cases,
        skipped=skipped or [],
    )
    data = report.model_dump(mode="json")
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / REPORT_FILE).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    except OSError as error:
        raise CliError(f"--out: cannot write {out}: {error.strerror or error}") from None
    if ctx.json:
        ctx.emit(data)
    else:
        lines = ["", *table_lines(report)]
        details = detail_lines(report)
        if details:
            lines += ["", *details]
        lines.append("")
        if saved:
            lines.append(f"saved:   {saved} (rerun: agent eval {args.save})")
        lines.append(f"results: {out / REPORT_FILE}")
        ctx.say(*lines)
    return OK if report.all_unchanged else RUN_FAILED


async def evaluate_runs(args: argparse.Namespace, ctx: Context) -> int:
    """`agent eval --from-runs`: rebuild, save if asked, rerun and compare."""
    if args.suite is not None:
        raise CliError("give a suite file or --from-runs, not both")
    if args.limit < 1:
        raise CliError("--limit must be at least 1")
    agents = await ctx.agents()
    name = suite_path(args.save).stem if args.save else "from-runs"
    suite, skipped = await rebuilt_suite(agents, args.from_runs, args.limit, name)
    saved = save_suite(suite, args.save) if args.save else None
    return await compare_suite(
        args, ctx, suite, suite.scenarios, source=args.from_runs, skipped=skipped, saved=saved
    )
