"""Where `agent serve`'s console links runs (issue 31, item 9; issue 35): the Web UI named by
`AGENT_WEB_UI_URL` / `--web-ui`, else the one of a dev server on this machine, found from the
settings the worker uses (`TEMPORAL_DEV_PORT`, `TEMPORAL_DEV_UI_PORT`) and linked only once a
Temporal Web UI answers there, else none: no link rather than a wrong one. Through the real
`agent serve` process against a real dev server whose Web UI is on another port, as in the
trial (17233 / 18233), and against the session's server, which has no Web UI."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from durable_agents.runtime.dev_server import DevServer, is_listening
from durable_agents.runtime.settings import EnvironmentSettings, SettingsError
from durable_agents.runtime.web_ui import (
    UI_PORT_OFFSET,
    WebUiLink,
    dev_server_ui,
    run_url,
    web_ui_link,
)
from testkit.crash_tools import free_port
from testkit.eventually import eventually


def port_pair() -> int:
    """A free port whose port + 1000 is free too (the dev server's default for its UI)."""
    for _ in range(50):
        port = free_port()
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port + UI_PORT_OFFSET))
            except OSError:
                continue
        return port
    raise RuntimeError("no free pair of ports")


@pytest.fixture(scope="module")
async def dev_server() -> AsyncIterator[DevServer]:
    """The worker's embedded dev server, started as `worker.py` starts it with
    `TEMPORAL_DEV_PORT=P TEMPORAL_DEV_UI_PORT=P+1000`."""
    port = port_pair()
    with tempfile.TemporaryDirectory(prefix="serve-ui-") as tmp:
        server = await asyncio.to_thread(
            DevServer.start, db_file=Path(tmp) / "t.db", port=port, ui_port=port + UI_PORT_OFFSET
        )
        try:
            await eventually(lambda: is_listening("127.0.0.1", server.ui_port), what="the Web UI")
            yield server
        finally:
            server.stop()


async def served_web_ui(args: list[str], env: dict[str, str]) -> str | None:
    """`agent serve ARGS` in a process of its own: the Web UI its console links to
    (`/v1/info`, which the console builds each run's link from)."""
    port = free_port()
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "AGENT_"))}
    process = subprocess.Popen(
        [sys.executable, "-m", "durable_agents.cli.main", "serve", "--port", str(port), *args],
        env={**environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:

            async def info() -> dict[str, str | None]:
                assert process.poll() is None, process.stderr and process.stderr.read()
                response = await http.get("/v1/info")
                assert response.status_code == 200, response.text
                body: dict[str, str | None] = response.json()
                return body

            found = await eventually(
                info,
                what="agent serve to answer",
                timeout=60,
                retry_on=(AssertionError, httpx.HTTPError),
            )
            return found["web_ui_url"]
    finally:
        process.terminate()
        process.wait(timeout=30)


async def answers(url: str) -> int:
    async with httpx.AsyncClient(timeout=10) as http:
        return (await http.get(url)).status_code


async def test_serve_links_the_worker_s_web_ui(dev_server: DevServer) -> None:
    """With the worker's settings, and with no more than the server's address (the trial:
    `agent serve` without `TEMPORAL_DEV_UI_PORT` linked port 8233, where nothing listened)."""
    same_settings = {
        "TEMPORAL_ADDRESS": dev_server.address,
        "TEMPORAL_DEV_PORT": str(dev_server.port),
        "TEMPORAL_DEV_UI_PORT": str(dev_server.ui_port),
    }
    for args, env in (([], same_settings), (["--address", dev_server.address], {})):
        url = await served_web_ui(args, env)
        assert url == dev_server.ui_url, (args, env)
        assert await answers(url) == 200  # the Web UI is really there


async def test_serve_links_the_configured_web_ui_and_no_wrong_guess(
    temporal_env: WorkflowEnvironment,
) -> None:
    """`AGENT_WEB_UI_URL` (a deployment's UI, elsewhere than any guess) is the link; unset, a
    server on this machine with no Web UI beside it (the session's headless server, as
    compose's, whose UI is on 8080) gets no link, where its port + 1000 was linked before."""
    headless = temporal_env.client.service_client.config.target_host
    elsewhere = "https://temporal-ui.example:8443/"
    named, unset = await asyncio.gather(
        served_web_ui(["--address", headless], {"AGENT_WEB_UI_URL": elsewhere}),
        served_web_ui(["--address", headless], {}),
    )
    assert (named, unset) == (elsewhere.rstrip("/"), None)


def test_a_web_ui_url_is_checked() -> None:
    with pytest.raises(SettingsError, match="AGENT_WEB_UI_URL: use an http"):
        EnvironmentSettings.from_env({"AGENT_WEB_UI_URL": "temporal-ui:8080"})
    with pytest.raises(ValueError, match="--web-ui: use the Web UI's base URL"):
        web_ui_link("localhost:7233", EnvironmentSettings.from_env({}), "http://ui/?x=1")


async def test_a_server_elsewhere_gets_no_link_unless_one_is_named() -> None:
    unset = web_ui_link("temporal.example:7233", EnvironmentSettings.from_env({}))
    assert unset == WebUiLink() and await unset.url() is None
    assert await unset.describe() == "none (--web-ui URL or AGENT_WEB_UI_URL)"
    named = EnvironmentSettings.from_env({"AGENT_WEB_UI_URL": "https://cloud.temporal.io/"})
    link = web_ui_link("acme.a1b2c.tmprl.cloud:7233", named)
    assert await link.url() == "https://cloud.temporal.io"
    flag = web_ui_link("acme.a1b2c.tmprl.cloud:7233", named, "https://ui.acme.example")
    assert await flag.url() == "https://ui.acme.example"  # --web-ui beats the environment
    assert (
        run_url("https://cloud.temporal.io", "acme.a1b2c", "notes 1/2")
        == "https://cloud.temporal.io/namespaces/acme.a1b2c/workflows/notes%201%2F2"
    )


def test_the_web_ui_follows_the_settings() -> None:
    settings = EnvironmentSettings.from_env(
        {"TEMPORAL_DEV_PORT": "17233", "TEMPORAL_DEV_UI_PORT": "9000"}
    )
    assert dev_server_ui("localhost:17233", settings) == "http://localhost:9000"
    assert dev_server_ui("127.0.0.1:7233", settings) == "http://localhost:8233"
    assert dev_server_ui("temporal.example:7233", settings) is None
    assert (
        dev_server_ui("localhost:7233", EnvironmentSettings.from_env({})) == "http://localhost:8233"
    )
