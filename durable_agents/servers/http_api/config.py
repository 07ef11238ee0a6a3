"""What `agent serve` is told.

Who may call it is its `Authenticator` (`servers.auth`: the principals file, OIDC,
`AGENT_API_TOKEN`, read from the environment settings, never from the command line, where `ps`
shows it); without one the server answers anyone who can reach it, so it refuses to bind beyond
loopback (`Authenticator.listen_refusal`). Tokens only ever live there and in the
authentication middleware: they are not part of any workflow input, history or log line.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from durable_agents.runtime.event_stream import StreamReading
from durable_agents.runtime.web_ui import WebUiLink

if TYPE_CHECKING:
    from durable_agents.servers.auth.authenticator import Authenticator

CORS_ENV = "AGENT_API_CORS_ORIGINS"
ALLOWED_HOSTS_ENV = "AGENT_API_ALLOWED_HOSTS"
MAX_BODY_ENV = "AGENT_API_MAX_BODY_BYTES"
STREAM_READ_ENV = "AGENT_SERVE_STREAM_READ"
STREAM_READINGS: tuple[StreamReading, ...] = ("query", "updates")
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
"""A run's input is bounded by its fields (a prompt of 200,000 characters at most); 1 MiB
leaves room for a history and an output schema."""
LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost", "ip6-loopback"})


class ConfigError(ValueError):
    """A setting `agent serve` cannot start with; the message says which and why."""


@dataclass(frozen=True)
class ServeConfig:
    """How the HTTP API behaves (the Temporal connection is the CLI's `Target`)."""

    authenticator: Authenticator | None = None
    """Who may call it; None: no credentials (every request is the local admin, loopback
    only)."""
    cors_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    """`Host` names served besides loopback's (`servers.request_guards`): the bound address and
    `--allowed-host` / `AGENT_API_ALLOWED_HOSTS`; any other `Host` is 421."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    web_ui: WebUiLink = field(default_factory=WebUiLink)
    """The Web UI the console links each run to (`runtime.web_ui`; default: none)."""
    namespace: str = "default"
    task_queue: str = "agents"
    stream_reading: StreamReading = "query"
    """How the feeds read a run's stream (`runtime.event_stream.StreamReading`): `query`
    leaves the run's history and Web UI timeline as they are; `updates` delivers live text
    sooner under load, and puts every poll in the history (docs/events.md has the figures)."""

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        namespace: str = "default",
        task_queue: str = "agents",
        cors_origins: tuple[str, ...] = (),
        allowed_hosts: tuple[str, ...] = (),
        web_ui: WebUiLink | None = None,
        stream_reading: str | None = None,
        authenticator: Authenticator | None = None,
    ) -> ServeConfig:
        """The environment's settings, with the command line's on top."""
        environ = os.environ if env is None else env
        origins = cors_origins or tuple(
            o.strip() for o in environ.get(CORS_ENV, "").split(",") if o.strip()
        )
        from durable_agents.servers.request_guards import checked_origins

        try:
            origins = tuple(sorted(checked_origins(origins, f"--cors-origin ({CORS_ENV})")))
        except ValueError as error:
            raise ConfigError(str(error)) from None
        hosts = allowed_hosts + tuple(
            h.strip() for h in environ.get(ALLOWED_HOSTS_ENV, "").split(",") if h.strip()
        )
        limit_text = environ.get(MAX_BODY_ENV)
        try:
            limit = int(limit_text) if limit_text else DEFAULT_MAX_BODY_BYTES
        except ValueError:
            raise ConfigError(f"{MAX_BODY_ENV} must be a number of bytes") from None
        if limit < 1024:
            raise ConfigError(f"{MAX_BODY_ENV} must be at least 1024")
        reading = stream_reading or environ.get(STREAM_READ_ENV) or "query"
        if reading not in STREAM_READINGS:
            raise ConfigError(
                f"{STREAM_READ_ENV} (--stream-read) must be one of {', '.join(STREAM_READINGS)}, "
                f"not {reading!r}"
            )
        return cls(
            authenticator=authenticator,
            cors_origins=origins,
            allowed_hosts=hosts,
            max_body_bytes=limit,
            web_ui=web_ui or WebUiLink(),
            namespace=namespace,
            task_queue=task_queue,
            stream_reading="updates" if reading == "updates" else "query",
        )


def is_loopback(host: str) -> bool:
    """Whether `host` only accepts connections from this machine."""
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
