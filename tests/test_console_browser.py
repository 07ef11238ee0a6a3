"""The web console at `/` in a real browser (Debian's chromium driven by Playwright, no browser
download): open a session, send a message, watch the answer's tokens arrive while the model is
still writing it, approve a `write_file` call from the page (bound to the digest it showed),
and see the answer; and run a client-side tool as the page (a result that breaks the tool's
result_schema is refused and fixed in place). Screenshots go to `tmp_path`, or to
`$AGENT_SCREENSHOTS_DIR` (how the ones in docs/images/ were made)."""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from durable_agents.testing import fake_openai as fake
from testkit.browser import CHROMIUM, launch_chromium
from tests.conftest import AgentHarness
from tests.http_api_support import TOKEN, live_api
from tests.test_client_tools import LOCATION

WAIT_MS = 30_000
ANSWER = "Done: notes.txt now says hello world, as you asked. Anything else I can write for you?"
HELD_CHUNKS = 6  # the role chunk, then 5 pieces of 4 characters: "Done: notes.txt now "
PARTIAL = ANSWER[:20]

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium")


async def open_console(browser: Any, url: str, session: str) -> tuple[Any, list[Any]]:
    """A page of the console at `url` with `session` open (the token given), and the list the
    page's uncaught errors (and what its Content-Security-Policy refused) go to."""
    from playwright.async_api import expect

    page = await browser.new_page(viewport={"width": 1280, "height": 800})
    errors: list[Any] = []

    def page_error(error: Any) -> None:
        errors.append(error)

    page.on("pageerror", page_error)

    def refused_by_policy(message: Any) -> None:  # the console's CSP blocked something
        if "Content Security Policy" in message.text:
            errors.append(message.text)

    page.on("console", refused_by_policy)
    await page.goto(url + "/")
    await page.fill("#session", session)
    await page.fill("#token", TOKEN)
    await page.click("#open")
    await expect(page.locator("#message")).to_be_enabled(timeout=WAIT_MS)
    return page, errors


async def test_chat_approve_and_answer_in_the_console(agent: AgentHarness, tmp_path: Path) -> None:
    from playwright.async_api import async_playwright, expect

    shots = Path(os.environ.get("AGENT_SCREENSHOTS_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    release = threading.Event()
    agent.fake.enqueue(
        fake.streamed(
            fake.tool_calls(
                fake.call("write_file", {"path": "notes.txt", "content": "hello world"}, id="w1"),
                content="I will write the file once you approve.",
            ),
            piece_chars=6,
        ),
        fake.streamed(ANSWER, piece_chars=4, hold_after=HELD_CHUNKS, release=release),
    )
    session = f"console-{uuid.uuid4().hex[:6]}"
    async with live_api(agent) as api, async_playwright() as playwright:
        browser = await launch_chromium(playwright)
        try:
            page, errors = await open_console(browser, api.url, session)
            link = page.locator("#webui")
            await expect(link).to_have_attribute(
                "href", f"http://localhost:8233/namespaces/default/workflows/{session}"
            )
            await page.fill("#message", "Write hello world to notes.txt")
            await page.click("#send")

            # The call waits; the page shows its arguments and the buttons bound to them.
            approve = page.locator('.request[data-call="w1"] button.approve')
            await expect(approve).to_be_visible(timeout=WAIT_MS)
            await expect(page.locator(".bubble.user")).to_have_text(
                "Write hello world to notes.txt"
            )
            await expect(page.locator('.tool[data-call="w1"] .args')).to_contain_text(
                '"path": "notes.txt"'
            )
            await expect(page.locator('.tool[data-call="w1"] .state')).to_have_text(
                "waits for your approval"
            )
            await expect(page.locator(".bubble.assistant").first).to_have_text(
                "I will write the file once you approve."
            )
            await page.screenshot(path=str(shots / "console-approval.png"))
            assert not (agent.workspace / "notes.txt").exists()
            await approve.click()

            # The tool ran; the answer's first tokens show while the model is still writing.
            await expect(page.locator('.tool[data-call="w1"]')).to_have_class("tool ok")
            await expect(page.locator('.tool[data-call="w1"] .observation')).to_be_visible()
            live = page.locator(".bubble.assistant.live")
            await expect(live).to_have_text(PARTIAL, timeout=WAIT_MS)
            await page.screenshot(path=str(shots / "console-tokens.png"))
            release.set()

            answer = page.locator(".bubble.assistant").last
            await expect(answer).to_have_text(ANSWER, timeout=WAIT_MS)
            await expect(page.locator(".bubble.assistant.live")).to_have_count(0)
            await expect(page.locator(".note").last).to_contain_text("completed")
            await expect(page.locator("#waiting")).to_have_text("nothing")
            await page.screenshot(path=str(shots / "console.png"))
            assert errors == []
        finally:
            await browser.close()
    assert (agent.workspace / "notes.txt").read_text() == "hello world"
    history = await agent.client.get_workflow_handle(session).fetch_history()
    assert TOKEN not in history.to_json()


async def test_the_console_runs_a_client_tool(agent: AgentHarness, tmp_path: Path) -> None:
    from playwright.async_api import async_playwright, expect

    shots = Path(os.environ.get("AGENT_SCREENSHOTS_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    agent.fake.enqueue(
        fake.streamed(
            fake.tool_calls(
                fake.call("get_location", {"accuracy": "city"}, id="loc1"),
                content="Let me ask your browser where you are.",
            ),
            piece_chars=6,
        ),
        fake.streamed("You are in Lyon.", piece_chars=4),
    )
    session = f"console-tool-{uuid.uuid4().hex[:6]}"
    async with live_api(agent) as api, async_playwright() as playwright:
        created = await api.http.post(
            "/v1/sessions", json={"id": session, "agent": {"client_tools": [LOCATION]}}
        )
        assert created.status_code == 201, created.text
        browser = await launch_chromium(playwright)
        try:
            page, errors = await open_console(browser, api.url, session)
            await page.fill("#message", "Where am I?")
            await page.click("#send")

            request = page.locator('.request[data-call="loc1"]')
            await expect(request.locator("button.send-result")).to_be_visible(timeout=WAIT_MS)
            await expect(request.locator("strong")).to_have_text("Run get_location here")
            await expect(request.locator(".args")).to_contain_text('"accuracy": "city"')
            await expect(page.locator('.tool[data-call="loc1"] .state')).to_have_text(
                "waits for this client to run it"
            )
            await expect(request.locator("button.send-error")).to_be_visible()

            # A result that breaks the tool's result_schema: the workflow refuses it, the page
            # says why and keeps the box to fix it.
            await request.locator("textarea.tool-result").fill('{"lat": 45.7}')
            await request.locator("button.send-result").click()
            await expect(request.locator(".result")).to_have_text(
                "refused: the result for get_location (loc1) does not match its "
                "result_schema: (root): 'city' is a required property",
                timeout=WAIT_MS,
            )
            await expect(request.locator("button.send-result")).to_be_enabled()
            await page.screenshot(path=str(shots / "console-client-tool.png"))

            await request.locator("textarea.tool-result").fill('{"city": "Lyon"}')
            await request.locator("button.send-result").click()
            tool = page.locator('.tool[data-call="loc1"]')
            await expect(tool).to_have_class("tool ok", timeout=WAIT_MS)
            await expect(tool.locator(".observation")).to_have_text('{"city": "Lyon"}')
            await expect(page.locator(".bubble.assistant").last).to_have_text(
                "You are in Lyon.", timeout=WAIT_MS
            )
            await expect(page.locator("#waiting")).to_have_text("nothing")
            assert errors == []
        finally:
            await browser.close()
    sent = agent.fake.requests[1].body["messages"][-1]
    assert (sent["role"], sent["content"]) == ("tool", '{"city": "Lyon"}')
