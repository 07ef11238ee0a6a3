"""A real browser for checks of what a person sees: Debian's chromium driven by Playwright from
PyPI (no browser download). Used by the Web UI and console tests and `scripts/check_web_ui.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
"""Debian's chromium (`apt-get install -y chromium`; `make test` installs it when missing)."""

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""Headless, and no background connections: this machine's closed network refuses them."""


async def launch_chromium(playwright: Any) -> Any:
    """A headless chromium `Browser` from an `async_playwright()` context."""
    if not CHROMIUM.exists():
        raise FileNotFoundError(
            f"{CHROMIUM} is missing: apt-get update && apt-get install -y chromium"
        )
    return await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
