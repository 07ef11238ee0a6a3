"""A decision made over HTTP, seen where a person checks it (issue 35, "Done when"): a run started
through `agent serve` by one principal waits for an approval; another principal approves it
with its bearer token; the real Temporal Web UI (a dev server's, in Debian's chromium) shows
that principal as the reviewer, authenticated, not self-declared, whatever `by` the request
named; and `agent audit` (the real CLI) lists the decision with that principal.

Slow (a dev server with its Web UI, a browser and a CLI process): `make test-slow`. Screenshots
go to `tmp_path`, or to `$AGENT_SCREENSHOTS_DIR`."""

from __future__ import annotations

import json
import os
import uuid
from contextlib import AsyncExitStack
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_agents.runtime import search_attributes
from durable_agents.runtime.dev_server import DevServer
from durable_agents.runtime.web_ui import WebUiLink, run_url
from durable_agents.servers.auth.authenticator import Authenticator, PrincipalsSource
from durable_agents.servers.auth.principals_file import add_principal
from testkit.browser import CHROMIUM, launch_chromium
from testkit.eventually import eventually
from tests import scripted_model as sm
from tests.catalog import TEST_CATALOG
from tests.conftest import FAKE_MODEL, AgentHarness, started_workers
from tests.http_api_support import live_api
from tests.scripted_model import ScriptedChatModel
from tests.test_cli_run import AgentCli
from tests.test_web_ui_waiting import web_ui_server  # noqa: F401 (the fixture)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium"),
]

PROMPT = "Write the quarterly numbers to q3.txt"
WRITE = {"path": "q3.txt", "content": "revenue 12.4"}
WAIT_MS = 60_000


async def test_the_web_ui_and_audit_show_the_principal_who_approved_over_http(
    web_ui_server: DevServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    from playwright.async_api import async_playwright

    shots = Path(os.environ.get("AGENT_SCREENSHOTS_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    client = await Client.connect(web_ui_server.address, data_converter=pydantic_data_converter)
    assert await search_attributes.ensure(client)
    principals = tmp_path / "principals.toml"
    sam = add_principal(principals, "sam", "acme", frozenset({"start", "read"}))
    anna = add_principal(principals, "anna", "acme", frozenset({"approve", "read"}))
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    model.enqueue(sm.tool_calls(sm.call("write_file", WRITE, id="w1")), sm.text("written"))
    async with AsyncExitStack() as stack:
        catalog = TEST_CATALOG.with_search_attributes()
        queue = await started_workers(stack, client, model, tmp_path, catalog=catalog)
        harness = cast(AgentHarness, SimpleNamespace(client=client, task_queue=queue))
        authenticator = Authenticator(principals=PrincipalsSource(principals))
        web_ui = WebUiLink(configured=web_ui_server.ui_url)
        async with live_api(harness, token=None, authenticator=authenticator, web_ui=web_ui) as api:
            as_sam = {"Authorization": f"Bearer {sam}"}
            as_anna = {"Authorization": f"Bearer {anna}"}
            workflow_id = f"q3-{uuid.uuid4().hex[:8]}"
            body = {"id": workflow_id, "prompt": PROMPT, "tools": ["write_file"]}
            started = await api.http.post("/v1/runs", json=body, headers=as_sam)
            assert started.status_code == 201, started.text

            async def pending() -> dict[str, Any]:
                answer = await api.http.get(f"/v1/runs/{workflow_id}/pending", headers=as_anna)
                assert answer.status_code == 200, answer.text
                [request] = answer.json()
                return cast(dict[str, Any], request)

            request = await eventually(
                pending, what="the approval", retry_on=(AssertionError, ValueError)
            )
            decision = {
                "call_id": "w1",
                "decision": "approve",
                "args_digest": request["args_digest"],
                "by": "the-cfo",  # a name the sender gives is not who decided
            }
            decided = await api.http.post(
                f"/v1/runs/{workflow_id}/decisions", json=decision, headers=as_anna
            )
            assert decided.status_code == 200, decided.text
            done = await api.http.get(f"/v1/runs/{workflow_id}/result?wait=true", headers=as_sam)
            assert done.status_code == 200, done.text
            info = await api.http.get("/v1/info", headers=as_anna)
            link = run_url(info.json()["web_ui_url"], info.json()["namespace"], workflow_id)

        async with async_playwright() as playwright:
            browser = await launch_chromium(playwright)
            try:
                page = await browser.new_page(viewport={"width": 1400, "height": 1000})
                shown = await decision_in_web_ui(page, link, shots / "web-ui-decision.png")
            finally:
                await browser.close()
    # The run's page, the decision opened from its timeline: the outcome the run recorded (the
    # `decide` update's) names anna, authenticated, in her tenant; the sender's `by` is gone.
    recorded = shown.split("Workflow Execution Update Completed", 1)[1]
    for line in ('"by": "anna"', '"name": "anna"', '"tenant": "acme"', '"self_declared": false'):
        assert line in recorded, shown
    assert "the-cfo" not in shown and '"self_declared": true' not in shown

    address = client.service_client.config.target_host
    audit = await AgentCli(address, queue)("audit", "--since", "10m", "--json", timeout=300)
    assert audit.code == 0, audit.err
    records = [json.loads(line) for line in audit.out.splitlines()]
    [record] = [r for r in records if r["workflow_id"] == workflow_id]
    assert (record["outcome"], record["by"], record["self_declared"], record["by_tenant"]) == (
        "approved",
        "anna",
        False,
        "acme",
    ), record
    assert record["digest_named"] == request["args_digest"]


async def decision_in_web_ui(page: Any, link: str, screenshot: Path) -> str:
    """Open the run's page at `link`, open its `decide` update from the timeline, and answer
    the text shown (the request and the outcome); the panel is saved to `screenshot`."""
    await page.goto(link)
    await page.get_by_text(PROMPT).first.wait_for(timeout=WAIT_MS)
    await page.get_by_text("decide", exact=True).first.click(timeout=WAIT_MS)
    completed = page.get_by_text("Workflow Execution Update Completed").first
    await completed.wait_for(timeout=WAIT_MS)
    await completed.scroll_into_view_if_needed()
    await page.screenshot(path=str(screenshot))
    return cast(str, await page.locator("body").inner_text())
