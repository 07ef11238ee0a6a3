"""`SearchAttributeKeeper`: keeps a run's search attributes (`AgentPhase`, `AgentWaitingFor`,
`AgentTokens`, `AgentTenant`, `AgentDefinition`, `AgentDefinitionDigest`) equal to its state,
so operators find the runs that wait for them:
`temporal workflow list --query 'AgentPhase="waiting_for_human"'`, or the Web UI's list filter.

Each upsert is a command (an `UpsertWorkflowSearchAttributes` event), so the keeper upserts only
what changed. Whether a run keeps them at all is decided once, at its first upsert, and kept in
its history: the keeper asks `workflow.patched(SEARCH_ATTRIBUTES_MARKER)` whatever the worker's
configuration. This is no back-compat patch but a choice of the worker's configuration that the
run keeps on every worker and on a plain `Replayer`: the SDK's patch marker is how a workflow
records such a choice without a command of its own (docs/versioning.md).

A new run's answer comes from the worker that runs that task (`runtime.workers.
patch_activation`: yes only where its server has the attributes registered,
`Catalog.search_attributes`, set by `worker.py` after `runtime.search_attributes.ensure`, since
upserting an unregistered attribute fails the workflow task); a yes records the marker. On
replay the history answers: a run that recorded the marker upserts, one that did not (where the
attributes were missing) does not, on any worker and on a plain `Replayer`. A run that keeps
them and reaches a worker whose server lacks them fails its workflow task, naming the
attributes to register, and goes on once a worker that has them (or the registration) takes the
retried task.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import SearchAttributeKey, SearchAttributeUpdate

with workflow.unsafe.imports_passed_through():
    from durable_agents.loop.search_attributes import SearchState
    from durable_agents.workflows.worker_catalog import worker_catalog

AGENT_PHASE = SearchAttributeKey.for_keyword("AgentPhase")
AGENT_WAITING_FOR = SearchAttributeKey.for_keyword_list("AgentWaitingFor")
AGENT_TOKENS = SearchAttributeKey.for_int("AgentTokens")
AGENT_TENANT = SearchAttributeKey.for_keyword("AgentTenant")
AGENT_DEFINITION = SearchAttributeKey.for_keyword("AgentDefinition")
AGENT_DEFINITION_DIGEST = SearchAttributeKey.for_keyword("AgentDefinitionDigest")
SEARCH_ATTRIBUTE_KEYS: tuple[SearchAttributeKey, ...] = (
    AGENT_PHASE,
    AGENT_WAITING_FOR,
    AGENT_TOKENS,
    AGENT_TENANT,
    AGENT_DEFINITION,
    AGENT_DEFINITION_DIGEST,
)
"""The custom search attributes runs keep (registered by `runtime.search_attributes`)."""

SEARCH_ATTRIBUTES_MARKER = "agent-search-attributes"
"""The marker of a run that keeps its search attributes (see the module docstring)."""


class SearchAttributesMissing(RuntimeError):
    """A run that keeps its search attributes, on a worker whose server lacks them. Not an
    `ApplicationError`: it fails the workflow task (retried), never the run."""

    def __init__(self) -> None:
        names = ", ".join(key.name for key in SEARCH_ATTRIBUTE_KEYS)
        super().__init__(
            f"this run keeps the search attributes {names} (its history has the "
            f"{SEARCH_ATTRIBUTES_MARKER!r} marker), but this worker's namespace does not have "
            "them registered; register them (runtime/search_attributes.py says how) or run a "
            "worker where they are: the task is retried"
        )


def definition_updates(
    state: SearchState, before: SearchState | None
) -> list[SearchAttributeUpdate]:
    """`AgentDefinition` and `AgentDefinitionDigest` where they changed; never unset (a run
    recorded before definitions upserts what it always did)."""
    if state.definition is None or state.definition_digest is None:
        return []
    updates: list[SearchAttributeUpdate] = []
    if before is None or state.definition != before.definition:
        updates.append(AGENT_DEFINITION.value_set(state.definition))
    if before is None or state.definition_digest != before.definition_digest:
        updates.append(AGENT_DEFINITION_DIGEST.value_set(state.definition_digest))
    return updates


class SearchAttributeKeeper:
    """Upserts a run's `SearchState` when it changes (see the module docstring)."""

    def __init__(self) -> None:
        self._shown: SearchState | None = None
        self._enabled: bool | None = None

    def keep(self, state: SearchState) -> None:
        """Make the run's search attributes say `state` (nothing if they already do)."""
        if state == self._shown or not self._on():
            return
        if not workflow.unsafe.is_replaying() and not worker_catalog().search_attributes:
            raise SearchAttributesMissing()
        before = self._shown
        updates: list[SearchAttributeUpdate] = []
        if before is None or state.phase != before.phase:
            updates.append(AGENT_PHASE.value_set(state.phase))
        if before is None or state.waiting_for != before.waiting_for:
            updates.append(AGENT_WAITING_FOR.value_set(list(state.waiting_for)))
        if before is None or state.tokens != before.tokens:
            updates.append(AGENT_TOKENS.value_set(state.tokens))
        if before is None or state.tenant != before.tenant:
            updates.append(AGENT_TENANT.value_set(state.tenant))
        updates += definition_updates(state, before)
        workflow.upsert_search_attributes(updates)
        self._shown = state

    def _on(self) -> bool:
        """Whether this run keeps its search attributes: asked once, of its history (on a new
        run, of its worker's `patch_activation`)."""
        if self._enabled is None:
            self._enabled = workflow.patched(SEARCH_ATTRIBUTES_MARKER)
        return self._enabled
