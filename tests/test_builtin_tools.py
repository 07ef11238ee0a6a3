"""Unit tests for the built-in tools (no Temporal): calculator, current_time, read_file."""

from __future__ import annotations

import operator
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from durable_agents.tools.builtin.calculator import (
    MAX_EXPRESSION_LENGTH,
    CalculatorArgs,
    calculator,
    evaluate,
    format_result,
)
from durable_agents.tools.builtin.current_time import (
    CurrentTimeArgs,
    current_time,
    describe_time,
    load_zone,
)
from durable_agents.tools.builtin.files import ReadFileArgs, read_file, read_text_file
from durable_agents.tools.builtin.workspace import resolve_in_workspace
from durable_agents.tools.definition import Tool, ToolContext, ToolError


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return ToolContext(workspace=workspace, workflow_id="wf", call_id="c1", idempotency_key="wf/c1")


# --------------------------------------------------------------------------------------------
# calculator


def test_tools_are_tools() -> None:
    for item, name in (
        (calculator, "calculator"),
        (current_time, "current_time"),
        (read_file, "read_file"),
    ):
        assert isinstance(item, Tool)
        assert item.name == name
        assert item.description
        assert item.schema().parameters["type"] == "object"
    assert read_file.wants_context
    assert not calculator.wants_context


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("17*25", "425"),
        ("2 + 3 * 4", "14"),
        ("(2 + 3) * 4", "20"),
        ("-5 + 2", "-3"),
        ("-(2 + 3)", "-5"),
        ("+7", "7"),
        ("1/4", "0.25"),
        ("10/2", "5"),
        ("7 // 2", "3"),
        ("-7 // 2", "-4"),
        ("7 % 3", "1"),
        ("-7 % 3", "2"),
        ("2 ** 10", "1024"),
        ("2 ** 3 ** 2", "512"),
        ("-2 ** 2", "-4"),
        ("2 ** -2", "0.25"),
        ("0.1 + 0.2", "0.3"),
        ("1.5 * 4", "6"),
        ("abs(-3)", "3"),
        ("round(2.567, 2)", "2.57"),
        ("round(2.5)", "2"),
        ("min(3, 1, 2)", "1"),
        ("max(3, 1.5)", "3"),
        ("sqrt(16)", "4"),
        ("2 ** 100", str(2**100)),
        ("1_000 * 3", "3000"),
        ("  1 + 1  ", "2"),
    ],
)
def test_calculator_results(expression: str, expected: str) -> None:
    assert format_result(evaluate(expression)) == expected


async def test_calculator_through_tool_invoke(ctx: ToolContext) -> None:
    result = await calculator.invoke(CalculatorArgs(expression="17*25"), ctx)
    assert result == "425"
    assert await calculator.invoke(CalculatorArgs(expression="1/4"), ctx) == "0.25"
    with pytest.raises(ToolError, match="division by zero"):
        await calculator.invoke(CalculatorArgs(expression="1/0"), ctx)


def test_evaluate_types() -> None:
    assert evaluate("17*25") == 425
    assert isinstance(evaluate("17*25"), int)
    assert isinstance(evaluate("10/2"), float)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("x + 1", "names"),
        ("abs", "is a function"),
        ("foo(1)", "function 'foo' is not allowed"),
        ("__import__('os')", "function '__import__' is not allowed"),
        ("__import__('os').system('true')", "only calls of the functions"),
        ("(1).real", "attribute access"),
        ("'abc'", "string literals"),
        ("'a' * 3", "string literals"),
        ("1 < 2", "comparisons"),
        ("lambda: 1", "lambda"),
        ("[1, 2][0]", "subscripts"),
        ("1 if 1 else 2", "conditional"),
        ("True + 1", "bool literals"),
        ("2 ^ 3", "use \\*\\* for powers"),
        ("1 << 5", "operator '<<'"),
        ("~1", "operator '~'"),
        ("1, 2", "tuples"),
        ("1j", "complex"),
        ("abs(x=1)", "keyword"),
        ("abs(1, 2)", "takes 1 argument"),
        ("max()", "at least 1"),
        ("round(1, 0.5)", "integer"),
        ("sqrt(-1)", "negative"),
        ("(-8) ** 0.5", "complex"),
        ("x = 1", "not a valid arithmetic expression"),
        ("1 +", "not a valid arithmetic expression"),
        ("", "empty"),
        ("   ", "empty"),
    ],
)
def test_calculator_refuses(expression: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        evaluate(expression)


@pytest.mark.parametrize("expression", ["1/0", "1//0", "1%0", "1.5/0.0", "0 ** -1", "5 % (2-2)"])
def test_division_by_zero(expression: str) -> None:
    with pytest.raises(ToolError, match="division by zero"):
        evaluate(expression)


@pytest.mark.parametrize(
    "expression",
    [
        "9**9**9",
        "10**100000",
        "2**-100000",
        "(10**999)**2",
        "10**1000",
        "9**999 * 9**999",
        "(10**900) * (10**900)",
        "1e999",
        "1e308 * 10",
        "(10**999) / 3",
        "2.0 ** 5000",
        "10.0 ** 400",
        "round(5, -10**9)",
        "sqrt(10**999)",
    ],
)
def test_bombs_are_refused(expression: str) -> None:
    # These must raise quickly instead of computing gigantic numbers.
    with pytest.raises(ToolError):
        evaluate(expression)


def test_size_limits_allow_large_but_bounded_numbers() -> None:
    assert evaluate("10**999") == 10**999
    assert evaluate("2**1000") == 2**1000


def test_deep_nesting_refused() -> None:
    with pytest.raises(ToolError, match="nested too deeply"):
        evaluate("(1+" * 80 + "1" + ")" * 80)
    with pytest.raises(ToolError, match="nested too deeply"):
        evaluate("-" * 300 + "1")
    with pytest.raises(ToolError):
        evaluate("(" * 240 + "1" + ")" * 240)  # the parser's own limit


def test_long_flat_chains_are_not_nesting() -> None:
    assert evaluate("+".join(["1"] * 200)) == 200
    assert evaluate(" - ".join(["2"] * 100)) == 2 - 2 * 99
    assert evaluate("*".join(["2"] * 100)) == 2**100


def test_expression_length_limit() -> None:
    with pytest.raises(ToolError, match="longer than"):
        evaluate("1+" * MAX_EXPRESSION_LENGTH + "1")
    with pytest.raises(ValueError):
        CalculatorArgs(expression="1" * (MAX_EXPRESSION_LENGTH + 1))


_OPS: dict[str, Callable[[int, int], int | float]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
}


@given(
    a=st.integers(min_value=-(10**6), max_value=10**6),
    b=st.integers(min_value=-(10**6), max_value=10**6),
    op=st.sampled_from(sorted(_OPS)),
)
def test_binary_ops_match_python(a: int, b: int, op: str) -> None:
    if op in {"/", "//", "%"} and b == 0:
        return
    if op == "**":
        b = b % 50 - 10  # keep powers small; negative exponents give floats
        if a == 0 and b < 0:
            return
    expected = _OPS[op](a, b)
    assert evaluate(f"({a}) {op} ({b})") == expected
    assert evaluate(f"{a} {op} {b}") == eval(f"{a} {op} {b}")  # same precedence as Python


_CALC_ALPHABET = "0123456789+-*/%()., e_jxabsqrtminround'\"[]<=^~!@:;\n\t\x00"


@settings(max_examples=300)
@given(st.one_of(st.text(max_size=60), st.text(alphabet=_CALC_ALPHABET, max_size=60)))
def test_fuzz_only_tool_errors(text: str) -> None:
    try:
        result = evaluate(text)
    except ToolError:
        return
    assert type(result) in (int, float)
    format_result(result)


# --------------------------------------------------------------------------------------------
# current_time


async def test_current_time_utc(ctx: ToolContext) -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    text = await current_time.invoke(CurrentTimeArgs(), ctx)
    stamp, _, rest = text.partition(" ")
    moment = datetime.fromisoformat(stamp)
    assert moment.utcoffset() is not None
    assert moment.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    assert before <= moment <= datetime.now(UTC)
    assert rest == f"({moment.strftime('%A')}, UTC)"


async def test_current_time_shanghai(ctx: ToolContext) -> None:
    text = await current_time.invoke(CurrentTimeArgs(timezone="Asia/Shanghai"), ctx)
    assert "+08:00 (" in text
    assert text.endswith(", Asia/Shanghai)")


def test_describe_time_fixed_moment() -> None:
    moment = datetime(2026, 11, 30, 11, 40, 2, 123456, tzinfo=UTC)
    assert describe_time(moment, load_zone("UTC")) == "2026-11-30T11:40:02+00:00 (Monday, UTC)"
    assert (
        describe_time(moment, load_zone("Asia/Shanghai"))
        == "2026-11-30T19:40:02+08:00 (Monday, Asia/Shanghai)"
    )


def test_zone_names_are_case_insensitive() -> None:
    assert load_zone("asia/shanghai").key == "Asia/Shanghai"


@pytest.mark.parametrize(
    "name",
    ["Mars/Olympus", "Asia/Shangai", "", "../etc/passwd", "/etc/localtime", "America", "a\x00b"],
)
async def test_current_time_unknown_zone(ctx: ToolContext, name: str) -> None:
    with pytest.raises(ToolError, match=r"unknown time zone.*Asia/Shanghai"):
        await current_time.invoke(CurrentTimeArgs(timezone=name), ctx)


def test_unknown_zone_suggests_close_match() -> None:
    with pytest.raises(ToolError, match="Did you mean 'Asia/Shanghai'"):
        load_zone("Asia/Shangai")


# --------------------------------------------------------------------------------------------
# read_file and workspace confinement


async def test_read_file(ctx: ToolContext) -> None:
    (ctx.workspace / "docs").mkdir()
    (ctx.workspace / "docs" / "a.txt").write_text("hello\nworld ✓\n", encoding="utf-8")
    assert await read_file.invoke(ReadFileArgs(path="docs/a.txt"), ctx) == "hello\nworld ✓\n"
    assert read_text_file(ctx.workspace, "./docs/a.txt") == "hello\nworld ✓\n"


async def test_read_file_truncates(ctx: ToolContext) -> None:
    (ctx.workspace / "big.txt").write_text("x" * 100, encoding="utf-8")
    text = await read_file.invoke(ReadFileArgs(path="big.txt", max_chars=10), ctx)
    body, _, note = text.partition("\n\n")
    assert body == "x" * 10
    assert "truncated" in note
    assert "100 bytes" in note
    assert read_text_file(ctx.workspace, "big.txt", max_chars=100) == "x" * 100


def test_read_file_max_chars_bounds() -> None:
    with pytest.raises(ValueError):
        ReadFileArgs(path="a", max_chars=0)
    with pytest.raises(ValueError):
        ReadFileArgs(path="a", max_chars=10**9)


def test_read_file_non_utf8_and_binary_and_empty(ctx: ToolContext) -> None:
    (ctx.workspace / "latin1.txt").write_bytes("café".encode("latin-1"))
    text = read_text_file(ctx.workspace, "latin1.txt")
    assert text.startswith("caf\ufffd")
    assert "not valid UTF-8" in text
    (ctx.workspace / "blob.bin").write_bytes(b"\x00\x01\x02")
    with pytest.raises(ToolError, match="binary"):
        read_text_file(ctx.workspace, "blob.bin")
    (ctx.workspace / "empty.txt").write_text("")
    assert "empty" in read_text_file(ctx.workspace, "empty.txt")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../x", r"'\.\.' is not allowed"),
        ("a/../../x", r"'\.\.' is not allowed"),
        ("/etc/passwd", "absolute paths are not allowed"),
        ("", "empty"),
        ("a\x00b", "NUL"),
        ("missing.txt", "no such file"),
    ],
)
async def test_read_file_refuses_paths(ctx: ToolContext, path: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        read_text_file(ctx.workspace, path)
    if path:  # the args model itself refuses an empty path
        with pytest.raises(ToolError, match=message):
            await read_file.invoke(ReadFileArgs(path=path), ctx)


async def test_read_file_refuses_directory(ctx: ToolContext) -> None:
    (ctx.workspace / "sub").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        await read_file.invoke(ReadFileArgs(path="sub"), ctx)


async def test_symlink_to_outside_file_refused(ctx: ToolContext, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    os.symlink(secret, ctx.workspace / "link.txt")
    with pytest.raises(ToolError, match="outside the workspace"):
        await read_file.invoke(ReadFileArgs(path="link.txt"), ctx)
    # A dangling link to outside is reported as an escape too, not as "missing".
    os.symlink(tmp_path / "nope.txt", ctx.workspace / "dangling.txt")
    with pytest.raises(ToolError, match="outside the workspace"):
        read_text_file(ctx.workspace, "dangling.txt")


async def test_symlinked_directory_escape_refused(ctx: ToolContext, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.txt").write_text("private")
    os.symlink(outside, ctx.workspace / "linked_dir")
    with pytest.raises(ToolError, match="outside the workspace"):
        await read_file.invoke(ReadFileArgs(path="linked_dir/data.txt"), ctx)


async def test_symlink_inside_workspace_allowed(ctx: ToolContext) -> None:
    (ctx.workspace / "real.txt").write_text("ok")
    os.symlink(ctx.workspace / "real.txt", ctx.workspace / "alias.txt")
    assert await read_file.invoke(ReadFileArgs(path="alias.txt"), ctx) == "ok"


def test_symlink_loop_refused(ctx: ToolContext) -> None:
    os.symlink(ctx.workspace / "loop_b", ctx.workspace / "loop_a")
    os.symlink(ctx.workspace / "loop_a", ctx.workspace / "loop_b")
    with pytest.raises(ToolError):
        read_text_file(ctx.workspace, "loop_a")


def test_fifo_refused_without_blocking(ctx: ToolContext) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    os.mkfifo(ctx.workspace / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        read_text_file(ctx.workspace, "pipe")


def test_file_used_as_directory(ctx: ToolContext) -> None:
    (ctx.workspace / "f.txt").write_text("x")
    with pytest.raises(ToolError):
        read_text_file(ctx.workspace, "f.txt/inner")


def test_resolve_in_workspace(ctx: ToolContext) -> None:
    (ctx.workspace / "a.txt").write_text("x")
    root = ctx.workspace.resolve()
    assert resolve_in_workspace(ctx.workspace, "a.txt") == root / "a.txt"
    assert resolve_in_workspace(ctx.workspace, "new.txt", must_exist=False) == root / "new.txt"
    with pytest.raises(ToolError, match="no such file"):
        resolve_in_workspace(ctx.workspace, "new.txt")
    with pytest.raises(ToolError, match=r"'\.\.'"):
        resolve_in_workspace(ctx.workspace, "../new.txt", must_exist=False)
