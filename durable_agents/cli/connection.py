"""The CLI's names for reaching Temporal, now in `durable_agents.client.connection` (the
servers share them); kept here for the modules that still import them from the CLI."""

from durable_agents.client.connection import (
    CONNECT_TIMEOUT,
    QUERY_TIMEOUT,
    Target,
    connect,
    describe,
    explain_rpc,
    is_running,
    open_store,
    status_name,
    with_payload_stores,
)
from durable_agents.client.connection import WorkflowRun as RunHandle

__all__ = [
    "CONNECT_TIMEOUT",
    "QUERY_TIMEOUT",
    "RunHandle",
    "Target",
    "connect",
    "describe",
    "explain_rpc",
    "is_running",
    "open_store",
    "status_name",
    "with_payload_stores",
]
