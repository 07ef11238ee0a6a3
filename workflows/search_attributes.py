"""`SearchAttributeKeeper`: keeps a run's search attributes (`AgentPhase`, `AgentWaitingFor`,
`AgentTokens`) equal to its state, so operators find the runs that wait for them:
`temporal workflow list --query 'AgentPhase="waiting_for_human"'`, or the Web UI's list filter.

Each upsert is a command (an `UpsertWorkflowSearchAttributes` event), so the keeper upserts only
what changed, and only on a worker whose server has the attributes registered
(`Catalog.search_attributes`, set by `worker.py` after `runtime.search_attributes.ensure`):
upserting an unregistered attribute fails the workflow task, and a run must never wedge on its
own bookkeeping. Runs recorded before this existed replay without upserts (a patch, asked at the
first upsert). Every worker of a namespace sees the same registration, so a fleet agrees.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import SearchAttributeKey, SearchAttributeUpdate

with workflow.unsafe.imports_passed_through():
    from loop.search_attributes import SearchState
    from workflows.worker_catalog import worker_catalog

AGENT_PHASE = SearchAttributeKey.for_keyword("AgentPhase")
AGENT_WAITING_FOR = SearchAttributeKey.for_keyword_list("AgentWaitingFor")
AGENT_TOKENS = SearchAttributeKey.for_int("AgentTokens")
SEARCH_ATTRIBUTE_KEYS: tuple[SearchAttributeKey, ...] = (
    AGENT_PHASE,
    AGENT_WAITING_FOR,
    AGENT_TOKENS,
)
"""The custom search attributes runs keep (registered by `runtime.search_attributes`)."""

SEARCH_ATTRIBUTES_PATCH = "agent-search-attributes"


class SearchAttributeKeeper:
    """Upserts a run's `SearchState` when it changes (see the module docstring)."""

    def __init__(self) -> None:
        self._shown: SearchState | None = None
        self._enabled: bool | None = None

    def keep(self, state: SearchState) -> None:
        """Make the run's search attributes say `state` (nothing if they already do)."""
        if state == self._shown or not self._on():
            return
        before = self._shown
        updates: list[SearchAttributeUpdate] = []
        if before is None or state.phase != before.phase:
            updates.append(AGENT_PHASE.value_set(state.phase))
        if before is None or state.waiting_for != before.waiting_for:
            updates.append(AGENT_WAITING_FOR.value_set(list(state.waiting_for)))
        if before is None or state.tokens != before.tokens:
            updates.append(AGENT_TOKENS.value_set(state.tokens))
        workflow.upsert_search_attributes(updates)
        self._shown = state

    def _on(self) -> bool:
        if self._enabled is None:
            self._enabled = worker_catalog().search_attributes and workflow.patched(
                SEARCH_ATTRIBUTES_PATCH
            )
        return self._enabled
