"""The web console (a real chromium through Playwright, the real `agent serve` and worker) as a
reader of a session's stream: a forged batch on the stream's publish signal shows nothing
(issue 40, attack 5), and a session terminated while its turn waits ends with a note naming
how, made from the workflow's close status (issue 31, item 1)."""

from __future__ import annotations

import uuid

import pytest

from durable_agents.testing import fake_openai as fake
from testkit.browser import CHROMIUM, launch_chromium
from tests.conftest import AgentHarness
from tests.http_api_support import live_api
from tests.test_console_browser import WAIT_MS, open_console
from tests.test_forged_events import FORGED, forge, forged_events, handled

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium")


async def test_the_console_shows_no_forged_event_and_names_a_termination(
    agent: AgentHarness,
) -> None:
    from playwright.async_api import async_playwright, expect

    agent.fake.enqueue(
        fake.tool_calls(fake.call("write_file", {"path": "a.txt", "content": "a"}, id="w1"))
    )
    session = f"console-end-{uuid.uuid4().hex[:6]}"
    async with live_api(agent) as api, async_playwright() as playwright:
        browser = await launch_chromium(playwright)
        try:
            page, errors = await open_console(browser, api.url, session)
            await page.fill("#message", "Write a to a.txt")
            await page.click("#send")
            approve = page.locator('.request[data-call="w1"] button.approve')
            await expect(approve).to_be_visible(timeout=WAIT_MS)

            handle = agent.client.get_workflow_handle(session)
            await forge(handle, forged_events(session, turn=1))
            await handled(handle)
            await handle.terminate(reason="operator stop")
            note = page.locator(".note").last
            await expect(note).to_contain_text(
                "the run was terminated: operator stop (from the workflow's close status)",
                timeout=WAIT_MS,
            )
            assert FORGED not in await page.content()
            assert errors == []
        finally:
            await browser.close()
