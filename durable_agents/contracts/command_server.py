"""Where the commands a run hands out to be pasted must reach: the Temporal server and namespace
of the worker that runs it (`tools.catalog.Catalog.command_server`, set by
`runtime.workers.build_workers` from the worker's own client, or by `AGENT_COMMAND_ADDRESS`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

DEFAULT_NAMESPACE = "default"


class CommandServer(BaseModel):
    """A Temporal server address (`host:port`) and namespace, as `--address`/`--namespace`."""

    model_config = ConfigDict(frozen=True)

    address: str
    namespace: str = DEFAULT_NAMESPACE
