"""What a person sees before deciding on a call: its tool and arguments, rendered for a
terminal (`agent pending`, the inline prompt of `agent run` / `agent chat`) and for Markdown
(the Web UI's current details).

- The arguments that decide the effect (paths, recipients, amounts, ids, urls: short values)
  come first and in full, as JSON literals; long values (a file's content) follow, with their
  size and their first and last lines. `full=True` shows every value in full.
- Keys keep the order the call's arguments have (a tool's argument model: its declared order),
  never sorted.
- Characters that are invisible or change how text around them is shown (control characters,
  bidirectional overrides, isolates and marks, zero-width and other format characters, line
  separators, odd spaces) are shown escaped (`\\u202e`), everywhere except the newlines of a
  long value's lines, which are rendered as lines. The count of such characters in the whole
  value (also in the lines a cut leaves out) is shown as a warning.
- In Markdown, every piece of argument text is a code span or a fenced block, and any other
  text that comes from a model is backslash-escaped, so an argument cannot forge a link, a
  heading or an entity.

Pure functions, no I/O: the workflows call them for their current details (deterministic, cheap
enough for every update: a long value is scanned once and only its excerpt is escaped).
"""

from __future__ import annotations

import json
import re
import shlex
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.loop.markdown import code_span
from durable_agents.loop.repetition import repeat_text
from durable_agents.loop.summaries import shorten

SHORT_VALUE_CHARS = 200
"""A value whose JSON is at most this long is shown in full, on one line."""
COMPACT_CHARS = 100
"""Arguments whose JSON fits in this many characters (all values short) stay on one line."""
HEAD_LINES = 3
TAIL_LINES = 2
"""A cut long value shows its first and last lines..."""
LINE_CHARS = 120
"""... each cut in the middle to this many characters."""

_INVISIBLE = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u2800\u3164\uffa0")
"""Letters and marks that render as nothing (Hangul fillers, the braille blank, ...)."""
_CANDIDATE = re.compile(r"[^\x20-\x7e]")
"""Anything but printable ASCII might need escaping (checked one by one)."""
_MARKDOWN_PUNCTUATION = re.compile(r"""([!"#$&'()+\-./<=>@\[\\\]^`{|}~])""")
"""ASCII punctuation that can start Markdown (links, images, code, HTML, entities, headings,
lists, tables, typographic quotes, linkified addresses); a backslash makes each literal
(CommonMark). `: , ; ? %` stay as they are: they start nothing. `*` and `_` are escaped only
when the text has two of them (emphasis needs a pair), so `6*7` reads as written."""


def needs_escape(char: str) -> bool:
    """Whether `char` is shown escaped: C0/C1 controls and DEL, format characters (the
    bidirectional embeddings, overrides, isolates and marks U+202A-U+202E, U+2066-U+2069,
    U+200E, U+200F, U+061C; zero-width characters, soft hyphen, tags, BOM), line and paragraph
    separators, surrogates, private-use and unassigned code points, spaces other than U+0020,
    and letters that render as nothing."""
    category = unicodedata.category(char)
    if category in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
        return True
    return (category == "Zs" and char != " ") or char in _INVISIBLE


def _text_escape(char: str) -> str:
    named = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
    if char in named:
        return named[char]
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _json_escape(char: str) -> str:
    """A JSON escape (a surrogate pair above U+FFFF), so a shown literal is still valid JSON."""
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def escape_text(text: str, *, keep_newlines: bool = False) -> str:
    """`text` with every character of `needs_escape` written as an escape (`\\u202e`, `\\t`,
    `\\n` unless `keep_newlines`)."""

    def replace(match: re.Match[str]) -> str:
        char = match.group()
        if keep_newlines and char == "\n":
            return char
        return _text_escape(char) if needs_escape(char) else char

    return _CANDIDATE.sub(replace, text)


def count_hidden(text: str) -> int:
    """How many characters of `text` would be shown escaped, not counting newlines and tabs
    (which are ordinary in a file's content)."""
    if text.isascii() and text.isprintable():
        return 0
    counts = Counter(text)  # counted in C: a megabyte of odd characters stays cheap
    return sum(n for char, n in counts.items() if char not in "\n\t" and needs_escape(char))


def _hidden_in(value: Any) -> int:
    """`count_hidden` over every string in `value` (keys of objects included)."""
    if isinstance(value, str):
        return count_hidden(value)
    if isinstance(value, Mapping):
        return sum(count_hidden(str(k)) + _hidden_in(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return sum(_hidden_in(item) for item in value)
    return 0


def json_literal(value: Any) -> str:
    """`value` as one line of JSON with every character of `needs_escape` escaped: what is shown
    is valid JSON for exactly this value."""
    text = json.dumps(value, ensure_ascii=False)

    def replace(match: re.Match[str]) -> str:
        char = match.group()
        return _json_escape(char) if needs_escape(char) else char

    return _CANDIDATE.sub(replace, text)


def markdown_text(text: str) -> str:
    """`text` for Markdown prose: escaped as `escape_text` does, then every ASCII punctuation
    character backslash-escaped, so it renders as exactly that text (no link, heading,
    emphasis, HTML, entity or typographic replacement). Use it once, on one line's text: an
    emphasis delimiter alone in it (`6*7`) is left as it is."""
    escaped = _MARKDOWN_PUNCTUATION.sub(r"\\\1", escape_text(text))
    for delimiter in "*_":
        if escaped.count(delimiter) > 1:
            escaped = escaped.replace(delimiter, "\\" + delimiter)
    return escaped


def _fenced(lines: Iterable[str]) -> str:
    """A fenced code block of already escaped lines; the fence is longer than any run of `~`
    in them, so no line can close it."""
    body = list(lines)
    longest = max((len(run) for line in body for run in re.findall("~+", line)), default=0)
    fence = "~" * max(3, longest + 1)
    return "\n".join([fence, *body, fence])


# -- the shown call ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ShownValue:
    """One argument as shown: a short value in full (`literal`), or a long one by its size and
    the lines shown (all of them when shown in full)."""

    key: str
    """The key as a JSON literal, escaped (`"path"`)."""
    literal: str | None
    """A short value: its JSON, escaped. None for a long value."""
    size: str
    """`12,345 chars, 301 lines` (long values; "" for short ones)."""
    head: tuple[str, ...] = ()
    omitted: int = 0
    """Lines left out between `head` and `tail`."""
    tail: tuple[str, ...] = ()
    cut: bool = False
    """Something of the value is not shown (lines left out, or lines cut)."""
    hidden: int = 0
    """Characters of the whole value shown escaped (see `count_hidden`)."""

    @property
    def name(self) -> str:
        """The key for prose: without its quotes when it is a plain word."""
        bare = self.key[1:-1]
        return bare if re.fullmatch(r"[A-Za-z0-9_.-]+", bare) else self.key


@dataclass(frozen=True)
class ShownCall:
    """A call as shown to the person who decides on it."""

    tool: str
    """The tool's name, escaped."""
    values: tuple[ShownValue, ...]
    """Short values first, then long ones; each group in the arguments' own order."""
    compact: str | None
    """All the arguments as one line of JSON (their own order) when they fit, else None."""
    full: bool

    @property
    def cut(self) -> bool:
        return any(value.cut for value in self.values)

    @property
    def hidden(self) -> int:
        return sum(value.hidden for value in self.values)


def _cut_line(line: str, limit: int) -> tuple[str, bool]:
    """A line shown in about `limit` characters (more if it has escapes): its start and its
    end, escaped, with how many characters were left out between them. Only what is shown is
    escaped, so a huge line costs no more than a short one."""
    if len(line) <= limit:
        return escape_text(line), False
    keep_end = limit // 3
    keep_start = limit - keep_end
    left_out = len(line) - keep_start - keep_end
    start, end = escape_text(line[:keep_start]), escape_text(line[-keep_end:])
    return f"{start} …({left_out:,} chars)… {end}", True


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _long_lines(value: Any) -> tuple[list[str], str, int]:
    """A long value's lines, its size, and its hidden characters."""
    if isinstance(value, str):
        lines = value.split("\n")
        if len(lines) > 1 and not lines[-1]:
            lines.pop()  # a final newline ends the last line; it starts none
        size = f"{_plural(len(value), 'char')}, {_plural(len(lines), 'line')}"
        return lines, size, _hidden_in(value)
    text = json.dumps(value, ensure_ascii=False, indent=2)
    what = (
        _plural(len(value), "item")
        if isinstance(value, list)
        else _plural(len(value), "key")
        if isinstance(value, dict)
        else type(value).__name__
    )
    return text.split("\n"), f"{what}, {_plural(len(text), 'char')} of JSON", _hidden_in(value)


def _shown_value(key: str, value: Any, full: bool) -> ShownValue:
    shown_key = json_literal(key)
    raw = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    literal = json_literal(value) if len(raw) <= SHORT_VALUE_CHARS else None  # escaped if short
    if literal is not None and len(literal) <= SHORT_VALUE_CHARS:
        return ShownValue(shown_key, literal, "", hidden=_hidden_in(value) + count_hidden(key))
    lines, size, hidden = _long_lines(value)
    hidden += count_hidden(key)
    if full:
        return ShownValue(
            shown_key, None, size, tuple(escape_text(x) for x in lines), hidden=hidden
        )
    if len(lines) <= HEAD_LINES + TAIL_LINES:
        head_lines, tail_lines = lines, []
    else:
        head_lines, tail_lines = lines[:HEAD_LINES], lines[-TAIL_LINES:]
    head = [_cut_line(line, LINE_CHARS) for line in head_lines]
    tail = [_cut_line(line, LINE_CHARS) for line in tail_lines]
    omitted = len(lines) - len(head_lines) - len(tail_lines)
    cut = omitted > 0 or any(was_cut for _, was_cut in head + tail)
    return ShownValue(
        shown_key,
        None,
        size,
        tuple(text for text, _ in head),
        omitted,
        tuple(text for text, _ in tail),
        cut=cut,
        hidden=hidden,
    )


def show_call(tool: str, args: Mapping[str, Any], *, full: bool = False) -> ShownCall:
    """How a call of `tool` with `args` is shown (`full`: every value in full)."""
    values = [_shown_value(str(key), value, full) for key, value in args.items()]
    ordered = [v for v in values if v.literal is not None] + [
        v for v in values if v.literal is None
    ]
    compact = None
    if all(v.literal is not None for v in values):
        joined = "{" + ", ".join(f"{v.key}: {v.literal}" for v in values) + "}"
        if len(joined) <= COMPACT_CHARS:
            compact = joined
    return ShownCall(escape_text(tool), tuple(ordered), compact, full)


# -- for a terminal ----------------------------------------------------------------------------


def hidden_warning(count: int, *, markdown: bool = False) -> str:
    """`⚠ 1 invisible or control character shown as a \\u escape`; "" when there is none."""
    if not count:
        return ""
    escape = code_span("\\u") if markdown else "\\u"
    return f"⚠ {_plural(count, 'invisible or control character')} shown as {escape} escapes"


def repeat_flag(request: PendingRequest, *, markdown: bool = False) -> str:
    """`⚠ repeat: this exact call ... already ran and succeeded once ...` for a request that
    repeats a call that succeeded (`PendingRequest.repeat_of`); "" for any other."""
    if request.repeat_of is None:
        return ""
    text = repeat_text(request.repeat_of)
    return f"⚠ {markdown_text(text) if markdown else escape_text(text)}"


def _excerpt_title(value: ShownValue) -> str:
    if not value.cut:
        return f"{value.size}:"
    if value.omitted:
        return f"{value.size}; the first {len(value.head)} and the last {len(value.tail)}:"
    return f"{value.size}; long lines cut in the middle:"


def terminal_lines(call: ShownCall, indent: str = "      ") -> list[str]:
    """The arguments one per line under a call's header: short values as JSON, then each
    long value's size and lines (`│ ...`; `┆ ... N lines not shown`)."""
    lines: list[str] = []
    warning = hidden_warning(call.hidden)
    if warning:
        lines.append(f"{indent}{warning}")
    for value in call.values:
        if value.literal is not None:
            lines.append(f"{indent}{value.name}: {value.literal}")
            continue
        lines.append(f"{indent}{value.name}: {_excerpt_title(value)}")
        lines += [f"{indent}  │ {line}" for line in value.head]
        if value.omitted:
            lines.append(f"{indent}  ┆ … {_plural(value.omitted, 'line')} not shown …")
        lines += [f"{indent}  │ {line}" for line in value.tail]
    return lines


def prompt_text(call: ShownCall) -> str:
    """The call in one line for a question: the compact JSON, or the short values in full and
    each long value's size (with the warning, if any)."""
    if call.compact is not None:
        shown = f"{call.tool} {call.compact}"
    else:
        parts = [
            f"{v.name}: {v.literal}" if v.literal is not None else f"{v.name}: ({v.size})"
            for v in call.values
        ]
        shown = f"{call.tool} " + ", ".join(parts)
    warning = hidden_warning(call.hidden)
    return f"{shown} · {warning}" if warning else shown


# -- for Markdown ------------------------------------------------------------------------------


def markdown_call(call: ShownCall, full_hint: str | None = None) -> str:
    """The call as Markdown paragraphs (the Web UI's current details): one code span when it is
    compact; else a list of the short values, each long value's size and lines in fenced
    blocks, and (when something is cut) `full_hint`, a command that shows everything."""
    warning = hidden_warning(call.hidden, markdown=True)
    tail = [warning] if warning else []
    if call.compact is not None:
        return "\n\n".join([code_span(f"{call.tool} {call.compact}"), *tail])
    paragraphs = [code_span(call.tool), *tail]
    items = [
        f"- {code_span(v.name)}: {code_span(v.literal)}"
        for v in call.values
        if v.literal is not None
    ]
    if items:
        paragraphs.append("\n".join(items))
    for value in call.values:
        if value.literal is not None:
            continue
        paragraphs.append(f"{code_span(value.name)}: {_excerpt_title(value)}")
        if value.head:
            paragraphs.append(_fenced(value.head))
        if value.omitted:
            paragraphs.append(f"… {_plural(value.omitted, 'line')} not shown …")
        if value.tail:
            paragraphs.append(_fenced(value.tail))
    if call.cut and full_hint:
        paragraphs.append(f"cut for display; every argument in full: {code_span(full_hint)}")
    return "\n\n".join(paragraphs)


def full_command(answer_command: str) -> str | None:
    """`agent pending ID --full` for the workflow a pending request's command answers."""
    try:
        words = shlex.split(answer_command)
    except ValueError:
        return None
    if "--workflow-id" not in words[:-1]:
        return None
    workflow_id = words[words.index("--workflow-id") + 1]
    return f"agent pending {shlex.quote(workflow_id)} --full"


def markdown_pending(request: PendingRequest, *, plan_above: bool = False) -> str:
    """A pending request in the Web UI's current details: what it waits for (the call as
    `markdown_call` shows it, or the question) and the command that answers it, in a code span
    so it renders literally and pastes into a shell. `plan_above`: a plan request says so
    instead of listing its steps again."""
    if request.kind is RequestKind.QUESTION:
        question = escape_text(shorten(request.question or "", SHORT_VALUE_CHARS))
        what = f"an answer: {code_span(question)}"
    elif request.kind is RequestKind.PLAN and plan_above:
        what = "approval of the plan above"
    else:
        call = show_call(request.tool, request.args)
        what = f"approval: {markdown_call(call, full_command(request.command))}"
    repeat = repeat_flag(request, markdown=True)
    warning = f"{repeat}\n\n" if repeat else ""
    return f"waiting for {what}\n\n{warning}{code_span(request.command)}"
