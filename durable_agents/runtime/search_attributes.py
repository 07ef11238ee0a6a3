"""Registering the agent search attributes (`AgentPhase`, `AgentWaitingFor`, `AgentTokens`,
`AgentTenant`, `AgentDefinition`, `AgentDefinitionDigest`) on the server, so runs may keep
them (`workflows.search_attributes`).

`ensure` runs at worker start: it adds the missing ones through the operator API (the dev
server and a self-hosted cluster allow it) and says whether all are there. Where the worker may
not add them (Temporal Cloud: create them once with `tcld namespace search-attributes add` or in
the Cloud UI), it logs what to run, and the runs it starts go on without them. Whether a run
keeps them is decided at its first workflow task and kept in its history
(`workflows.search_attributes`): a run started where they were registered keeps them, and its
workflow task fails, naming them, on a worker whose server lacks them, until they are there.
The embedded dev server gets them at start (`dev_server_flags`). On a self-hosted cluster, once:

    temporal operator search-attribute create --name AgentPhase --type Keyword
    temporal operator search-attribute create --name AgentWaitingFor --type KeywordList
    temporal operator search-attribute create --name AgentTokens --type Int
    temporal operator search-attribute create --name AgentTenant --type Keyword
    temporal operator search-attribute create --name AgentDefinition --type Keyword
    temporal operator search-attribute create --name AgentDefinitionDigest --type Keyword
"""

from __future__ import annotations

import logging

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError

from durable_agents.workflows.search_attributes import SEARCH_ATTRIBUTE_KEYS

log = logging.getLogger("search_attributes")

_CLI_TYPE = {
    IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD: "Keyword",
    IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST: "KeywordList",
    IndexedValueType.INDEXED_VALUE_TYPE_INT: "Int",
}
WANTED: dict[str, IndexedValueType.ValueType] = {
    key.name: IndexedValueType.ValueType(int(key.indexed_value_type))
    for key in SEARCH_ATTRIBUTE_KEYS
}
"""Each agent search attribute and its type."""


def dev_server_flags() -> list[str]:
    """`temporal server start-dev` flags that register the agent search attributes."""
    return [
        flag
        for name, kind in WANTED.items()
        for flag in ("--search-attribute", f"{name}={_CLI_TYPE[kind]}")
    ]


async def ensure(client: Client) -> bool:
    """Add the agent search attributes the client's namespace lacks; whether all are there."""
    namespace = client.namespace
    try:
        listed = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=namespace)
        )
        missing = {
            name: kind for name, kind in WANTED.items() if name not in listed.custom_attributes
        }
        if missing:
            await client.operator_service.add_search_attributes(
                AddSearchAttributesRequest(namespace=namespace, search_attributes=missing)
            )
            log.info("registered search attributes %s in %s", ", ".join(missing), namespace)
        return True
    except RPCError as error:
        log.warning(
            "search attributes %s are not registered in namespace %s and this worker may not "
            "register them (%s): runs started here go on without them, and a run that keeps "
            "them fails its workflow tasks here until they exist; create them once (see "
            "durable_agents/runtime/search_attributes.py) to filter runs by AgentPhase",
            ", ".join(WANTED),
            namespace,
            error.message,
        )
        return False
