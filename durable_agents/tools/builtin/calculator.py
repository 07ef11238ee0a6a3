"""The `calculator` tool: safe arithmetic by walking the Python AST (never `eval`/`exec`).

Why a tool: models are unreliable at exact arithmetic, and an agent loop should be able to hand
`17 * 25` to something that is always right. Why an AST walker: `eval` on model-written text is
remote code execution; here only number literals, `+ - * / // % **`, unary `+ -`, parentheses and
the functions in `FUNCTIONS` are understood, and everything else is refused with a `ToolError`
that names the offending construct so the model can rephrase.

Resource bounds (so no expression can be a CPU or memory bomb):

* the expression is at most `MAX_EXPRESSION_LENGTH` characters and `MAX_DEPTH` levels of
  nesting (a long flat chain such as `1 + 2 + ... + 99` counts as one level);
* an exponent's magnitude is at most `MAX_EXPONENT` (so `9**9**9` fails at once);
* integers have at most `MAX_INT_DIGITS` digits; for `**` and `*` this is checked from bit
  lengths *before* the big number is computed, and every intermediate result is checked after;
* floats must stay finite (overflow and `inf` are refused), complex results are refused;
* `round(x, n)` takes `|n| <= MAX_ROUND_DIGITS`.

Result formatting (`format_result`): integers are printed exactly (`17*25` -> "425"); floats are
printed with up to 15 significant digits and no trailing zeros, so `1/4` -> "0.25",
`0.1+0.2` -> "0.3" and a whole-valued float prints like an integer: `10/2` -> "5". Very large or
small floats use exponent notation (`2.0**100` -> "1.26765060022823e+30").
"""

from __future__ import annotations

import ast
import math
import warnings
from collections.abc import Callable
from datetime import timedelta

from pydantic import BaseModel, Field

from durable_agents.tools.definition import ToolError, tool

MAX_EXPRESSION_LENGTH = 500
MAX_DEPTH = 50
MAX_EXPONENT = 1000
MAX_INT_DIGITS = 1000
MAX_ROUND_DIGITS = 100

_INT_LIMIT = 10**MAX_INT_DIGITS  # an int is allowed when abs(value) < _INT_LIMIT
_INT_LIMIT_BITS = _INT_LIMIT.bit_length()

Number = int | float

_BINARY_SYMBOLS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.BitAnd: "&",
    ast.MatMult: "@",
}

# Friendly names for constructs that are refused, so the error says what was wrong.
_REFUSED_NODES: dict[type[ast.AST], str] = {
    ast.Attribute: "attribute access (a.b)",
    ast.Subscript: "indexing/subscripts (a[b])",
    ast.Compare: "comparisons (<, ==, ...)",
    ast.BoolOp: "boolean operators (and/or)",
    ast.Lambda: "lambda functions",
    ast.IfExp: "conditional expressions (x if c else y)",
    ast.List: "lists",
    ast.Tuple: "tuples (a comma outside a function call)",
    ast.Set: "sets",
    ast.Dict: "dicts",
    ast.ListComp: "comprehensions",
    ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions",
    ast.GeneratorExp: "generator expressions",
    ast.JoinedStr: "f-strings",
    ast.NamedExpr: "assignment expressions (:=)",
    ast.Starred: "star arguments (*x)",
    ast.Await: "await expressions",
    ast.Yield: "yield expressions",
    ast.YieldFrom: "yield expressions",
    ast.Slice: "slices",
}


class CalculatorArgs(BaseModel):
    """Arguments of the `calculator` tool."""

    expression: str = Field(
        description=(
            "An arithmetic expression, e.g. '17 * 25' or '(2 + 3) ** 2 / 7'. Supports numbers, "
            "+ - * / // % ** (power; ^ is not power), parentheses and the functions "
            "abs, round, min, max, sqrt."
        ),
        max_length=MAX_EXPRESSION_LENGTH,
    )


def _check_number(value: object) -> Number:
    """Accept only finite floats and ints of bounded size; refuse everything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        if isinstance(value, complex):
            raise ToolError("the result would be a complex number; only real numbers are supported")
        raise ToolError(f"unsupported value of type {type(value).__name__}")
    if isinstance(value, float):
        if math.isnan(value):
            raise ToolError("the result is not a number (NaN)")
        if math.isinf(value):
            raise ToolError("a number is too large for a float (overflow to infinity)")
        return 0.0 if value == 0 else value  # normalise -0.0 so it prints as "0"
    if abs(value) >= _INT_LIMIT:
        raise ToolError(f"an integer result has more than {MAX_INT_DIGITS} digits; refused")
    return value


def _too_many_digits() -> ToolError:
    return ToolError(f"the result would have more than {MAX_INT_DIGITS} digits; refused")


def _power(base: Number, exponent: Number) -> Number:
    """`base ** exponent` with the exponent and result-size checks done before computing."""
    if abs(exponent) > MAX_EXPONENT:
        raise ToolError(
            f"exponent {format_result(exponent)} is too large (its magnitude must be at most "
            f"{MAX_EXPONENT})"
        )
    if base < 0 and isinstance(exponent, float) and not exponent.is_integer():
        raise ToolError(
            "a negative number to a fractional power is a complex number; only real numbers are "
            "supported"
        )
    # abs(base) >= 2**(bits-1), so an int power has at least (bits-1)*exponent bits.
    if (
        isinstance(base, int)
        and isinstance(exponent, int)
        and exponent > 0
        and (abs(base).bit_length() - 1) * exponent > _INT_LIMIT_BITS
    ):
        raise _too_many_digits()
    if base == 0 and exponent < 0:
        raise ToolError("division by zero (zero to a negative power)")
    return base**exponent


def _multiply(left: Number, right: Number) -> Number:
    """`left * right`, refusing integer products whose size is known to be too big."""
    if (
        isinstance(left, int)
        and isinstance(right, int)
        and left != 0
        and right != 0
        # The product has at least bits(left) + bits(right) - 1 bits.
        and left.bit_length() + right.bit_length() - 1 > _INT_LIMIT_BITS
    ):
        raise _too_many_digits()
    return left * right


def _divide(op: Callable[[Number, Number], Number]) -> Callable[[Number, Number], Number]:
    """Wrap a division-like operator with an explicit, clearly reported zero check."""

    def run(left: Number, right: Number) -> Number:
        if right == 0:
            raise ToolError("division by zero")
        return op(left, right)

    return run


_BINARY_OPS: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: _multiply,
    ast.Div: _divide(lambda a, b: a / b),
    ast.FloorDiv: _divide(lambda a, b: a // b),
    ast.Mod: _divide(lambda a, b: a % b),
    ast.Pow: _power,
}


def _sqrt(value: Number) -> Number:
    if value < 0:
        raise ToolError("sqrt of a negative number is not a real number")
    return math.sqrt(value)


def _round(value: Number, ndigits: Number | None = None) -> Number:
    if ndigits is None:
        return round(value)
    if not isinstance(ndigits, int):
        raise ToolError("round(x, n): n must be an integer")
    if abs(ndigits) > MAX_ROUND_DIGITS:
        raise ToolError(
            f"round(x, n): n must be between -{MAX_ROUND_DIGITS} and {MAX_ROUND_DIGITS}"
        )
    return round(value, ndigits)


# name -> (function, minimum argument count, maximum argument count or None for unbounded)
FUNCTIONS: dict[str, tuple[Callable[..., Number], int, int | None]] = {
    "abs": (abs, 1, 1),
    "round": (_round, 1, 2),
    "min": (lambda *xs: min(xs), 1, None),
    "max": (lambda *xs: max(xs), 1, None),
    "sqrt": (_sqrt, 1, 1),
}
_FUNCTION_LIST = ", ".join(FUNCTIONS)


def _call(node: ast.Call, depth: int) -> Number:
    if not isinstance(node.func, ast.Name):
        raise ToolError(
            f"only calls of the functions {_FUNCTION_LIST} are allowed (no methods or attributes)"
        )
    name = node.func.id
    if name not in FUNCTIONS:
        raise ToolError(f"function {name!r} is not allowed; available functions: {_FUNCTION_LIST}")
    if node.keywords:
        raise ToolError(f"{name}() takes no keyword arguments")
    function, least, most = FUNCTIONS[name]
    if len(node.args) < least or (most is not None and len(node.args) > most):
        if most is None:
            expected = f"at least {least}"
        elif least == most:
            expected = str(least)
        else:
            expected = f"{least} to {most}"
        raise ToolError(f"{name}() takes {expected} argument(s), got {len(node.args)}")
    values = [_eval(arg, depth + 1) for arg in node.args]
    return function(*values)


def _binary_operator(node: ast.BinOp) -> Callable[[Number, Number], Number]:
    op = _BINARY_OPS.get(type(node.op))
    if op is None:
        symbol = _BINARY_SYMBOLS.get(type(node.op), type(node.op).__name__)
        hint = " (use ** for powers)" if symbol == "^" else ""
        raise ToolError(f"operator {symbol!r} is not allowed{hint}")
    return op


def _binary_chain(node: ast.BinOp, depth: int) -> Number:
    """Evaluate a left-associative chain like `1 + 2 - 3 * 4 + ...` iteratively.

    The parser nests `a + b + c` as `(a + b) + c`; walking the left spine in a loop means a long
    sum counts as one level of depth, so `MAX_DEPTH` limits real nesting (parentheses, powers,
    unary signs, calls) and not the number of terms.
    """
    spine: list[ast.BinOp] = [node]
    while isinstance(spine[-1].left, ast.BinOp):
        spine.append(spine[-1].left)
    for item in spine:
        _binary_operator(item)  # refuse a disallowed operator before computing anything
    value = _eval(spine[-1].left, depth + 1)
    for item in reversed(spine):
        right = _eval(item.right, depth + 1)
        value = _check_number(_binary_operator(item)(value, right))
    return value


def _eval(node: ast.AST, depth: int) -> Number:
    """Evaluate one node; every result goes through `_check_number`."""
    if depth > MAX_DEPTH:
        raise ToolError(f"the expression is nested too deeply (more than {MAX_DEPTH} levels)")
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            kind = "string" if isinstance(value, str | bytes) else type(value).__name__
            raise ToolError(f"{kind} literals are not allowed; only numbers")
        return _check_number(value)
    if isinstance(node, ast.BinOp):
        return _binary_chain(node, depth)
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, depth + 1)
        if isinstance(node.op, ast.USub):
            return _check_number(-operand)
        if isinstance(node.op, ast.UAdd):
            return _check_number(+operand)
        symbol = "not" if isinstance(node.op, ast.Not) else "~"
        raise ToolError(f"operator {symbol!r} is not allowed")
    if isinstance(node, ast.Call):
        return _check_number(_call(node, depth))
    if isinstance(node, ast.Name):
        if node.id in FUNCTIONS:
            raise ToolError(f"{node.id!r} is a function; call it, e.g. {node.id}(-2)")
        raise ToolError(f"names/variables such as {node.id!r} are not allowed; only numbers")
    what = _REFUSED_NODES.get(type(node), type(node).__name__)
    raise ToolError(f"{what} are not allowed in a calculator expression")


def evaluate(expression: str) -> int | float:
    """Evaluate an arithmetic expression safely; raise `ToolError` for anything else.

    Pure and synchronous (easy to test); the `calculator` tool is a thin wrapper.
    """
    text = expression.strip()
    if not text:
        raise ToolError("the expression is empty")
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise ToolError(f"the expression is longer than {MAX_EXPRESSION_LENGTH} characters")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. SyntaxWarning for odd literals
            tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        where = f" at column {exc.offset}" if exc.offset else ""
        raise ToolError(f"not a valid arithmetic expression: {exc.msg}{where}") from None
    except (ValueError, RecursionError, MemoryError):
        raise ToolError("not a valid arithmetic expression (it could not be parsed)") from None
    try:
        return _eval(tree.body, 0)
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    except OverflowError:
        raise ToolError("a number is too large for a float (overflow)") from None
    except RecursionError:
        raise ToolError("the expression is nested too deeply") from None


def format_result(value: int | float) -> str:
    """Ints exactly; floats with up to 15 significant digits, trailing zeros trimmed."""
    if isinstance(value, int):
        return str(value)
    return format(value, ".15g")


# A local activity (`ToolOptions.local`): pure, bounded (see the resource bounds above) and
# idempotent, so it runs in the workflow's worker and costs one marker event, not a task-queue
# round trip and three activity events.
@tool(start_to_close_timeout=timedelta(seconds=5), local=True)
async def calculator(args: CalculatorArgs) -> str:
    """Evaluate an arithmetic expression exactly and return the result as text.

    Use it for any arithmetic instead of computing in your head. Supports integers and
    decimals, + - * / (true division) // (floor division) % (remainder) ** (power; ^ is not
    power), unary minus, parentheses, and abs(x), round(x[, n]), min(a, b, ...),
    max(a, b, ...), sqrt(x). Example: "(17 * 25 + 3) / 4" returns "107".
    """
    return format_result(evaluate(args.expression))
