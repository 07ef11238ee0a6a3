"""Where the Temporal Web UI is, for every link to it: `agent serve`'s console (`GET /v1/info`),
the start-up lines of `agent serve` and the worker.

A Web UI is where it is deployed, which nothing on the Temporal connection says: Temporal Cloud's
is `https://cloud.temporal.io`, a compose file's `http://localhost:8080`, a dev server's its port
+ 1000 unless told `--ui-port`. So it is a setting, `AGENT_WEB_UI_URL` (`agent serve --web-ui
URL`). Unset, the one case left to guess is a dev server on this machine: for the worker's own
(`TEMPORAL_DEV_PORT`) its `TEMPORAL_DEV_UI_PORT`, for another its port + 1000. The guess is
linked only once a Temporal Web UI answers there (`GET /api/v1/settings` names its `Version`),
so a loopback server that is not a dev server (compose's) gets no link rather than a wrong one;
any other server gets none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

import httpx

if TYPE_CHECKING:
    from durable_agents.runtime.dev_server import DevServer
    from durable_agents.runtime.settings import EnvironmentSettings

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
UI_PORT_OFFSET = 1000
"""`temporal server start-dev` serves its Web UI on its port + 1000 unless told `--ui-port`."""
SETTINGS_PATH = "/api/v1/settings"
"""What every Temporal Web UI answers (its auth, codec and `Version`), without signing in."""
PROBE_TIMEOUT_SECONDS = 2.0


def checked_web_ui_url(url: str, name: str = "AGENT_WEB_UI_URL") -> str:
    """`url` without its trailing slash, or a `ValueError` naming `name`: an `http(s)://host`
    URL with no query or fragment (run links are `<url>/namespaces/<ns>/workflows/<id>`)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{name}: use an http:// or https:// URL with a host")
    if parts.query or parts.fragment:
        raise ValueError(f"{name}: use the Web UI's base URL, with no query or fragment")
    return url.strip().rstrip("/")


def dev_server_ui(address: str, settings: EnvironmentSettings) -> str | None:
    """Where a dev server at `address` has its Web UI, if `address` is on this machine (None
    otherwise): `TEMPORAL_DEV_UI_PORT` for the worker's own (on `TEMPORAL_DEV_PORT`; `worker.py`
    starts it so), its port + 1000 for another (`temporal server start-dev`'s default)."""
    host, _, port_text = address.rpartition(":")
    if host.strip("[]").lower() not in LOCAL_HOSTS:
        return None
    port = int(port_text) if port_text.isdigit() else settings.dev_server_port
    ui_port = (
        settings.dev_server_ui_port if port == settings.dev_server_port else port + UI_PORT_OFFSET
    )
    return f"http://localhost:{ui_port}"


async def answers_as_web_ui(url: str, timeout: float = PROBE_TIMEOUT_SECONDS) -> bool:
    """Whether a Temporal Web UI answers at `url` (its settings, with a `Version`); asked
    directly, never through a proxy of the environment (the guess is on this machine)."""
    try:
        async with httpx.AsyncClient(timeout=timeout, trust_env=False) as http:
            response = await http.get(url + SETTINGS_PATH)
        return response.status_code == 200 and "Version" in response.json()
    except (httpx.HTTPError, ValueError, TypeError):
        return False


@dataclass
class WebUiLink:
    """The Web UI runs are linked to: the `configured` one, else the `guess` for a local dev
    server once a Web UI answers there (asked again until one does: the dev server may start
    after the process that links to it)."""

    configured: str | None = None
    guess: str | None = None
    _answered: bool = field(default=False, repr=False)

    async def url(self) -> str | None:
        """The base URL to link runs under, or None: no link rather than a wrong one."""
        if self.configured is not None:
            return self.configured
        if self.guess is not None and not self._answered:
            self._answered = await answers_as_web_ui(self.guess)
        return self.guess if self._answered else None

    async def describe(self) -> str:
        """For a start-up line: the URL, or why there is none (yet) and how to name one."""
        url = await self.url()
        if url is not None:
            return url
        if self.guess is not None:
            return f"none yet ({self.guess} once a Temporal Web UI answers there; --web-ui URL)"
        return "none (--web-ui URL or AGENT_WEB_UI_URL)"


def web_ui_link(
    address: str, settings: EnvironmentSettings, configured: str | None = None
) -> WebUiLink:
    """The Web UI of the Temporal server at `address`: `configured` (a command-line flag),
    else `AGENT_WEB_UI_URL`, else a local dev server's (see the module docstring)."""
    if configured:
        return WebUiLink(configured=checked_web_ui_url(configured, "--web-ui"))
    if settings.web_ui_url is not None:  # checked when the settings were read
        return WebUiLink(configured=settings.web_ui_url)
    return WebUiLink(guess=dev_server_ui(address, settings))


def run_url(base: str, namespace: str, workflow_id: str) -> str:
    """A run's page in the Web UI at `base` (the path every Temporal Web UI serves)."""
    return f"{base}/namespaces/{quote(namespace, safe='')}/workflows/{quote(workflow_id, safe='')}"


async def started_web_ui(
    address: str, settings: EnvironmentSettings, server: DevServer | None
) -> str | None:
    """The Web UI the worker's start-up lines name: `AGENT_WEB_UI_URL`, else the UI of the dev
    server it started (`server`), else a local dev server's that answers, else none."""
    link = web_ui_link(address, settings)
    if server is not None and link.configured is None:
        return server.ui_url
    return await link.url()
