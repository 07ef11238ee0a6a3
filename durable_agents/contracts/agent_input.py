"""The input of `AgentWorkflow`, as sent from the Temporal CLI or a client."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from durable_agents.contracts.agents import ParentLink
from durable_agents.contracts.approvals import TimeoutAction
from durable_agents.contracts.budgets import CostBudget
from durable_agents.contracts.client_tools import (
    MAX_CLIENT_TOOLS,
    ClientToolSpec,
    unique_client_tools,
)
from durable_agents.contracts.code_mode import CodeLimits
from durable_agents.contracts.definition import AgentDefinition, OnNewDefinition
from durable_agents.contracts.messages import ChatMessage
from durable_agents.contracts.model_io import CachedConversation, ModelCallKind
from durable_agents.contracts.omitted import none_omitted
from durable_agents.contracts.payload_limits import (
    NO_STORE_HINT,
    STORED,
    TODAY,
    raised_limits_apply,
    within,
)
from durable_agents.contracts.policy import ApprovalPolicy
from durable_agents.contracts.principals import DEFAULT_TENANT, TENANT_PATTERN
from durable_agents.contracts.scratchpad import Scratchpad
from durable_agents.contracts.stream_state import StreamState
from durable_agents.contracts.tool_fixtures import MAX_TOOL_FIXTURES, ToolFixture

MaxIterationsAction = Literal["stop", "final_answer", "fail"]
ContextStrategy = Literal["drop", "summarize"]
ContextTransfer = Literal["delta", "full"]
StructuredOutput = Literal["tool", "native"]
UnknownTools = Literal["answer_with_text", "observe"]

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."

MAX_WAIT_SECONDS = 366 * 24 * 3600
"""Longest wait for a person that a run may set (a year): a timer far beyond it overflows."""
MAX_TOKEN_BUDGET = 10**12


def has_visible_text(text: str) -> bool:
    """Whether `text` holds a character a person can see (not only spaces, newlines or
    zero-width and other format characters)."""
    return any(c.isprintable() and not c.isspace() for c in text)


class AgentSettings(BaseModel):
    """How an agent runs: model, tools, limits, approvals, guards. Shared by one-shot runs
    (`AgentInput`) and sessions (`SessionInput.agent`).

    Unknown fields are refused so that a typo (`max_iteration`) fails loudly instead of being
    silently ignored. Types are strict (`true` is not 1, `"5"` is not 5, NaN and Infinity are
    not numbers), and every number has an upper bound: a huge value would overflow a timer or a
    counter later in the run instead of failing its start.
    """

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    system_prompt: str = Field(
        default=DEFAULT_SYSTEM_PROMPT,
        min_length=1,
        max_length=100_000,
        description="The system message every model call starts with.",
    )
    model: str | None = Field(
        default=None, min_length=1, description="Model name; default: the worker's MODEL."
    )
    tools: list[str] | None = Field(
        default=None, description="Allowlist of tool names; default: every registered tool."
    )
    max_iterations: int = Field(default=10, ge=1, le=1000, description="Most model calls.")
    max_observation_chars: int = Field(
        default=20_000,
        ge=100,
        le=STORED.text_chars,  # today's 200 000 without a payload store (`_payload_limits`)
        description="Longer tool results are truncated.",
    )
    model_timeout_seconds: float = Field(
        default=120.0, gt=0, le=3600, description="Time limit of one model call attempt."
    )
    model_max_attempts: int = Field(
        default=5, ge=1, le=50, description="Attempts per model call before the run fails."
    )
    model_call: ModelCallKind = Field(
        default="activity",
        exclude_if=lambda kind: kind == "activity",
        description="activity: each model call is an activity (heartbeats carrying the live "
        "text, its own row in the Web UI, a timeout and retries the server tracks); local: a "
        "local activity in the worker running the run, without the server round trips, but "
        "with no live text (the whole reply comes with model_call_finished), no cancel of the "
        "call alone, no row of its own in the Web UI, and a cancel, signal or query reaching "
        "the run only when the call ends or its workflow task heartbeats "
        "(docs/how-to/real-models.md#model-calls-as-local-activities).",
    )
    approval_timeout_seconds: float | None = Field(
        default=None,
        gt=0,
        le=MAX_WAIT_SECONDS,
        description="How long a call waits for a person (approval or reply); None: no limit.",
    )
    approval_timeout_action: TimeoutAction = Field(
        default="reject", description="On expiry: reject (default), approve, or fail the run."
    )
    on_max_iterations: MaxIterationsAction = Field(
        default="stop",
        description="stop: partial result; final_answer: one more model call without tools "
        "for the best answer; fail: the run fails (MaxIterationsReached).",
    )
    max_total_tokens: int | None = Field(
        default=None,
        gt=0,
        le=MAX_TOKEN_BUDGET,
        description="Token budget over all model calls; None: no limit.",
    )
    cost_budget: CostBudget | None = Field(
        default=None, description="Money budget with a per-model price table."
    )
    max_repeated_calls: int = Field(
        default=3,
        ge=2,
        le=100,
        description="The Nth identical call (or Nth identical error) gets a warning instead of "
        "running; one more stops the run (repeated_calls).",
    )
    max_context_tokens: int = Field(
        default=100_000,
        ge=1_000,
        le=STORED.context_tokens,  # today's 300 000 without a payload store
        description="Estimated tokens sent per model call; older messages are dropped or "
        "summarised (the system message and the prompt always stay).",
    )
    context_strategy: ContextStrategy = Field(
        default="drop", description="drop old messages, or summarise them with the model."
    )
    context_transfer: ContextTransfer = Field(
        default="delta",
        description="delta: model activities carry only new messages (a worker-side cache "
        "holds the rest); full: every model activity carries the whole context (naive).",
    )
    mode: Literal["react", "plan_and_execute"] = Field(
        default="react",
        description="react: the tool-calling loop; plan_and_execute: a planning call, each "
        "step as a bounded loop (a child run), replanning when a step fails, a final synthesis.",
    )
    max_replans: int = Field(
        default=2, ge=0, le=10, description="Plan revisions after failed steps or rejections."
    )
    plan_approval: bool = Field(
        default=False, description="Wait for a person to approve (or edit) the plan first."
    )
    agents: list[str] | None = Field(
        default=None,
        max_length=50,
        description="Agent profiles the run may hand work to, each offered as a tool taking a "
        "task; a call runs the profile as a child AgentWorkflow.",
    )
    max_agent_depth: int = Field(
        default=3, ge=1, le=10, description="How deep sub-agents may nest (this run is 0)."
    )
    mcp_servers: list[str] | None = Field(
        default=None,
        max_length=50,
        description="MCP servers (names in the worker's MCP_CONFIG) whose tools the run may "
        'use, offered as <server>__<tool>; ["*"]: every configured server; unset: none.',
    )
    approval_policy: ApprovalPolicy | None = Field(
        default=None,
        description="Rules matched in order against tool names (globs): ask (wait for a "
        "person), auto (run), deny (never run). Tools no rule matches follow their definition.",
    )
    tenant: str = Field(
        default=DEFAULT_TENANT,
        pattern=TENANT_PATTERN,
        exclude_if=lambda tenant: tenant == DEFAULT_TENANT,
        description="The tenant the run belongs to (the `AgentTenant` search attribute): a "
        "server's principal sees only its tenant's runs. Stamped by `AgentClient` from its "
        "principal; sub-agents and plan steps inherit it.",
    )
    starter: str | None = none_omitted(
        max_length=200,
        description="The principal who started the run (stamped by a server's `AgentClient`): "
        "the two-person rule (`ApprovalRequirement.distinct_from_starter`) refuses its "
        "approvals. Sub-agents and plan steps inherit it.",
    )
    memory_scope: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        pattern=r"^[A-Za-z0-9_.:@/-]+$",
        description="Whose long-term memory the run may use (a user id, say); without it the "
        "run gets no memory tools. One scope never reads another's memories.",
    )
    fallback_models: list[str] = Field(
        default=[],
        max_length=10,
        description="Models tried in order when the primary fails for good: its retries are "
        "used up (timeouts, 429, 5xx, connection errors) or the provider refuses the model "
        "itself (401, 403, 404). `provider/model` names pick a provider the worker knows.",
    )
    agent_name: str | None = none_omitted(
        pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,63}$",
        description="The agent this is a run of (set by `Agent.input`): the name in the run's "
        "definition label, and the agent whose current definition on the worker a session "
        "compares its own with at each turn (docs/concepts/definitions.md).",
    )
    agent_version: str | None = none_omitted(
        min_length=1,
        max_length=100,
        description="The version the agent declares (`Agent(version=...)`): the label is "
        "`agent_name@agent_version` (unset: the digest's first 12 hex digits).",
    )
    on_new_definition: OnNewDefinition = Field(
        default="keep",
        description="When a worker's definition of this agent differs from the one a session "
        "runs: keep (the default) its own, or migrate_at_turn to the worker's at the next turn "
        "boundary. Read from the worker's (new) definition; the history records either.",
    )
    parallel_tool_calls: bool | None = Field(
        default=None,
        description="Passed to the provider: whether the model may ask for several tool calls "
        "in one reply. None: the provider's default.",
    )
    unknown_tools: UnknownTools = Field(
        default="answer_with_text",
        description="When every tool call of a reply names a tool the run does not have and "
        "the reply has text: answer_with_text (seed 000: the text is the answer, the calls are "
        "dropped and recorded in the model call) or observe (each call gets an 'unknown tool' "
        "observation and the model is asked again).",
    )
    record_reasoning: bool = Field(
        default=False,
        description="Keep each model call's reasoning text in the result's model_calls (its "
        "length is always kept).",
    )
    output_schema: dict[str, Any] | None = Field(
        default=None,
        description="JSON Schema the answer must match; the result's `output` holds it.",
    )
    output_type: str | None = Field(
        default=None,
        min_length=1,
        description="Name of a pydantic model the application registered as an output type "
        "(instead of output_schema).",
    )
    structured_output: StructuredOutput = Field(
        default="tool",
        description="tool: the model answers by calling a final_result tool (any tool-calling "
        "model); native: the provider's response_format json_schema (strict).",
    )
    output_retries: int = Field(
        default=2,
        ge=0,
        le=10,
        description="How many invalid answers go back to the model with the validation errors "
        "before the run stops with invalid_output.",
    )
    stream_deltas: bool = Field(
        default=True,
        description="Publish model_call_started and the reply's text and reasoning as it "
        "streams (text_delta, reasoning_delta) to the run's event stream, batched: each batch "
        "is one signal in the run's history (docs/events.md). Off: the stream still carries "
        "every workflow event (tools, approvals, the answer), at no history cost.",
    )
    client_tools: list[ClientToolSpec] | None = Field(
        default=None,
        max_length=MAX_CLIENT_TOOLS,
        description="Tools the client runs itself (docs/client-tools.md): each call waits "
        "durably for the client's `tool_result` update, with the approval timeout rules.",
    )
    tool_fixtures: list[ToolFixture] | None = none_omitted(
        max_length=MAX_TOOL_FIXTURES,
        description="Recorded tool outputs that answer the run's tool calls instead of the "
        "tools (`agent eval --from-runs`, docs/how-to/evals-from-runs.md): nothing runs, and a "
        "call with no recorded output gets a 'new tool call' error observation.",
    )
    code_mode: bool = Field(
        default=False,
        description="Offer the model one tool, run_code: a Python script that calls the run's "
        "tools, each call still governed (docs/code-mode.md).",
    )
    code_limits: CodeLimits = Field(
        default_factory=CodeLimits, description="What one code-mode script may use."
    )
    continue_as_new_after_events: int = Field(
        default=5_000, ge=100, le=50_000, description="History events before continue-as-new."
    )
    continue_as_new_after_bytes: int = Field(
        default=4_000_000,
        ge=100_000,
        le=40_000_000,
        description="History bytes before continue-as-new.",
    )

    @field_validator("max_observation_chars", "max_context_tokens")
    @classmethod
    def _payload_limits(cls, value: int, info: ValidationInfo) -> int:
        if info.field_name == "max_context_tokens":
            return within(value, value, TODAY.context_tokens, STORED.context_tokens, info)
        return within(value, value, TODAY.text_chars, STORED.text_chars, info)

    @field_validator("mcp_servers")
    @classmethod
    def _mcp_server_names(cls, servers: list[str] | None) -> list[str] | None:
        if servers is not None and any(not s.strip() or "__" in s for s in servers):
            raise ValueError("mcp_servers holds server names (no empty names, no '__')")
        if servers is not None and "*" in servers and len(servers) > 1:
            raise ValueError('"*" means every configured server; give it alone')
        return servers

    @field_validator("fallback_models")
    @classmethod
    def _fallback_models_are_names(cls, models: list[str]) -> list[str]:
        if any(not m.strip() for m in models):
            raise ValueError("fallback_models holds model names; an empty name was given")
        return models

    @field_validator("client_tools")
    @classmethod
    def _client_tool_names(cls, specs: list[ClientToolSpec] | None) -> list[ClientToolSpec] | None:
        return unique_client_tools(specs)

    @model_validator(mode="after")
    def _react_only_callees(self) -> AgentSettings:
        if self.mode != "react" and (self.client_tools or self.code_mode):
            raise ValueError('client_tools and code_mode need mode "react"')
        if self.code_mode and self.agents:
            raise ValueError(
                "code_mode: agent profiles cannot be called from a script (their spending "
                "would not count toward the run's budgets); leave out agents"
            )
        return self

    @model_validator(mode="after")
    def _one_output_kind(self) -> AgentSettings:
        if self.output_schema is not None and self.output_type is not None:
            raise ValueError("give output_schema or output_type, not both")
        return self


OWN_RUN_SETTINGS = frozenset(
    {
        "mode",
        "plan_approval",
        "max_replans",
        "on_max_iterations",
        "output_type",
        "output_schema",
        "structured_output",
        "output_retries",
        "client_tools",
        "code_mode",
        "code_limits",
        "agent_name",
        "agent_version",
    }
)
"""Settings about the shape of a run's own answer, which its sub-agents and plan steps do not
take from it (a child answers its parent in its profile's terms). Every other setting is
inherited by default; an agent profile (or a plan step) overrides what it names explicitly."""


def inherited_settings(settings: AgentSettings) -> dict[str, Any]:
    """What a sub-agent or plan step takes from its parent's settings: all but
    `OWN_RUN_SETTINGS`. A new setting is inherited with no line of copying."""
    return settings.model_dump(
        include=set(AgentSettings.model_fields) - OWN_RUN_SETTINGS, exclude_unset=False
    )


MAX_HISTORY_CHARS = TODAY.history_chars


class SessionLink(BaseModel):
    """The session a run is a turn of. A turn that is its own child run signals
    `turn_finished` (and `turn_pending` while it waits for a person) to that workflow id; a turn
    that runs inside the session's history (`scope` set) reports by returning."""

    workflow_id: str
    turn_id: str
    token: str = ""
    """Made by the session for a turn that is its own child run; sent back in `turn_pending`
    and `turn_finished`, so the session takes reports only from the turn it started."""
    scope: str | None = None
    """`<session>/turn-<n>` for a turn run inside the session: its child runs' ids and its
    tools' idempotency keys start with it (not with the session's id, which every turn shares)."""
    turn: int | None = none_omitted()
    """The session's turn number, which the turn's events carry (None: sessions recorded
    before the event stream)."""


class RunLinks(BaseModel):
    """How a run is linked to others. Set by a parent run, a session or Temporal's knowledge of
    them, never by a client: a start whose links Temporal does not confirm is refused
    (`loop.input_validation.link_problem`). Never inherited: each child gets its own."""

    session: SessionLink | None = Field(
        default=None, description="Set by SessionWorkflow: the session this run is a turn of."
    )
    depth: int = Field(
        default=0,
        ge=0,
        le=10,
        description="Set by a parent run: how deep this sub-agent is nested.",
    )
    parent: ParentLink | None = Field(
        default=None, description="Set by a parent run: where this sub-agent reports to."
    )


class ResumeState(BaseModel):
    """What a run carries into its next execution when it continues-as-new (or a turn into
    the child run it moves to). Never inherited."""

    resume: Scratchpad | None = Field(
        default=None,
        description="Set by the workflow itself when it continues-as-new: the run's state.",
    )
    resume_context: CachedConversation | None = Field(
        default=None,
        description=(
            "Set by the workflow itself when it continues-as-new: what the worker's context "
            "cache holds (digests), so the next run does not send the carried messages again."
        ),
    )
    stream: StreamState = None
    definition: AgentDefinition | None = none_omitted(
        description="Set by the workflow itself when it continues-as-new, and by a session for "
        "its turn: the definition the run goes by (`loop.definition`), recorded at its start."
    )


class AgentInput(ResumeState, RunLinks, AgentSettings):
    """One agent run: the prompt, optionally after earlier turns of a conversation (`history`:
    user and assistant messages, oldest first), run with `AgentSettings`, linked by `RunLinks`,
    resumed from `ResumeState`. Three parts in one flat JSON object: the shape clients send
    (`{"prompt": ..., "max_iterations": ...}`) is unchanged."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    prompt: str = Field(
        min_length=1,
        max_length=STORED.text_chars,  # today's 200 000 without a payload store
        description="The user's request.",
    )
    history: list[ChatMessage] = Field(
        default=[], description="Earlier conversation (user/assistant messages) to continue."
    )

    def settings(self) -> AgentSettings:
        """This run's settings alone (what children inherit from, see `inherited_settings`)."""
        return AgentSettings.model_validate(
            self.model_dump(include=set(AgentSettings.model_fields))
        )

    @field_validator("prompt")
    @classmethod
    def _prompt_is_visible(cls, prompt: str, info: ValidationInfo) -> str:
        if not has_visible_text(prompt):
            raise ValueError("the prompt holds no visible text")
        return within(prompt, len(prompt), TODAY.text_chars, STORED.text_chars, info, "chars")

    @field_validator("history")
    @classmethod
    def _history_is_a_conversation(
        cls, history: list[ChatMessage], info: ValidationInfo
    ) -> list[ChatMessage]:
        if any(m.role not in ("user", "assistant") or m.tool_calls for m in history):
            raise ValueError("history holds user and assistant messages without tool calls")
        size = sum(len(m.content or "") for m in history)
        if size > STORED.history_chars:
            raise ValueError(f"history is longer than {STORED.history_chars} characters")
        if size > MAX_HISTORY_CHARS and not raised_limits_apply(info):
            raise ValueError(
                f"history is longer than {MAX_HISTORY_CHARS} characters"
                + NO_STORE_HINT.format(stored=STORED.history_chars)
            )
        return history
