"""Who is signed in (issue 35): `GET /v1/me` answers the authenticated principal (name, tenant,
roles, limits) and never its token or the token's digest; the web console shows "signed in as
<name> (<tenant>, roles ...)" and its Sign out forgets the token; on a server with no
credentials (loopback) it shows no one.

Checked through a real `agent serve` (uvicorn) with a principals file, and in a real browser
(Debian's chromium driven by Playwright). Screenshots go to `tmp_path`, or to
`$AGENT_SCREENSHOTS_DIR`."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from durable_agents.servers.auth.authenticator import Authenticator, PrincipalsSource
from durable_agents.servers.auth.principals_file import add_principal, token_digest
from durable_agents.testing import fake_openai as fake
from testkit.browser import CHROMIUM, launch_chromium
from tests.conftest import AgentHarness
from tests.http_api_support import live_api

WAIT_MS = 30_000
SIGNED_IN = "signed in as anna (acme, roles approve, read, start)"


def principals(tmp_path: Path) -> tuple[Authenticator, dict[str, str]]:
    """A principals file with anna (tenant acme: start, approve, read) and sam (start only)."""
    path = tmp_path / "principals.toml"
    tokens = {
        "anna": add_principal(path, "anna", "acme", frozenset({"start", "approve", "read"})),
        "sam": add_principal(path, "sam", "acme", frozenset({"start"})),
    }
    return Authenticator(principals=PrincipalsSource(path)), tokens


async def test_me_answers_the_principal_and_no_secret(agent: AgentHarness, tmp_path: Path) -> None:
    authenticator, tokens = principals(tmp_path)
    async with live_api(agent, authenticator=authenticator) as api:
        anna = await api.http.get("/v1/me", headers={"Authorization": f"Bearer {tokens['anna']}"})
        assert anna.status_code == 200, anna.text
        assert anna.json() == {
            "authenticated": True,
            "name": "anna",
            "tenant": "acme",
            "roles": ["approve", "read", "start"],
            "limits": {"runs_per_minute": None, "concurrent_runs": None, "tokens_per_day": None},
        }
        assert tokens["anna"] not in anna.text and token_digest(tokens["anna"]) not in anna.text
        # A principal that may only start runs still sees who it is (no role needed).
        sam = await api.http.get("/v1/me", headers={"Authorization": f"Bearer {tokens['sam']}"})
        assert (sam.status_code, sam.json()["roles"]) == (200, ["start"])
        nobody = await api.http.get("/v1/me", headers={"Authorization": ""})
        assert nobody.status_code == 401
        wrong = await api.http.get("/v1/me", headers={"Authorization": "Bearer not-a-token"})
        assert wrong.status_code == 401
    async with live_api(agent, token=None) as api:  # no credentials: loopback, the local user
        local = await api.http.get("/v1/me")
        assert local.status_code == 200
        assert local.json()["authenticated"] is False and local.json()["name"] == "local"


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium")
async def test_the_console_shows_who_is_signed_in_and_signs_out(
    agent: AgentHarness, tmp_path: Path
) -> None:
    from playwright.async_api import async_playwright, expect

    shots = Path(os.environ.get("AGENT_SCREENSHOTS_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    authenticator, tokens = principals(tmp_path)
    agent.fake.enqueue(fake.text("Hello, anna."))
    async with async_playwright() as playwright:
        browser = await launch_chromium(playwright)
        try:
            async with live_api(agent, token=None) as api:  # loopback, no credentials
                page, errors = await console_page(browser, api.url, "")
                await expect(page.locator("#message")).to_be_enabled(timeout=WAIT_MS)
                await expect(page.locator("#who")).to_be_hidden()
                assert errors == []
                await page.close()

            async with live_api(agent, authenticator=authenticator) as api:
                page, errors = await console_page(browser, api.url, tokens["anna"])
                who = page.locator("#who")
                await expect(who).to_be_visible(timeout=WAIT_MS)
                await expect(page.locator("#who-text")).to_have_text(SIGNED_IN)
                await page.reload()  # the token is kept for the tab: still signed in
                await expect(page.locator("#who-text")).to_have_text(SIGNED_IN, timeout=WAIT_MS)

                await page.click("#open")
                await page.fill("#message", "hello")
                await page.click("#send")  # the session starts: the page shows its turn
                await expect(page.locator(".bubble.assistant")).to_have_text(
                    "Hello, anna.", timeout=WAIT_MS
                )
                await page.screenshot(path=str(shots / "console-signed-in.png"))

                await page.click("#signout")
                await expect(who).to_be_hidden()
                await expect(page.locator("#token")).to_have_value("")
                await expect(page.locator("#message")).to_be_disabled()
                await expect(page.locator("#chat")).to_be_empty()
                await expect(page.locator("#status")).to_have_text(
                    "signed out: this page no longer holds the token"
                )
                stored = await page.evaluate("sessionStorage.getItem('agent-console')")
                assert tokens["anna"] not in stored
                await page.screenshot(path=str(shots / "console-signed-out.png"))
                await page.reload()
                await expect(page.locator("#token")).to_have_value("")
                await expect(who).to_be_hidden()
                assert errors == []
                await browser.close()  # (its connections closed: the server stops at once)
        finally:
            await browser.close()


async def console_page(browser: Any, url: str, token: str) -> tuple[Any, list[Any]]:
    """The console at `url` with a new session opened with `token`, and the list its uncaught
    errors and Content-Security-Policy refusals go to."""
    page = await browser.new_page(viewport={"width": 1280, "height": 480})
    errors: list[Any] = []

    def page_error(error: Any) -> None:
        errors.append(error)

    def refused_by_policy(message: Any) -> None:
        if "Content Security Policy" in message.text:
            errors.append(message.text)

    page.on("pageerror", page_error)
    page.on("console", refused_by_policy)
    await page.goto(url + "/")
    await page.fill("#session", f"console-{uuid.uuid4().hex[:6]}")
    await page.fill("#token", token)
    await page.click("#open")
    return page, errors
