"""The suite file of `agent eval`: scenarios, what each expects, and the people it scripts.

A suite is YAML (see `evals/seed_cases.yaml`)::

    name: seed cases
    defaults: {max_iterations: 6}        # AgentInput fields for every scenario
    prices:                              # US dollars per million tokens, for the cost
      gpt-4o-mini: {input_per_million: 0.15, output_per_million: 0.6}
    scenarios:
      - name: normal
        tags: [normal]
        prompt: What is 17 * 25?
        input: {tools: [calculator]}     # more AgentInput fields (over the defaults)
        expect:
          answer_contains: "425"
          tools_called: [calculator]
          stop_reason: completed
          max_steps: 2
        people:                          # scripted people, in order of preference
          - {action: reply, text: "There are 4 of us"}
          - {action: reject, tool: write_file, reason: "not there", times: 1}
          - {action: approve, tool: write_file}
          - {action: cancel, after_steps: 1}

`load_suite` checks it all before anything starts: YAML syntax, unknown or misspelt fields,
each scenario's run input against `AgentInput`, regular expressions, duplicate names. Each
problem names the scenario and the field.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from durable_agents.contracts.agent_input import AgentInput
from durable_agents.contracts.agent_result import StopReason
from durable_agents.contracts.budgets import ModelPrice
from durable_agents.contracts.usage import TokenUsage

Ending = Literal["completed", "failed", "cancelled", "terminated", "timed_out"]
"""How a run ended: completed (it has a result, whatever its stop reason) or not."""

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
"""Scenario names go into workflow ids: letters, digits, `_`, `.`, `-`."""

RESERVED_INPUT = ("prompt", "model")
"""Input fields a scenario sets elsewhere: `prompt` at the scenario's top level, the model with
`--model` or the suite's `models`, so that every model runs the same scenarios."""


class SuiteError(Exception):
    """A suite file that cannot be run; `problems` are one line each (`where: what`)."""

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        super().__init__(f"{path}: " + "; ".join(problems))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Responder(_Strict):
    tool: str | None = Field(default=None, description="Only requests of this tool.")
    times: int | None = Field(
        default=None, ge=1, description="Answer at most this many requests; default: all."
    )


class ApprovePerson(_Responder):
    """Approves pending approvals (optionally with edited arguments)."""

    action: Literal["approve"]
    args: dict[str, Any] | None = None
    comment: str | None = None


class RejectPerson(_Responder):
    """Rejects pending approvals; the model reads the reason."""

    action: Literal["reject"]
    reason: str = Field(min_length=1)


class ReplyPerson(_Responder):
    """Answers `ask_user` questions with a text."""

    action: Literal["reply"]
    text: str = Field(min_length=1)


class CancelPerson(_Strict):
    """Cancels the run once it has made `after_steps` tool steps (the `status` query of the
    run and of its child runs: a plan's goal steps, sub-agents)."""

    action: Literal["cancel"]
    after_steps: int = Field(ge=0)


Person = Annotated[
    ApprovePerson | RejectPerson | ReplyPerson | CancelPerson, Field(discriminator="action")
]
Responder = ApprovePerson | RejectPerson | ReplyPerson


class Expectations(_Strict):
    """What a run must do to count as completed. Every given check must hold. The tools, steps,
    turns and failures checked are the whole run's: its child runs' (a plan's goal steps,
    sub-agents) with its own."""

    ending: Ending = Field(
        default="completed", description="completed (a result), or cancelled, failed, ..."
    )
    stop_reason: list[StopReason] | None = Field(
        default=None, description="One stop reason, or a list of acceptable ones."
    )
    answer_contains: list[str] = Field(
        default=[], description="Texts the answer must contain (case-insensitive)."
    )
    answer_matches: str | None = Field(
        default=None, description="A regular expression the answer must match (re.search)."
    )
    output: Any = Field(
        default=None, description="A JSON value the typed `output` must contain (a subset)."
    )
    tools_called: list[str] = Field(default=[], description="Each called at least once.")
    tools_not_called: list[str] = Field(default=[], description="None of these called.")
    max_steps: int | None = Field(default=None, ge=0, description="At most this many tool steps.")
    max_turns: int | None = Field(default=None, ge=1, description="At most this many model turns.")
    recovers: bool = Field(
        default=False,
        description="The case is about recovering: some failure must happen during the run (a "
        "tool error, a failed or retried activity, a model given up) and the run still meet "
        "every other expectation.",
    )

    @field_validator("stop_reason", "answer_contains", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("answer_matches")
    @classmethod
    def _a_regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as error:
                raise ValueError(f"not a valid regular expression: {error}") from None
        return value

    @property
    def checks_output(self) -> bool:
        return "output" in self.model_fields_set


class RecordedBaseline(_Strict):
    """What the recorded run a scenario was rebuilt from did (`agent eval --from-runs`): the
    baseline its reruns are compared with, answer by answer."""

    workflow_id: str
    run_id: str | None = None
    answers: list[str] = Field(min_length=1, description="The answer of each turn, in order.")
    stop_reason: StopReason | None = None
    model: str | None = Field(
        default=None, description="The model the run asked for (None: the worker's default)."
    )
    answered_by: str | None = Field(default=None, description="The model that answered.")
    steps: int = 0
    turns: int = Field(default=0, description="Model calls.")
    tools: list[str] = Field(default=[], description="Tools called, in order.")
    usage: TokenUsage = TokenUsage()
    cost_usd: float | None = None


class Scenario(_Strict):
    """One case: a prompt and run input, what is expected, and who answers the run."""

    name: str = Field(pattern=NAME_PATTERN, max_length=80)
    prompt: str = Field(min_length=1)
    description: str | None = None
    tags: list[str] = []
    input: dict[str, Any] = Field(default={}, description="More AgentInput fields.")
    expect: Expectations = Expectations()
    people: list[Person] = []
    repeat: int | None = Field(default=None, ge=1, le=1000)
    timeout_seconds: float | None = Field(default=None, gt=0)
    session: dict[str, Any] | None = Field(
        default=None,
        description="Run the case as a session (SessionInput fields but `agent`, which is the "
        "run input): the prompt is its first message, `turns` the next ones.",
    )
    turns: list[str] = Field(default=[], description="A session's later messages, in order.")
    recorded: RecordedBaseline | None = Field(
        default=None, description="The recorded run the case was rebuilt from."
    )

    @field_validator("input")
    @classmethod
    def _no_reserved_fields(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key in RESERVED_INPUT:
            if key in value:
                where = "the scenario's prompt" if key == "prompt" else "--model or models"
                raise ValueError(f"{key!r} is set with {where}, not in input")
        return value

    @field_validator("people")
    @classmethod
    def _one_cancel(cls, value: list[Any]) -> list[Any]:
        if sum(isinstance(p, CancelPerson) for p in value) > 1:
            raise ValueError("at most one cancel")
        return value

    @model_validator(mode="after")
    def _turns_in_a_session(self) -> Scenario:
        if self.turns and self.session is None:
            raise ValueError("turns are a session's messages: give session ({} for defaults)")
        return self

    @property
    def cancel(self) -> CancelPerson | None:
        return next((p for p in self.people if isinstance(p, CancelPerson)), None)

    @property
    def responders(self) -> list[Responder]:
        return [p for p in self.people if not isinstance(p, CancelPerson)]


class Suite(_Strict):
    """A named set of scenarios with shared run input, models, repeats and prices."""

    name: str = Field(min_length=1)
    description: str | None = None
    defaults: dict[str, Any] = Field(default={}, description="AgentInput fields for all.")
    models: list[str] = Field(default=[], description="Models to compare (or --model).")
    repeat: int = Field(default=1, ge=1, le=1000, description="Runs per scenario and model.")
    timeout_seconds: float = Field(default=120.0, gt=0, description="Longest a run may take.")
    prices: dict[str, ModelPrice] = Field(
        default={}, description="$ per million tokens by model name; '*' prices any other."
    )
    scenarios: list[Scenario] = Field(min_length=1)

    @field_validator("defaults")
    @classmethod
    def _no_reserved_defaults(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key in RESERVED_INPUT:
            if key in value:
                raise ValueError(f"{key!r} cannot be a default")
        return value

    def payload(self, scenario: Scenario, model: str | None) -> dict[str, Any]:
        """The `AgentWorkflow` input of one run: defaults, the scenario's input, the prompt
        and the model (None: the worker's default model)."""
        payload = {**self.defaults, **scenario.input, "prompt": scenario.prompt}
        if model is not None:
            payload["model"] = model
        return payload

    def select(self, names: list[str] | None, tags: list[str] | None) -> list[Scenario]:
        """The scenarios named, or having any of the tags (all of them when neither)."""
        chosen = self.scenarios
        if names:
            unknown = [n for n in names if n not in {s.name for s in chosen}]
            if unknown:
                known = ", ".join(s.name for s in self.scenarios)
                raise SuiteError("--scenario", [f"no scenario {unknown[0]!r} (there are {known})"])
            chosen = [s for s in chosen if s.name in names]
        if tags:
            chosen = [s for s in chosen if set(s.tags) & set(tags)]
            if not chosen:
                raise SuiteError("--tag", [f"no scenario has the tag(s) {', '.join(tags)}"])
        return chosen


# -- loading -----------------------------------------------------------------------------------

_ACTIONS = ("approve", "reject", "reply", "cancel")


def _path(loc: tuple[int | str, ...]) -> str:
    """`('people', 0, 'reject', 'reason')` -> `people[0].reason` (union tags left out)."""
    text = ""
    previous: int | str | None = None
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif isinstance(previous, int) and part in _ACTIONS:
            pass  # the discriminated union's tag, not a field
        else:
            text += f".{part}" if text else str(part)
        previous = part
    return text


_PEOPLE: dict[str, type[BaseModel]] = {
    "approve": ApprovePerson,
    "reject": RejectPerson,
    "reply": ReplyPerson,
    "cancel": CancelPerson,
}


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The first pydantic model inside a type annotation (`list[Scenario]` -> Scenario)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _known_fields(loc: tuple[int | str, ...]) -> list[str]:
    """The field names allowed where the unknown field `loc[-1]` was found (for a hint)."""
    model: type[BaseModel] | None = Suite
    previous: int | str | None = None
    for part in loc[:-1]:
        if model is None:
            return []
        if isinstance(previous, int) and isinstance(part, str) and part in _PEOPLE:
            model = _PEOPLE[part]
        elif isinstance(part, str):
            field = model.model_fields.get(part)
            model = _model_in(field.annotation) if field is not None else None
        previous = part
    return list(model.model_fields) if model is not None else []


def _message(problem: Any, known: list[str] | None = None) -> str:
    loc = tuple(problem["loc"])
    if problem["type"] == "extra_forbidden" and loc:
        fields = known if known is not None else _known_fields(loc)
        close = difflib.get_close_matches(str(loc[-1]), fields, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"unknown field{hint}"
    if problem["type"] == "string_pattern_mismatch" and loc and loc[-1] == "name":
        return "use letters, digits, '_', '.' and '-' (the name goes into workflow ids)"
    message = str(problem["msg"])
    return message.removeprefix("Value error, ")


def _scenario_label(raw: Any, index: int) -> str:
    scenarios = raw.get("scenarios") if isinstance(raw, dict) else None
    item = scenarios[index] if isinstance(scenarios, list) and index < len(scenarios) else None
    name = item.get("name") if isinstance(item, dict) else None
    return f"scenario {name!r}" if isinstance(name, str) else f"scenarios[{index}]"


def _problems(raw: Any, error: ValidationError) -> list[str]:
    problems = []
    for problem in error.errors():
        loc = tuple(problem["loc"])
        message = _message({**problem, "loc": loc})
        if len(loc) >= 2 and loc[0] == "scenarios" and isinstance(loc[1], int):
            field = _path(loc[2:]) or "(the scenario)"
            problems.append(f"{_scenario_label(raw, loc[1])}: {field}: {message}")
        else:
            problems.append(f"{_path(loc) or '(the suite)'}: {message}")
    return problems


def _input_problems(suite: Suite) -> list[str]:
    """Each scenario's run input checked against `AgentInput`, field by field; a problem is
    put on `defaults` when the field came from there."""
    problems = []
    for scenario in suite.scenarios:
        try:
            AgentInput.model_validate(suite.payload(scenario, None))
        except ValidationError as error:
            for problem in error.errors():
                loc = tuple(problem["loc"])
                message = _message(problem, list(AgentInput.model_fields))
                if problem["type"] == "extra_forbidden":
                    message = message.replace("unknown field", "not an AgentInput field")
                key = loc[0] if loc else None
                where = _path(loc) or "(the input)"
                if key in suite.defaults and key not in scenario.input:
                    line = f"defaults.{where}: {message}"
                    if line not in problems:
                        problems.append(line)
                else:
                    problems.append(f"scenario {scenario.name!r}: input.{where}: {message}")
    return problems


def parse_suite(raw: Any, path: str = "suite") -> Suite:
    """A suite from its parsed YAML (a mapping), or `SuiteError` with every problem."""
    if not isinstance(raw, dict):
        kind = "empty" if raw is None else f"a {type(raw).__name__}"
        raise SuiteError(path, [f"a suite is a mapping with name and scenarios; this is {kind}"])
    try:
        suite = Suite.model_validate(raw)
    except ValidationError as error:
        raise SuiteError(path, _problems(raw, error)) from None
    problems = []
    seen: set[str] = set()
    for scenario in suite.scenarios:
        if scenario.name in seen:
            problems.append(f"scenario {scenario.name!r}: name: used by another scenario")
        seen.add(scenario.name)
    problems += _input_problems(suite)
    if problems:
        raise SuiteError(path, problems)
    return suite


def load_suite(path: str | Path) -> Suite:
    """Read and check a suite file; `SuiteError` says what is wrong and where. (PyYAML is the
    `evals` extra, imported here so that the `agent` CLI starts without it: `agent eval`
    requires the extra first.)"""
    import yaml

    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise SuiteError(name, [f"cannot read it: {error.strerror or error}"]) from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        what = getattr(error, "problem", None) or str(error)
        raise SuiteError(name, [f"{where}not valid YAML: {what}"]) from None
    return parse_suite(raw, name)
