"""The output the docs show is what a real run prints today (issue 31, item 17).

Every block marked `<!-- generated: NAME -->` in the README and docs/ is run again here, for
real (`scripts/doc_excerpts.py`: `worker.py` with its embedded dev server and the demo model,
then `temporal`, `agent` and `curl` as a reader types them), and must match what the doc shows
but for what changes from run to run. When it fails, `python -m scripts.doc_excerpts --write`
brings the docs up to date; read the diff before committing it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import doc_excerpts
from scripts.doc_excerpts import (
    Block,
    all_blocks,
    blocks_in,
    difference,
    generate,
    stale,
    volatile,
)
from scripts.docs import benchmarks

NAMED_IN_THE_ISSUE = {
    "quickstart-worker": "README.md",
    "temporal-show": "docs/getting-started/first-agent.md",
    "agent-run": "docs/cli.md",
    "agent-run-failed": "docs/cli.md",
    "http-events": "docs/http-api.md",
}
"""The excerpts issue 31 found drifting, each generated in a doc that shows it (the history of
the first run moved from the README into the site's first-agent page with issue 34)."""


GATEWAY_SESSIONS = {"mcp-session", "a2a-session"}
"""The MCP and A2A clients' transcripts (docs/mcp-and-a2a.md): checked on a stage of their own,
so each test stays well within its hang guard on busy cores."""


async def test_every_generated_block_matches_a_fresh_run() -> None:
    blocks = [b for b in all_blocks() if b.name not in GATEWAY_SESSIONS]
    texts = await generate({b.name for b in blocks})
    diffs = [difference(b, texts[b.name]) for b in blocks]
    assert stale(blocks, texts) == [], "\n".join(d for d in diffs if d)
    # what the issue found stale now comes from the run: 86 tokens, the whole tool list,
    # model_call_started in the stream, every event of the history
    assert "86 tokens (60 prompt + 26 completion)" in texts["agent-run"]
    assert "remember, recall, forget" in texts["agent-run-failed"]
    assert "event: model_call_started" in texts["http-events"]
    assert "WorkflowExecutionCompleted" in texts["temporal-show"]


async def test_the_mcp_and_a2a_sessions_match_a_fresh_run() -> None:
    """The official MCP client over stdio and a2a-sdk's streaming client, run for real against
    `make run`'s worker (scripts/docs/mcp_session.py, a2a_session.py)."""
    blocks = [b for b in all_blocks() if b.name in GATEWAY_SESSIONS]
    assert {b.name for b in blocks} == GATEWAY_SESSIONS
    texts = await generate(GATEWAY_SESSIONS)
    diffs = [difference(b, texts[b.name]) for b in blocks]
    assert stale(blocks, texts) == [], "\n".join(d for d in diffs if d)
    assert "decide -> " in texts["mcp-session"] and '"outcome": "approved"' in texts["mcp-session"]
    assert "TASK_STATE_INPUT_REQUIRED" in texts["a2a-session"]
    assert "artifact 'answer': The answer is 425." in texts["a2a-session"]


PASTED_UNTIL_ISSUE_34 = {
    "eval-seed-cases": "docs/how-to/evals.md",
    "eval-runs-listed": "docs/how-to/evals.md",
    "agent-run-weather": "docs/how-to/evals.md",
    "eval-refused-and-failing": "docs/how-to/evals.md",
    "plan-approved": "docs/how-to/plan-and-execute.md",
    "plan-replanned": "docs/how-to/plan-and-execute.md",
    "eval-multi-step": "docs/how-to/plan-and-execute.md",
    "session-chat": "docs/how-to/sessions.md",
    "mcp-session": "docs/mcp-and-a2a.md",
    "a2a-session": "docs/mcp-and-a2a.md",
}
"""Transcripts the site's pages showed pasted from runs of 2026-12-01 (issue 34, item 5); the
MCP and A2A sessions are the clients in scripts/docs/ run against `make run`'s worker."""


GETTING_STARTED = [
    ("agent-run", "docs/getting-started/first-agent.md"),
    ("first-approval", "docs/getting-started/first-approval.md"),
]
"""What a newcomer runs first (issue 34: the first approval's transcript was pasted from a run
of 2026-12-01 and had drifted: no `maker`, no digest in the recorded decision)."""


def test_the_drifted_excerpts_are_generated_where_the_issue_found_them() -> None:
    where: dict[str, set[str]] = {}
    for b in all_blocks():
        where.setdefault(b.name, set()).add(str(b.path.relative_to(doc_excerpts.ROOT)))
    for name, doc in [
        *NAMED_IN_THE_ISSUE.items(),
        *PASTED_UNTIL_ISSUE_34.items(),
        *GETTING_STARTED,
    ]:
        assert doc in where.get(name, set()), f"{name} is not generated in {doc}"


def test_a_changed_figure_is_stale_and_a_changed_clock_is_not(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "text\n<!-- generated: agent-run -->\n```text\n"
        "done · 39 tokens · 2026-12-01T15:56:11.562563Z\n```\n"
    )
    [block] = blocks_in(doc)
    assert block == Block(doc, "agent-run", 3, 4)
    fresh = "done · 39 tokens · 2026-12-05T10:00:00Z"
    assert stale([block], {"agent-run": fresh}, root=tmp_path) == []
    changed = "done · 86 tokens · 2026-12-05T10:00:00Z"
    assert stale([block], {"agent-run": changed}, root=tmp_path) == ["doc.md:3: agent-run"]


def test_write_replaces_only_the_block(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("a\n<!-- generated: x -->\n```text\nold\nold\n```\nb\n")
    doc_excerpts.write(blocks_in(doc), {"x": "new"})
    assert doc.read_text() == "a\n<!-- generated: x -->\n```text\nnew\n```\nb\n"


def test_a_marker_without_a_fence_is_an_error(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- generated: x -->\nnot a fence\n")
    with pytest.raises(ValueError, match="must precede a fence"):
        blocks_in(doc)


def test_volatile_masks_ids_clocks_and_process_numbers() -> None:
    text = (
        "2026-12-05 14:22:30,968 INFO started (process group 6812) "
        "01a24695-4eca-7ea9-ba7a-59734cd32b77 at 2026-12-05T14:22:01.000417Z in 1.5 s"
    )
    assert volatile(text) == (
        "<log time> INFO started (process group <pid>) <uuid> at <time> in <duration>"
    )


# -- BENCHMARKS.md and RELIABILITY.md: tables rendered from recorded runs (issue 34, item 5) --


def test_every_figures_table_matches_its_recorded_run() -> None:
    tables = [b for b in all_blocks() if b.table]
    shown_in = {str(b.path.relative_to(doc_excerpts.ROOT)) for b in tables}
    assert {"BENCHMARKS.md", "RELIABILITY.md", "EVALS.md"} <= shown_in
    assert {b.name for b in tables} == set(benchmarks.TABLES), "a table recipe no page shows"
    texts = {name: render() for name, render in benchmarks.TABLES.items()}
    diffs = [difference(b, texts[b.name]) for b in tables]
    assert stale(tables, texts) == [], "\n".join(d for d in diffs if d)
    for name, text in texts.items():  # each says how and when it was measured
        assert "Measured by `" in text and " UTC" in text, name


FIGURES_IN_THE_SITE = {
    "session-history": "docs/how-to/sessions.md",
    "bench-fleet": "docs/fleet.md",
    "bench-issue-38": "docs/fleet.md",
    "bench-large-document": "docs/fleet.md",
    "bench-stream": "docs/events.md",
    "stream-timeline": "docs/events.md",
    "rolling-deploy": "docs/fleet.md",
}
"""Figures the site's pages quoted by hand from old runs (issue 34), now rendered there from the
recorded runs like BENCHMARKS.md's tables (and compared exactly by the test above); the rolling
deploy's transcript too, recorded since its drain takes minutes (scripts/rolling_deploy.py)."""


def test_the_pages_figures_are_rendered_from_recorded_runs() -> None:
    where: dict[str, set[str]] = {}
    for b in all_blocks():
        if b.table:
            where.setdefault(b.name, set()).add(str(b.path.relative_to(doc_excerpts.ROOT)))
    for name, page in FIGURES_IN_THE_SITE.items():
        assert page in where.get(name, set()), f"{name} is not rendered in {page}"
    sessions = (doc_excerpts.ROOT / "docs/how-to/sessions.md").read_text()
    fleet = (doc_excerpts.ROOT / "docs/fleet.md").read_text()
    for typed in ("about 2.9 times", "added 43 times"):  # the hand-typed figures they replace
        assert typed not in sessions
    for typed in ("| 3 workers | 0 of 450 (0%) | 4 030 (1.00x) |", "0.17 s and leaves 8.1 KiB"):
        assert typed not in fleet
    assert "(about 4 minutes later)" not in fleet
    assert "| nobody | 38 (19) | 0 |" not in (doc_excerpts.ROOT / "docs/events.md").read_text()


def test_every_recorded_run_says_how_it_ran() -> None:
    recorded = sorted(benchmarks.MEASURED.glob("*.json"))
    assert recorded
    for path in recorded:
        run = benchmarks.load(path.stem)
        assert run.command and run.date.endswith(("UTC", ")")) and run.commit, path.name
        assert run.result, path.name


def test_a_table_figure_is_compared_exactly(tmp_path: Path) -> None:
    """A table's figures are not masked as a transcript's durations are: 20.7 ms against 21.7 ms
    is stale, and a table needs its end marker."""
    name = next(iter(benchmarks.TABLES))
    doc = tmp_path / "BENCH.md"
    doc.write_text(
        f"a\n<!-- generated: {name} -->\n| x |\n| 20.7 ms |\n<!-- end generated: {name} -->\n"
    )
    [block] = blocks_in(doc)
    assert block == Block(doc, name, 2, 4) and block.table
    assert stale([block], {name: "| x |\n| 20.7 ms |"}, root=tmp_path) == []
    assert stale([block], {name: "| x |\n| 21.7 ms |"}, root=tmp_path) == [f"BENCH.md:2: {name}"]
    doc_excerpts.write([block], {name: "| y |"})
    assert (
        doc.read_text() == f"a\n<!-- generated: {name} -->\n| y |\n<!-- end generated: {name} -->\n"
    )
    doc.write_text(f"<!-- generated: {name} -->\n| x |\n")
    with pytest.raises(ValueError, match="end generated"):
        blocks_in(doc)


def test_volatile_masks_an_evals_id_latencies_and_the_weekday() -> None:
    text = (
        "eval eval-20261205T190459Z-331193 · 3 seconds ago · 1 minute ago · (Saturday, UTC)\n"
        "   Status    WorkflowId       Type         StartTime\n"
        "normal  demo-offline  1/1  100%  –  1.0  2.0  86   $0.0000   0.21   0.21\n"
        "all  demo-offline  0/1  0%  –  0.0  1.0  46       n/a   0.30   0.30\n"
    )
    assert volatile(text) == (
        "eval eval-<id> · <a while> ago · <a while> ago · (<weekday>, UTC)\n<list header>\n"
        "normal  demo-offline  1/1  100%  –  1.0  2.0  86   $0.0000 <p50> <p95>\n"
        "all  demo-offline  0/1  0%  –  0.0  1.0  46       n/a <p50> <p95>\n"
    )


def test_volatile_drops_a_plan_checklist_a_revision_replaced() -> None:
    caught = "plan:\n  → 1. calculator\n  · 2. calculator\nplan (revision 2):\n  ✗ 1. calculator\n"
    missed = "plan (revision 2):\n  ✗ 1. calculator\n"
    assert volatile(caught) == volatile(missed)
    kept = "plan:\n  · 1. calculator\n  ? plan waits for approval\napprove plan? y\nplan:\n"
    assert volatile(kept) == kept


def test_volatile_folds_a_call_line_a_look_caught_twice() -> None:
    twice = "  ✗ calculator {} → Error: division by zero\n" * 2 + "done\n"
    once = "  ✗ calculator {} → Error: division by zero\ndone\n"
    assert volatile(twice) == volatile(once)
    different = "  ✗ calculator {} → Error: a\n  ✗ calculator {} → Error: b\n"
    assert volatile(different) == different


def test_volatile_masks_a_list_rows_start_time_of_now() -> None:
    now = "  Completed  chat-1      SessionWorkflow  now\n"
    ago = "  Completed  chat-1      SessionWorkflow  2 seconds ago\n"
    assert volatile(now) == volatile(ago)
    assert volatile("it is raining now\n") == "it is raining now\n"


def test_volatile_drops_a_gateways_turn_lines_and_renumbers_its_progress() -> None:
    """A turn's progress line shows only when the gateway's look caught the turn running."""
    caught = (
        "  progress 1: turn 1\n  progress 2: turn 2/10 · 36 tokens so far\n"
        "  progress 3: ✓ calculator {} → 425\n"
        'run_agent -> {"workflow_id": "mcp-65d904a60c"}\n'
        "  TASK_STATE_WORKING           turn 2/8\n  TASK_STATE_COMPLETED         425\n"
    )
    missed = (
        "  progress 1: ✓ calculator {} → 425\n"
        'run_agent -> {"workflow_id": "mcp-edd1123864"}\n'
        "  TASK_STATE_COMPLETED         425\n"
    )
    assert volatile(caught) == volatile(missed)
    assert volatile("  progress 1: ✓ a\n") != volatile("  progress 1: ✓ b\n")


def test_no_page_says_its_transcript_is_pasted() -> None:
    """Every transcript is generated: no page keeps one "recorded on" a date, "not regenerated"."""
    for path in doc_excerpts.DOCS:
        text = path.read_text()
        for said in ("not regenerated", "It is not regenerated", "pasted from"):
            assert said not in text, f"{path.relative_to(doc_excerpts.ROOT)} says {said!r}"
