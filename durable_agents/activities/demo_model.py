"""The offline demo model: a small deterministic policy that needs no API key.

It answers through the same `call_model` activity and returns the same `ModelReply` shape as a
real model, so a newcomer sees the whole flow (model turn, tool activity, model turn, answer) in
the Web UI without any account:
- arithmetic in the prompt -> a `calculator` call, then "The answer is ...";
- a question about the time or date -> a `current_time` call, then "It is now ...";
- "write <text> to <file>" -> a `write_file` call, which waits for a person's approval;
- "ask me ..." -> an `ask_user` question, which waits for a person's reply;
- "research ..." or "delegate ..." with the `researcher` agent offered -> a call of that agent
  (a child run), then its report;
- in plan-and-execute mode: "A, then B" -> a plan of those steps (arithmetic ones as
  `calculator` tool actions, "add 8 to it" on `${steps.<n>.result}`; the others as goals, each
  worked on as a prompt), and a synthesis of the results; "A, then add 8 to it" in ReAct mode:
  one calculator call per part, each on the previous result;
- anything else -> a plain reply.

A system prompt that says "double-check" makes it check a calculation with a second calculator
call, and one that says "terse" makes it answer a calculation with the bare number (the
evals-from-runs how-to reruns recorded runs with such a prompt and shows what changed).

The harder cases of the evaluation suite (`evals/seed_cases.yaml`, run by `agent eval`) have
their own rules in the section "Evaluation scenarios" below, consulted first: a missing number
asked for with `ask_user`, a calculator error recovered from, a rejected write redone where the
reviewer said, a chain of calculations one call per turn.
"""

from __future__ import annotations

import json
import re

from durable_agents.contracts.messages import ChatMessage, ToolCall
from durable_agents.contracts.model_io import ModelReply, ModelRequest
from durable_agents.contracts.usage import TokenUsage
from durable_agents.loop.plan_expect import CHECK_TOOL
from durable_agents.loop.tokens import estimate_messages_tokens, estimate_tokens

DEMO_MODEL_NAME = "demo-offline"

_ARITHMETIC = re.compile(r"[-+(]*\d[\d.\s]*(?:[-+*/%^x×÷]+\s*[-+(]*\s*\d[\d.\s)]*)+")
_WRITE = re.compile(
    r"\b(?:write|save|put)\s+(?P<q>[\"']?)(?P<text>.+?)(?P=q)\s+(?:to|in|into)\s+"
    r"(?:the\s+)?(?:file\s+)?(?P<path>[\w./-]+\w)",
    re.IGNORECASE,
)
_ASK_ME = re.compile(r"\bask me\b", re.IGNORECASE)
_TIME_WORDS = re.compile(r"\b(time|date|day|today|clock|hour)\b", re.IGNORECASE)
_WORD_OPERATORS = (
    (re.compile(r"\btimes\b|\bmultiplied by\b", re.I), "*"),
    (re.compile(r"\bplus\b", re.I), "+"),
    (re.compile(r"\bminus\b", re.I), "-"),
    (re.compile(r"\bdivided by\b", re.I), "/"),
)


def find_expression(prompt: str) -> str | None:
    """The first arithmetic expression in `prompt` ("what is 17 * 25?" -> "17 * 25")."""
    text = prompt
    for pattern, symbol in _WORD_OPERATORS:
        text = pattern.sub(symbol, text)
    match = _ARITHMETIC.search(text)
    if not match:
        return None
    expression = match.group(0).strip().replace("×", "*").replace("÷", "/").replace("^", "**")
    expression = re.sub(r"(?<=\d)\s*x\s*(?=\d)", " * ", expression)
    return expression if any(op in expression for op in "+-*/%") else None


class DemoChatModel:
    """Deterministic offline policy behind the `ChatModel` interface."""

    default_model = DEMO_MODEL_NAME

    async def complete(self, request: ModelRequest) -> ModelReply:
        available = {t.name for t in request.tools}
        messages = request.messages
        last = messages[-1]
        prompt = next((m.content or "" for m in reversed(messages) if m.role == "user"), "")
        prompt = step_goal(prompt) or prompt
        move = (
            composition_move(request, prompt, messages, available)
            or scenario_move(prompt, messages, available)
            or weather_move(prompt, messages, available)
            or system_prompt_move(messages, available)
        )
        if isinstance(move, ToolCall):
            return self._reply(messages, call=move)
        if isinstance(move, str):
            return self._reply(messages, content=move)
        if last.role == "tool":
            tool_name = self._tool_name_for(last.tool_call_id, messages)
            text = self._summarise(tool_name, last.content or "")
            return self._reply(messages, content=text)
        expression = find_expression(prompt)
        if expression and "calculator" in available:
            args = json.dumps({"expression": expression})
            return self._reply(messages, call=ToolCall(id="", name="calculator", arguments=args))
        write = _WRITE.search(prompt)
        if write and "write_file" in available:
            args = json.dumps({"path": write.group("path"), "content": write.group("text")})
            return self._reply(messages, call=ToolCall(id="", name="write_file", arguments=args))
        if _ASK_ME.search(prompt) and "ask_user" in available:
            args = json.dumps({"question": "What would you like me to know?"})
            return self._reply(messages, call=ToolCall(id="", name="ask_user", arguments=args))
        if _TIME_WORDS.search(prompt) and "current_time" in available:
            args = json.dumps({"timezone": "UTC"})
            return self._reply(messages, call=ToolCall(id="", name="current_time", arguments=args))
        return self._reply(
            messages,
            content=(
                f"(offline demo model) You said: {prompt!r}. I can do arithmetic (calculator), "
                "tell the time (current_time), write a file with your approval ('write hello to "
                "notes.txt') and ask you a question ('ask me something'). Set OPENAI_API_KEY on "
                "the worker to use a real model."
            ),
        )

    @staticmethod
    def _tool_name_for(call_id: str | None, messages: list[ChatMessage]) -> str:
        for message in reversed(messages):
            for call in message.tool_calls:
                if call.id == call_id:
                    return call.name
        return ""

    @staticmethod
    def _summarise(tool_name: str, observation: str) -> str:
        if observation.startswith("Error:"):
            return f"The {tool_name or 'tool'} could not help: {observation}"
        if tool_name == "calculator":
            return f"The answer is {observation}."
        if tool_name == "current_time":
            return f"It is now {observation}."
        if tool_name == "ask_user":
            return f"Thank you. You told me: {observation}"
        outcome = observation.splitlines()[-1] if observation else ""
        if tool_name == "write_file" and outcome.startswith("wrote"):
            edited = " (with the arguments a reviewer edited)" if outcome != observation else ""
            return f"Done: I {outcome}{edited}."
        return f"The {tool_name or 'tool'} returned: {observation}"

    def _reply(
        self,
        messages: list[ChatMessage],
        *,
        content: str | None = None,
        call: ToolCall | None = None,
    ) -> ModelReply:
        turn = sum(1 for m in messages if m.role == "assistant") + 1
        calls = [call.model_copy(update={"id": f"demo_call_{turn}"})] if call else []
        # Usage is the estimate the workflow's context fitting uses, so the figures agree.
        prompt_tokens = estimate_messages_tokens(messages)
        completion_tokens = estimate_tokens(
            ChatMessage(role="assistant", content=content, tool_calls=calls)
        )
        return ModelReply(
            model=DEMO_MODEL_NAME,
            content=content,
            tool_calls=calls,
            finish_reason="tool_calls" if call else "stop",
            usage=TokenUsage(
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                total_tokens=prompt_tokens + completion_tokens,
            ),
        )


# -- Evaluation scenarios ------------------------------------------------------------------------
# Rules for the seed suite's harder cases (`evals/seed_cases.yaml`, run by `agent eval`), so the
# suite passes offline the way a real model would pass it. `scenario_move` is asked first; None
# falls through to the basic rules of `DemoChatModel`. Other rule sets belong in sections of
# their own beside this one.

Move = ToolCall | str
"""A tool call to make, or the answer."""

_VERBATIM = re.compile(
    r"(?P<q>['\"`])(?P<text>[^'\"`]{1,200})(?P=q)[^.?!]*?\bexactly as (?:written|given)\b",
    re.IGNORECASE,
)
_THEN = re.compile(r"\bthen\b", re.IGNORECASE)
_SPLIT = re.compile(r"\bsplit\b", re.IGNORECASE)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_WRITE_RESULT = re.compile(
    r"\bwrite (?:the|that|this) (?:result|answer) (?:to|in|into) (?:the )?(?:file )?"
    r"(?P<path>[\w./-]+\w)",
    re.IGNORECASE,
)
_PATH = re.compile(r"[\w/-]+\.[A-Za-z0-9]{2,8}\b")
_REJECTED = re.compile(r"^Rejected by [^:]*: (?P<reason>.*?)\. The \w+ call was not run", re.S)
_COUNT_WORDS = {
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}


def find_expressions(prompt: str) -> list[str]:
    """Every arithmetic expression in `prompt`, in order ("1 + 1, then 2 + 2" -> two)."""
    text = prompt
    for pattern, symbol in _WORD_OPERATORS:
        text = pattern.sub(symbol, text)
    found = []
    for match in _ARITHMETIC.finditer(text):
        expression = match.group(0).strip().rstrip(".").strip()
        expression = expression.replace("×", "*").replace("÷", "/").replace("^", "**")
        expression = re.sub(r"(?<=\d)\s*x\s*(?=\d)", " * ", expression)
        if any(op in expression for op in "+-*/%"):
            found.append(expression)
    return found


def scenario_move(prompt: str, messages: list[ChatMessage], available: set[str]) -> Move | None:
    """The evaluation scenarios' next move for this conversation, or None (not one of them)."""
    since = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), 0)
    turn = messages[since:]
    last = messages[-1]
    if last.role != "tool":
        return _first_move(prompt, available)
    call = _call_for(last.tool_call_id, turn)
    if call is None:
        return None
    return _after_tool(prompt, call, last.content or "", turn, available)


def _call(name: str, **args: str) -> ToolCall:
    return ToolCall(id="", name=name, arguments=json.dumps(args))


def _args(call: ToolCall) -> dict[str, object]:
    try:
        value = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _call_for(call_id: str | None, turn: list[ChatMessage]) -> ToolCall | None:
    for message in reversed(turn):
        for call in message.tool_calls:
            if call.id == call_id:
                return call
    return None


def _first_move(prompt: str, available: set[str]) -> Move | None:
    """Missing information, a verbatim expression, a chain, or compute-then-write."""
    if "calculator" in available:
        verbatim = _VERBATIM.search(prompt)
        if verbatim:  # the prompt asks for this exact text: it may well fail
            return _call("calculator", expression=verbatim.group("text"))
        expressions = find_expressions(prompt)
        if len(expressions) >= 2 and _THEN.search(prompt):
            return _call("calculator", expression=expressions[0])
        if expressions and "write_file" in available and _WRITE_RESULT.search(prompt):
            return _call("calculator", expression=expressions[0])
        if (
            _SPLIT.search(prompt)
            and "ask_user" in available
            and not expressions
            and len(_NUMBER.findall(prompt)) == 1
        ):
            return _call("ask_user", question="How many people share it, you included?")
    return None


def _after_tool(
    prompt: str, call: ToolCall, observation: str, turn: list[ChatMessage], available: set[str]
) -> Move | None:
    if call.name == "calculator":
        if observation.startswith("Error:"):
            return _fixed_expression(call, turn)
        return _after_calculation(prompt, observation, turn, available)
    if call.name == "ask_user" and _SPLIT.search(prompt) and "calculator" in available:
        count = _count_in(observation)
        total = _NUMBER.findall(prompt)
        if count and len(total) == 1:
            return _call("calculator", expression=f"{total[0]} / {count}")
    if call.name == "write_file" and "write_file" in available:
        return _write_where_the_reviewer_said(call, observation, turn)
    return None


def _fixed_expression(failed: ToolCall, turn: list[ChatMessage]) -> Move | None:
    """Recover from a calculator error by rewriting the expression (`17 x 25` -> `17 * 25`),
    once; an expression that cannot be rewritten (`1/0`) falls through to the plain summary."""
    original = str(_args(failed).get("expression", ""))
    fixed = find_expression(original)
    tried = {
        str(_args(c).get("expression", "")).replace(" ", "")
        for m in turn
        for c in m.tool_calls
        if c.name == "calculator"
    }
    if fixed is None or fixed.replace(" ", "") in tried:
        return None
    return _call("calculator", expression=fixed)


def _after_calculation(
    prompt: str, observation: str, turn: list[ChatMessage], available: set[str]
) -> Move | None:
    expressions = find_expressions(prompt)
    if len(expressions) >= 2 and _THEN.search(prompt):
        results = _calculator_results(turn)
        if len(results) < len(expressions):
            return _call("calculator", expression=expressions[len(results)])
        return f"The results are {', '.join(results)}."
    write = _WRITE_RESULT.search(prompt)
    if write and "write_file" in available:
        return _call("write_file", path=write.group("path"), content=observation)
    return None


def _calculator_results(turn: list[ChatMessage]) -> list[str]:
    """The results of the calculator calls that succeeded, in order."""
    names = {c.id: c.name for m in turn for c in m.tool_calls}
    return [
        m.content or ""
        for m in turn
        if m.role == "tool"
        and names.get(m.tool_call_id or "") == "calculator"
        and not (m.content or "").startswith("Error:")
    ]


def _count_in(reply: str) -> int | None:
    """How many people a reply names ("4 of us", "four")."""
    digits = _NUMBER.search(reply)
    if digits:
        count = float(digits.group(0))
        return int(count) if count.is_integer() and count > 0 else None
    words = re.findall(r"[a-z]+", reply.lower())
    return next((_COUNT_WORDS[w] for w in words if w in _COUNT_WORDS), None)


def _write_where_the_reviewer_said(
    rejected: ToolCall, observation: str, turn: list[ChatMessage]
) -> Move | None:
    """A write rejected with a reason naming another file: write the same content there."""
    reason = _REJECTED.match(observation)
    if reason is None:
        return None
    tried = {str(_args(c).get("path", "")) for m in turn for c in m.tool_calls}
    path = next((p for p in _PATH.findall(reason.group("reason")) if p not in tried), None)
    if path is None:
        return None
    return _call("write_file", path=path, content=str(_args(rejected).get("content", "")))


# -- Plan-and-execute and delegation ---------------------------------------------------------------
# So `make run` shows both without a key: a plan of the prompt's "then" parts, each step's goal
# worked on as a prompt, a synthesis of the results; a research request handed to `researcher`.

_STEP = re.compile(r"^Your step \(\d+ of \d+\): (?P<goal>.+)$", re.MULTILINE)
_REQUEST = re.compile(r"^Request: (?P<request>.+)$", re.MULTILINE)
_PARTS = re.compile(r"\s*(?:[,;]\s*)?(?:\band then\b|\bthen\b|;)\s*", re.IGNORECASE)
_ON_IT = re.compile(
    r"\b(?P<op>add|plus|subtract|minus|multiply|times|divide)\b\D*?(?P<n>\d+(?:\.\d+)?)",
    re.IGNORECASE,
)
_OPERATORS = {"add": "+", "plus": "+", "subtract": "-", "minus": "-", "multiply": "*"}
_DELEGATE = re.compile(r"\b(research|delegate)\b", re.IGNORECASE)
_RESULTS = "Results of the earlier steps:"
_IT = re.compile(r"\bit\b", re.IGNORECASE)
_TOOL_LINE = re.compile(r"^- (?P<name>[\w.-]+)[(:]", re.MULTILINE)
_NUMBERED_FROM = re.compile(r"numbered from (?P<n>\d+)")


def step_goal(prompt: str) -> str | None:
    """A plan step's goal, when `prompt` is what a plan-and-execute step is told; a goal that
    works on the previous result ("add 8 to it") becomes arithmetic on that result's number."""
    match = _STEP.search(prompt)
    if match is None:
        return None
    goal = match.group("goal").strip()
    told = prompt[: match.start()]
    results = told.split(_RESULTS, 1)[1].split("\n\n")[0] if _RESULTS in told else ""
    numbers = _NUMBER.findall(results)
    on_it = on_previous(goal)
    if on_it and numbers and not find_expression(goal):
        return f"What is {on_it.replace('{it}', numbers[-1])}?"
    return goal


def on_previous(part: str) -> str | None:
    """A part that works on the previous result ("add 8 to it") as arithmetic on `{it}`
    (`{it} + 8`), else None."""
    on_it = _ON_IT.search(part)
    if on_it is None or not _IT.search(part):
        return None
    operator = _OPERATORS.get(on_it.group("op").lower(), "*" if "tim" in part else "/")
    return f"{{it}} {operator} {on_it.group('n')}"


def plan_steps(request: str) -> list[str]:
    """The steps of a request: its "then" parts ("17 * 25, then add 8 to it" -> two)."""
    parts = [p.strip(" ,.") for p in _PARTS.split(request) if p.strip(" ,.")]
    return parts or [request]


def chain(parts: list[str]) -> list[str] | None:
    """The calculation of each part, when every part is one ("17 * 25", then "add 8 to it" ->
    `17 * 25`, `{it} + 8`, where `{it}` is the previous result), else None."""
    found: list[str] = []
    for part in parts:
        expression = find_expression(part) or (on_previous(part) if found else None)
        if expression is None:
            return None
        found.append(expression)
    return found


def planned_step(part: str, number: int, calculation: str | None) -> dict[str, object]:
    """One step of the demo's plan: a calculator action (`{it}` the previous step's result, as
    a reference; no goal: the call is its label), or a goal."""
    if calculation is None:
        return {"goal": part}
    expression = calculation.replace("{it}", f"${{steps.{number - 1}.result}}")
    return {"tool": "calculator", "args": {"expression": expression}}


def demo_plan(planning_prompt: str) -> dict[str, object]:
    """The demo's plan (or revision) for a planning request: the request's "then" parts, each a
    calculator action when it is arithmetic and the calculator is offered, else a goal; a
    revision gives the parts from the first step not done. A plan of calculations states its
    answer as a template over their results, so no synthesis call is needed."""
    found = _REQUEST.search(planning_prompt)
    parts = plan_steps(found.group("request") if found else planning_prompt)
    offered = {m.group("name") for m in _TOOL_LINE.finditer(planning_prompt)}
    calculations = chain(parts) if "calculator" in offered else None
    numbered = _NUMBERED_FROM.search(planning_prompt)
    first = int(numbered.group("n")) if numbered else 1
    todo = list(enumerate(parts, start=1))[first - 1 :] or list(enumerate(parts, start=1))[-1:]
    steps = [
        planned_step(part, number, calculations[number - 1] if calculations else None)
        for number, part in todo
    ]
    if not calculations:
        return {"steps": steps}
    return {"steps": steps, "answer": planned_answer(calculations)}


def planned_answer(calculations: list[str]) -> str:
    """The answer template of a plan of calculations, worded as the demo's ReAct answers: the
    last result when the steps work on earlier results, else every result."""
    if any("{it}" in c for c in calculations):
        return f"The answer is ${{steps.{len(calculations)}.result}}."
    results = ", ".join(f"${{steps.{n}.result}}" for n in range(1, len(calculations) + 1))
    return f"The results are {results}."


def chained_move(prompt: str, messages: list[ChatMessage], available: set[str]) -> Move | None:
    """ReAct on a chain that works on earlier results ("17 * 25, then add 8 to it"): one
    calculator call per turn, each on the previous result, then the last result."""
    calculations = chain(plan_steps(prompt)) if "calculator" in available else None
    if not calculations or len(calculations) < 2 or all("{it}" not in c for c in calculations):
        return None
    since = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), 0)
    results = _calculator_results(messages[since:])
    if len(results) >= len(calculations):
        return f"The answer is {results[-1]}."
    expression = calculations[len(results)].replace("{it}", results[-1] if results else "0")
    return _call("calculator", expression=expression)


def composition_move(
    request: ModelRequest, prompt: str, messages: list[ChatMessage], available: set[str]
) -> Move | None:
    """The demo's move for planning, checking a step, synthesis, delegation and chained
    calculations, or None."""
    if request.purpose == "plan" and "submit_plan" in available:
        return ToolCall(id="", name="submit_plan", arguments=json.dumps(demo_plan(prompt)))
    if request.purpose == "plan" and CHECK_TOOL in available:
        verdict = {"met": True, "reason": "(offline demo model) the result looks right"}
        return ToolCall(id="", name=CHECK_TOOL, arguments=json.dumps(verdict))
    if request.purpose == "synthesis":
        results = prompt.split("What the steps found:")[-1].split("Write the final answer")[0]
        return "Here is what the plan's steps found:\n" + results.strip()
    if (
        "researcher" in available
        and _DELEGATE.search(prompt)
        and not any(m.role == "tool" for m in messages)
    ):
        return _call("researcher", task=prompt)
    if request.purpose == "turn":
        return chained_move(prompt, messages, available)
    return None


# -- The weather -----------------------------------------------------------------------------------
# The seed suite's `service_recovers` case: the `weather` tool's demo service fails the call's
# first request (retried by Temporal, a transient failure); the answer is the weather it gives.

_WEATHER = re.compile(
    r"\bweather\b.*?\b(?:in|at|for)\s+(?P<city>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)", re.DOTALL
)


def weather_move(prompt: str, messages: list[ChatMessage], available: set[str]) -> Move | None:
    """A question about the weather in a (capitalised) city -> a `weather` call; its result ->
    the answer (an error -> what went wrong). None for anything else."""
    if "weather" not in available:
        return None
    last = messages[-1]
    if last.role == "tool":
        users = [i for i, message in enumerate(messages) if message.role == "user"]
        since = users[-1] if users else 0
        call = _call_for(last.tool_call_id, messages[since:])
        if call is None or call.name != "weather":
            return None
        observation = last.content or ""
        if observation.startswith("Error:"):
            return f"I could not get the weather: {observation}"
        return f"The weather in {observation}."
    found = _WEATHER.search(prompt)
    return _call("weather", city=found.group("city")) if found else None


# -- System prompt rules -------------------------------------------------------------------------
# What a run's system prompt changes, so that an evaluation of recorded runs against another
# prompt (`agent eval --from-runs --system-prompt ...`, docs/how-to/evals-from-runs.md) has
# something to show offline: a different answer, and a tool call the recorded run never made.

_TERSE = re.compile(r"\bterse\b", re.IGNORECASE)
_DOUBLE_CHECK = re.compile(r"\bdouble-check\b", re.IGNORECASE)


def system_prompt_move(messages: list[ChatMessage], available: set[str]) -> Move | None:
    """After a calculation: with "double-check" in the system prompt, one more calculator call
    that checks it (the result minus the expression), then the answer "... (checked)"; with
    "terse", the bare number. None without such a prompt, or before any calculation."""
    system = " ".join(m.content or "" for m in messages if m.role == "system")
    terse, check = _TERSE.search(system), _DOUBLE_CHECK.search(system)
    if not (terse or check) or messages[-1].role != "tool":
        return None
    since = max((i for i, m in enumerate(messages) if m.role == "user"), default=0)
    turn = messages[since:]
    results = _calculator_results(turn)
    calls = [c for m in turn for c in m.tool_calls if c.name == "calculator"]
    if not results:
        return None
    if check and len(calls) == 1 and "calculator" in available:
        expression = _args(calls[0]).get("expression", "")
        return _call("calculator", expression=f"{results[0]} - ({expression})")
    if terse:
        return results[0]
    return f"The answer is {results[0]} (checked)."
