"""examples/web_page (issue 34 item 4) in a real browser: the plain HTML page, served from its
own origin, starts a run on a real `agent serve` (CORS naming the page's origin), follows its
server-sent events, shows the `write_file` call that waits with Approve, approves it bound to
the digest of the arguments it showed, and shows the answer. The worker is the real one with
the real `openai` client against the scripted model server."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from durable_agents.testing import fake_openai as fake
from testkit.browser import CHROMIUM, launch_chromium
from tests.conftest import AgentHarness
from tests.http_api_support import live_api

PAGE = Path(__file__).resolve().parent.parent / "examples" / "web_page"
WAIT_MS = 30_000

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium")


@pytest.fixture
def page_origin() -> Iterator[str]:
    """examples/web_page served as `python -m http.server` serves it, on a free port."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(PAGE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join()


async def test_the_page_starts_a_run_approves_its_call_and_shows_the_answer(
    agent: AgentHarness, page_origin: str
) -> None:
    from playwright.async_api import async_playwright, expect

    agent.fake.enqueue(
        fake.tool_calls(fake.call("write_file", {"path": "notes.txt", "content": "hello world"})),
        fake.text("Done: notes.txt says hello world."),
    )
    async with (
        live_api(agent, token=None, cors_origins=(page_origin,)) as api,
        async_playwright() as playwright,
    ):
        browser = await launch_chromium(playwright)
        try:
            page = await browser.new_page()
            errors: list[object] = []

            def page_error(error: object) -> None:
                errors.append(error)

            page.on("pageerror", page_error)
            await page.goto(f"{page_origin}/index.html?api={api.url}")
            await page.click("#start")
            await expect(page.locator("#call")).to_contain_text("write_file", timeout=WAIT_MS)
            await expect(page.locator("#call")).to_contain_text("hello world")
            await page.click("#approve")
            await expect(page.locator("#answer")).to_have_text(
                "Done: notes.txt says hello world.", timeout=WAIT_MS
            )
            await expect(page.locator("#log")).to_contain_text("write_file: wrote 11 bytes")
            run_id = (await page.locator("#run").text_content() or "").removeprefix("run ")
        finally:
            await browser.close()
        result = (await api.http.get(f"/v1/runs/{run_id}/result")).json()
    assert errors == []
    human = result["steps"][0]["human"]
    assert (human["outcome"], human["by"]) == ("approved", "web page")
    assert human["args_digest"]  # the approval named the digest of what the page showed
    assert (agent.workspace / "notes.txt").read_text() == "hello world"
