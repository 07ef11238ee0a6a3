"""The optional features and the extras that install them.

`pip install durable-agents` is what a worker and a client need; everything else is an extra
(pyproject.toml's `[project.optional-dependencies]`, `[all]` for every one). Each entry that
uses an optional package calls `require` first, so that a missing extra stops it at start with
one line naming the extra, instead of a `ModuleNotFoundError` deep in a traceback:

    agent serve needs the server extra: pip install 'durable-agents[server]'

`EXTRA_MODULES` names, for each extra, the modules its entries import; `require` imports them
(what the feature is about to do anyway), so a broken installation is caught the same way.
"""

from __future__ import annotations

import importlib
import importlib.util

DISTRIBUTION = "durable-agents"

EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "server": ("fastapi", "uvicorn", "sse_starlette", "ag_ui"),
    "mcp": ("mcp",),
    "a2a": ("a2a", "starlette", "uvicorn"),
    "oidc": ("jwt", "cryptography"),
    "postgres": ("psycopg",),
    "s3": ("aioboto3",),
    "otel": ("opentelemetry.sdk",),
    "crypto": ("cryptography", "aiohttp"),
    "code": ("pydantic_monty",),
    "plots": ("matplotlib",),
    "evals": ("yaml", "rich", "matplotlib"),
}
"""The modules each extra provides (`local` and `testing` install server binaries, no module:
`runtime.dev_server.temporal_cli` and `durable_agents.testing` look for those)."""


class MissingExtra(RuntimeError):
    """A feature was asked for whose extra is not installed; the message is one line that
    names the feature, the extra and the command that installs it."""

    def __init__(self, feature: str, extra: str) -> None:
        self.feature = feature
        self.extra = extra
        super().__init__(
            f"{feature} needs the {extra} extra: pip install '{DISTRIBUTION}[{extra}]'"
        )


def require(extra: str, feature: str, *modules: str) -> None:
    """Import `modules` (default: all of `extra`'s) or raise `MissingExtra` naming `feature`
    (what the user asked for: `agent serve`, `MCP_CONFIG`, ...) and the extra."""
    for module in modules or EXTRA_MODULES[extra]:
        try:
            importlib.import_module(module)
        except ImportError:
            raise MissingExtra(feature, extra) from None


def installed(extra: str) -> bool:
    """Whether the modules of `extra` are there, without importing them (for a warning at
    start about a feature that only a run can ask for, such as code mode)."""
    try:
        return all(importlib.util.find_spec(module) for module in EXTRA_MODULES[extra])
    except (ImportError, ValueError):
        return False
