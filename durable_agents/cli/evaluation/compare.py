"""Reruns of recorded runs compared with their recordings (`agent eval --from-runs`, and a suite
saved from it): case by case, whether the answer changed (`--compare exact | normalized |
judge`), steps, model calls, tokens and cost then and now, and the new tool calls (calls the
recording has no output for: they were not run).

The judge is a model: one `AgentWorkflow` run per case, without tools, on the same worker and
through the same model layer as the reruns (`--judge-model`, default the worker's model), asked
with a small rubric whether the two answers say the same thing. Its first word, SAME or
DIFFERENT, is the verdict; the rest of its first line is the reason shown.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from durable_agents.cli.evaluation.scoring import NewToolCall, RunRecord, cost_of
from durable_agents.cli.evaluation.suite import RecordedBaseline, Scenario
from durable_agents.client import AgentClient
from durable_agents.contracts.budgets import ModelPrice
from durable_agents.errors import AgentError

CompareMode = Literal["exact", "normalized", "judge"]
Verdict = Literal["unchanged", "changed", "failed"]

JUDGE_SYSTEM_PROMPT = (
    "You compare two answers an assistant gave to the same request: the recorded answer and a "
    "new one. They are the SAME when they give the same facts, numbers, decisions and outcome, "
    "even if worded, ordered or formatted differently. They are DIFFERENT when a fact, a number, "
    "a decision or the outcome differs, or one leaves out something the other says. Reply with "
    "one line: SAME or DIFFERENT, a colon, and the reason in a few words."
)
VERDICT = re.compile(r"^\W*(SAME|DIFFERENT)\b\W*(.*)", re.IGNORECASE)


def normalized(text: str) -> str:
    """An answer's normalised form: Unicode NFKC, case folded, Markdown emphasis and code marks
    dropped, whitespace collapsed, trailing punctuation dropped."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = re.sub(r"[*_`]+", "", text)
    text = " ".join(text.split())
    return text.rstrip(".!;:, ")


def same_answers(recorded: Sequence[str], now: Sequence[str], mode: CompareMode) -> bool:
    """Whether two runs answered alike, turn by turn (`exact` or `normalized`)."""
    if len(recorded) != len(now):
        return False
    if mode == "exact":
        return list(recorded) == list(now)
    return [normalized(a) for a in recorded] == [normalized(b) for b in now]


class Change(BaseModel):
    """A number of the recorded run and of its rerun (None: not known)."""

    recorded: float | None
    now: float | None

    @property
    def delta(self) -> float | None:
        if self.recorded is None or self.now is None:
            return None
        return self.now - self.recorded


class CaseReport(BaseModel):
    """One recorded run rerun against the new definition."""

    case: str
    recorded_run: str = Field(description="The workflow id of the recorded run.")
    rerun: str = Field(description="The workflow id of the rerun.")
    model: str = Field(description="The model of the rerun, as the report names it.")
    verdict: Verdict = Field(
        description="unchanged / changed answer; failed: the rerun did not complete."
    )
    compare: CompareMode
    judge_reason: str | None = None
    recorded_answers: list[str]
    answers: list[str]
    steps: Change
    model_calls: Change
    tokens: Change
    cost_usd: Change
    new_tool_calls: list[NewToolCall] = Field(
        description="Calls the recording has no output for (not run)."
    )
    new_tools: list[str] = Field(description="Tools the recorded run never called.")
    people: list[str] = Field(description="What the scripted people did.")
    problem: str | None = Field(default=None, description="Why the rerun failed.")


class SkippedRun(BaseModel):
    workflow_id: str
    reason: str


class ComparisonSummary(BaseModel):
    cases: int
    unchanged: int
    changed: int
    failed: int
    with_new_tool_calls: int


class FromRunsReport(BaseModel):
    """What `agent eval --from-runs` (or a saved suite of recorded runs) reports."""

    eval_id: str
    source: str = Field(description="The query, the ids, or the suite file.")
    compare: CompareMode
    models: list[str]
    system_prompt: str | None = Field(
        default=None, description="The system prompt the reruns used instead of the recorded."
    )
    saved: str | None = Field(default=None, description="Where --save wrote the suite.")
    summary: ComparisonSummary
    cases: list[CaseReport]
    skipped: list[SkippedRun] = []

    @property
    def all_unchanged(self) -> bool:
        s = self.summary
        return s.changed == 0 and s.failed == 0 and s.with_new_tool_calls == 0


def summary_of(cases: Sequence[CaseReport]) -> ComparisonSummary:
    return ComparisonSummary(
        cases=len(cases),
        unchanged=sum(c.verdict == "unchanged" for c in cases),
        changed=sum(c.verdict == "changed" for c in cases),
        failed=sum(c.verdict == "failed" for c in cases),
        with_new_tool_calls=sum(bool(c.new_tool_calls) for c in cases),
    )


# -- the judge ---------------------------------------------------------------------------------


def judge_prompt(scenario: Scenario, recorded: Sequence[str], now: Sequence[str]) -> str:
    """What the judge is asked: the request, then the two answers (turn by turn)."""
    asked = [scenario.prompt, *scenario.turns]
    parts = []
    for n, message in enumerate(asked):
        before = recorded[n] if n < len(recorded) else "(none)"
        after = now[n] if n < len(now) else "(none)"
        head = f"Turn {n + 1}. " if len(asked) > 1 else ""
        parts.append(
            f"{head}Request:\n{message}\n\nRecorded answer:\n{before}\n\nNew answer:\n{after}"
        )
    return "\n\n".join(parts) + "\n\nSAME or DIFFERENT?"


def read_verdict(answer: str) -> tuple[bool | None, str]:
    """(same?, reason) from the judge's answer; None when it said neither."""
    found = VERDICT.match(answer.strip().splitlines()[0] if answer.strip() else "")
    if found is None:
        return None, f"the judge said neither SAME nor DIFFERENT: {answer.strip()[:200]!r}"
    return found.group(1).upper() == "SAME", found.group(2).strip()


async def judge(
    agents: AgentClient,
    scenario: Scenario,
    record: RunRecord,
    *,
    workflow_id: str,
    task_queue: str,
    model: str | None,
) -> tuple[bool | None, str]:
    """Ask the judge model whether the rerun answered as the recording did."""
    assert scenario.recorded is not None
    payload = {
        "prompt": judge_prompt(scenario, scenario.recorded.answers, _answers(record)),
        "system_prompt": JUDGE_SYSTEM_PROMPT,
        "tools": [],
        "max_iterations": 1,
        **({"model": model} if model else {}),
    }
    try:
        run = await agents.start_input(
            payload,
            id=workflow_id,
            task_queue=task_queue,
            summary=f"agent eval judge · {scenario.name}",
        )
        outcome = await run.outcome()
    except AgentError as error:
        return None, f"the judge could not run: {error}"
    if outcome is None or outcome.result is None:
        why = outcome.message if outcome is not None else "no outcome"
        return None, f"the judge's run did not complete: {why}"
    return read_verdict(outcome.result.answer)


# -- one case ----------------------------------------------------------------------------------


def _answers(record: RunRecord) -> list[str]:
    if record.answers:
        return record.answers
    return [record.answer] if record.answer is not None else []


def _tokens(baseline: RecordedBaseline) -> float:
    return baseline.usage.total_tokens


def recorded_cost(baseline: RecordedBaseline, prices: dict[str, ModelPrice]) -> float | None:
    """What the recorded run cost: as its result said, else its usage at the suite's price of
    the model that answered it (None: no price)."""
    if baseline.cost_usd is not None:
        return baseline.cost_usd
    return cost_of([], baseline.usage, baseline.answered_by, prices)


def case_report(
    scenario: Scenario,
    record: RunRecord,
    mode: CompareMode,
    same: bool | None,
    reason: str | None = None,
    prices: dict[str, ModelPrice] | None = None,
) -> CaseReport:
    """A rerun's record against its recording; `same`: whether the answers are alike (None:
    the comparison could not be made, `reason` says why)."""
    baseline = scenario.recorded
    assert baseline is not None
    answers = _answers(record)
    problem = None
    if record.ending != "completed" or record.error:
        problem = record.error or record.failure or f"the rerun ended {record.ending}"
        verdict: Verdict = "failed"
    elif same is None:
        problem, verdict = reason, "failed"
    else:
        verdict = "unchanged" if same else "changed"
    recorded_tools = set(baseline.tools)
    new_tools = sorted({c.tool for c in record.new_calls} - recorded_tools)
    return CaseReport(
        case=scenario.name,
        recorded_run=baseline.workflow_id,
        rerun=record.workflow_id,
        model=record.label,
        verdict=verdict,
        compare=mode,
        judge_reason=reason if mode == "judge" and same is not None else None,
        recorded_answers=baseline.answers,
        answers=answers,
        steps=Change(recorded=baseline.steps, now=record.steps),
        model_calls=Change(recorded=baseline.turns or None, now=record.turns or None),
        tokens=Change(recorded=_tokens(baseline), now=record.usage.total_tokens),
        cost_usd=Change(recorded=recorded_cost(baseline, prices or {}), now=record.cost_usd),
        new_tool_calls=record.new_calls,
        new_tools=new_tools,
        people=record.people,
        problem=problem,
    )


# -- as text -----------------------------------------------------------------------------------

COLUMNS = ("case", "model", "answer", "steps", "model calls", "tokens", "cost", "new tool calls")


def _short(text: str, limit: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _number(value: float | None, money: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"${value:.4f}" if money else f"{value:,.0f}"


def change_text(change: Change, money: bool = False) -> str:
    """`2 → 3`, or the one number when it did not change."""
    before, after = _number(change.recorded, money), _number(change.now, money)
    return before if before == after else f"{before} → {after}"


def _row(case: CaseReport) -> list[str]:
    calls = ", ".join(c.tool for c in case.new_tool_calls) or "–"
    return [
        case.case,
        case.model,
        case.verdict,
        change_text(case.steps),
        change_text(case.model_calls),
        change_text(case.tokens),
        change_text(case.cost_usd, money=True),
        calls,
    ]


def table_lines(report: FromRunsReport) -> list[str]:
    """One row per case, then the counts."""
    rows = [list(COLUMNS), *(_row(c) for c in report.cases)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    s = report.summary
    counts = (
        f"{s.cases} case{'s' if s.cases != 1 else ''}: {s.unchanged} unchanged, {s.changed} "
        f"changed, {s.failed} failed; {s.with_new_tool_calls} with new tool calls "
        f"(compared {report.compare})"
    )
    rule = "-" * max(len(line) for line in lines)
    return [lines[0], rule, *lines[1:], rule, counts]


def detail_lines(report: FromRunsReport) -> list[str]:
    """What changed, what was called anew, what failed, and the runs skipped."""
    lines: list[str] = []
    for case in report.cases:
        if case.verdict == "changed":
            for n, (before, after) in enumerate(
                zip(case.recorded_answers, case.answers, strict=False)
            ):
                turn = f" turn {n + 1}" if len(case.recorded_answers) > 1 else ""
                lines.append(f"~ {case.case}{turn}: {_short(before)!r} → {_short(after)!r}")
            if len(case.recorded_answers) != len(case.answers):
                lines.append(
                    f"~ {case.case}: {len(case.recorded_answers)} answers recorded, "
                    f"{len(case.answers)} now"
                )
            if case.judge_reason:
                lines.append(f"  judge: {case.judge_reason}")
        for call in case.new_tool_calls:
            new = " (a tool the recorded run never called)" if call.tool in case.new_tools else ""
            args = _short(json.dumps(call.args, ensure_ascii=False), 60)
            lines.append(f"+ {case.case}: new tool call {call.tool} {args}{new}: not run")
        if case.problem:
            lines.append(f"✗ {case.case}: {case.problem}")
    for skipped in report.skipped:
        lines.append(f"- skipped {skipped.workflow_id}: {skipped.reason}")
    return lines
