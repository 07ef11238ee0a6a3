"""The `current_time` tool: the current date and time in an IANA time zone.

Why a tool: a model does not know what time it is. Reading the clock is not deterministic, so
this must never run inside workflow code; as a tool it runs in an activity, where that is fine,
and the answer is recorded in the workflow history like any other tool result.

Zone names are IANA names (`UTC`, `Europe/Paris`, `Asia/Shanghai`) resolved with `zoneinfo`
(the `tzdata` package is a dependency so this also works without system zone files). A name that
differs from a real zone only in letter case is accepted (`asia/shanghai`); an unknown name is a
`ToolError` that suggests close matches and gives an example.
"""

from __future__ import annotations

import difflib
from datetime import datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import BaseModel, Field

from durable_agents.tools.definition import ToolError, tool


class CurrentTimeArgs(BaseModel):
    """Arguments of the `current_time` tool."""

    timezone: str = Field(
        default="UTC",
        description="IANA time zone name, e.g. 'UTC', 'Europe/Paris', 'Asia/Shanghai'.",
        max_length=64,
    )


_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


@lru_cache(maxsize=1)
def _zone_names() -> dict[str, str]:
    """Lower-cased zone name -> canonical name (scans the zone database once)."""
    return {name.lower(): name for name in available_timezones()}


def load_zone(name: str) -> ZoneInfo:
    """The `ZoneInfo` for an IANA name (case-insensitive fallback); `ToolError` if unknown."""
    key = name.strip()
    try:
        return ZoneInfo(key)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        pass  # not a valid key as written: try a case-insensitive match below
    names = _zone_names()
    canonical = names.get(key.lower())
    if canonical is not None:
        try:
            return ZoneInfo(canonical)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            pass
    close = difflib.get_close_matches(key, sorted(names.values()), n=3, cutoff=0.6)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise ToolError(
        f"unknown time zone {name!r}: use an IANA time zone name such as 'UTC', "
        f"'Europe/Paris' or 'Asia/Shanghai'.{hint}"
    )


def describe_time(moment: datetime, zone: ZoneInfo) -> str:
    """Format an aware datetime in `zone`, e.g. "2026-11-30T11:40:02+00:00 (Monday, UTC)"."""
    local = moment.astimezone(zone)
    weekday = _WEEKDAYS[local.weekday()]  # not strftime("%A"): that depends on the locale
    return f"{local.isoformat(timespec='seconds')} ({weekday}, {zone.key})"


# A regular activity, not a local one (`ToolOptions.local`), although it is cheap: it reads the
# clock, so it is not pure, and local is only for pure tools. A local activity's result is kept
# only once the workflow task that records its marker completes; a worker lost before that
# re-runs it, and here the re-run would quietly answer a different time than the first attempt
# (logged) did. The saving would be small too: a run asks the time once, not in a loop.
@tool(start_to_close_timeout=timedelta(seconds=5))
async def current_time(args: CurrentTimeArgs) -> str:
    """Get the current date and time in a time zone (IANA name, default UTC).

    Returns an ISO 8601 timestamp with the UTC offset, followed by the weekday and zone, e.g.
    "2026-11-30T19:40:02+08:00 (Monday, Asia/Shanghai)".
    """
    zone = load_zone(args.timezone)
    return describe_time(datetime.now(zone), zone)
