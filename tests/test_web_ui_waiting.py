"""What an operator sees in the Temporal Web UI, in a real browser: the workflow list filtered by
`AgentPhase="waiting_for_human"` shows the waiting run, and the run's page shows its summary
(the prompt's first line) under "User Metadata". Screenshots go to docs/images/."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from urllib.parse import quote

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_agents.loop.summaries import first_line
from durable_agents.runtime import search_attributes
from durable_agents.runtime.dev_server import DevServer, is_listening
from testkit.browser import launch_chromium
from testkit.crash_tools import free_port
from testkit.eventually import eventually
from tests import scripted_model as sm
from tests.catalog import TEST_CATALOG
from tests.conftest import FAKE_MODEL, started_workers
from tests.hitl_support import wait_for_pending
from tests.scripted_model import ScriptedChatModel

IMAGES = Path(__file__).resolve().parent.parent / "docs" / "images"
PROMPT = "Write the release notes to notes.txt\nUse the changelog since v1.2."


@pytest.fixture(scope="module")
async def web_ui_server() -> AsyncIterator[DevServer]:
    """A dev server with its Web UI (the session's server runs without one)."""
    with tempfile.TemporaryDirectory(prefix="web-ui-") as tmp:
        server = await asyncio.to_thread(
            DevServer.start, db_file=Path(tmp) / "t.db", port=free_port(), ui_port=free_port()
        )
        try:
            await eventually(
                lambda: is_listening("127.0.0.1", server.ui_port), what="the Web UI port"
            )
            yield server
        finally:
            server.stop()


async def test_the_list_filtered_by_phase_shows_the_waiting_run_and_its_summary(
    web_ui_server: DevServer, tmp_path: Path
) -> None:
    from playwright.async_api import async_playwright

    client = await Client.connect(web_ui_server.address, data_converter=pydantic_data_converter)
    assert await search_attributes.ensure(client)
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    args = {"path": "notes.txt", "content": "notes"}
    model.enqueue(sm.tool_calls(sm.call("write_file", args, id="w1")), sm.text("written"))
    summary = first_line(PROMPT)
    async with AsyncExitStack() as stack:
        catalog = TEST_CATALOG.with_search_attributes()
        queue = await started_workers(stack, client, model, tmp_path, catalog=catalog)
        handle = await client.start_workflow(
            "AgentWorkflow",
            {"prompt": PROMPT, "tools": ["write_file"]},
            id=f"web-ui-wait-{uuid.uuid4().hex[:8]}",
            task_queue=queue,
            static_summary=summary,
        )
        await wait_for_pending(handle)
        query = f'AgentPhase="waiting_for_human" AND WorkflowId="{handle.id}"'

        async def listed() -> bool:
            return [e.id async for e in client.list_workflows(query)] == [handle.id]

        await eventually(listed, what="the run in the filtered list")

        async with async_playwright() as playwright:
            browser = await launch_chromium(playwright)
            page = await browser.new_page(viewport={"width": 1400, "height": 800})
            ui = web_ui_server.ui_url
            waiting = 'AgentPhase="waiting_for_human"'  # this server has only this test's runs
            await page.goto(f"{ui}/namespaces/default/workflows?query={quote(waiting)}")
            row = page.get_by_role("link", name=handle.id, exact=True).first
            await row.wait_for(timeout=30_000)
            # The agent attributes are list columns an operator can add (Web UI 2.54 has no
            # column for the summary; the run's page shows it).
            await page.get_by_label("Configure Columns").click()
            await page.get_by_label("Remove Run ID column").click()
            for name in ("AgentPhase", "AgentWaitingFor"):
                await page.get_by_label(f"Add {name} column").click()
            await page.get_by_label("Close Workflows Table configuration").click()
            await page.get_by_text("Configure Workflows Table").wait_for(state="hidden")
            await page.get_by_role("cell", name="waiting_for_human").first.wait_for(timeout=30_000)
            IMAGES.mkdir(parents=True, exist_ok=True)
            await page.screenshot(path=str(IMAGES / "web-ui-waiting-list.png"))

            await row.click()
            await page.get_by_text("User Metadata", exact=True).click()

            async def shown() -> bool:  # the Markdown renders in iframes
                for frame in page.frames:
                    with contextlib.suppress(Exception):
                        if summary in await frame.locator("body").inner_text(timeout=1000):
                            return True
                return False

            await eventually(shown, what="the summary on the run's page")
            await page.screenshot(path=str(IMAGES / "web-ui-waiting-run.png"))
            await browser.close()

        await handle.signal("approve", {"call_id": "w1"})
        await handle.result()
