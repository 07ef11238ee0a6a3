"""What a run tells Temporal's visibility about itself: the search attributes operators filter by.

`temporal workflow list --query 'AgentPhase="waiting_for_human"'` (and the Web UI's list filter)
answers "which runs wait for me?". The values come from the run's status, here, as a pure
function; `workflows.search_attributes` upserts them when they change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

from durable_agents.contracts.agent_status import Phase
from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.principals import DEFAULT_TENANT
from durable_agents.contracts.request_kind import RequestKind

SearchPhase = Literal["thinking", "running_tools", "waiting_for_human", "idle", "done"]
"""`AgentPhase`: what the run does now. `idle` is a session between turns."""

TENANT_MEMO = "tenant"
"""The memo key of a run's tenant: `AgentClient` records it at start, and a run records it
on the children it starts (sub-agents, plan steps, a session's child turns), so a server finds
a run's tenant before its first workflow task and where `AgentTenant` is not registered."""


def tenant_memo(tenant: str) -> dict[str, str] | None:
    """The memo a child run of `tenant` starts with (None in the default tenant: the memo of
    runs recorded before tenants, unchanged)."""
    return None if tenant == DEFAULT_TENANT else {TENANT_MEMO: tenant}


MAX_WAITING_NAMES = 20
"""At most this many names in `AgentWaitingFor` (a keyword list; the server caps its size)."""


class SearchState(NamedTuple):
    """The values of the run's search attributes."""

    phase: SearchPhase
    waiting_for: tuple[str, ...]
    """What waits for a person: the tool of each approval (and client tool), `question` for an
    `ask_user` question, `plan` for a plan; sorted, each once."""
    tokens: int
    tenant: str = DEFAULT_TENANT
    """`AgentTenant`: the tenant of the run (its input's `tenant`), which a server's principal
    lists by."""
    definition: str | None = None
    """`AgentDefinition`: the label (`name@version`) of the definition the run goes by (None: a
    run recorded before definitions, which does not set it)."""
    definition_digest: str | None = None
    """`AgentDefinitionDigest`: that definition's sha256."""


def search_phase(phase: Phase) -> SearchPhase:
    """The status phase as an operator filters by it (a run starting is thinking; a cancelled
    run is done)."""
    match phase:
        case "starting" | "thinking":
            return "thinking"
        case "running_tools" | "waiting_for_human":
            return phase
        case "done" | "cancelled":
            return "done"


def waiting_name(kind: RequestKind, tool: str) -> str:
    """How one pending request is named in `AgentWaitingFor`."""
    if kind is RequestKind.PLAN:
        return "plan"
    return "question" if kind.decided_by is RequestKind.QUESTION else tool


def search_state(
    phase: Phase | Literal["idle"],
    pending: Sequence[PendingRequest],
    tokens: int,
    tenant: str = DEFAULT_TENANT,
    definition: tuple[str, str] | None = None,
) -> SearchState:
    """The search attributes of a run (or a session: `idle` between turns) of `tenant` in
    `phase`, with these requests waiting for a person and `tokens` spent, going by the
    definition of this (label, digest)."""
    names = sorted({waiting_name(p.kind, p.tool) for p in pending})
    shown: SearchPhase = (
        "waiting_for_human" if names else "idle" if phase == "idle" else search_phase(phase)
    )
    label, digest = definition or (None, None)
    return SearchState(shown, tuple(names[:MAX_WAITING_NAMES]), tokens, tenant, label, digest)
