"""Chat with the concierge from the terminal: each line you type is one turn of a durable
session; an empty line ends it.

    python -m examples.session_chat.worker            # terminal 1 (a Temporal server on :7233)
    python -m examples.session_chat.chat guest-42     # terminal 2: the session id

Stop and start `chat.py` again with the same id: the conversation goes on where it was, since
the session lives in Temporal, not in this process.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Iterable

from temporalio.client import Client

from durable_agents import AgentClient, SessionHandle
from durable_agents.errors import RunAlreadyStarted
from examples.session_chat.agent import session_settings
from examples.session_chat.worker import TASK_QUEUE


# --8<-- [start:session]
async def open_session(
    agents: AgentClient, session_id: str, task_queue: str = TASK_QUEUE
) -> SessionHandle:
    """The session `session_id`: started with the concierge's settings, or the running one."""
    try:
        return await agents.start_session(session_settings(), id=session_id, task_queue=task_queue)
    except RunAlreadyStarted:
        return agents.session(session_id, task_queue=task_queue)


async def chat(session: SessionHandle, lines: Iterable[str]) -> list[str]:
    """Send each line as a message and print its turn's answer; the answers."""
    answers = []
    for line in lines:
        if not line.strip():
            break
        turn = await session.send(line.strip())
        print(f"[turn {turn.turn}] {turn.answer}", flush=True)
        answers.append(turn.answer or "")
    return answers


# --8<-- [end:session]


async def main(session_id: str) -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    session = await open_session(AgentClient(client), session_id)
    await chat(session, sys.stdin)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("session_id", help="letters, digits and -_.:/@")
    asyncio.run(main(parser.parse_args().session_id))
