"""An A2A client session with `agent a2a`, as another agent has it.

    agent a2a                                  # in one shell, with make run's worker up
    python scripts/docs/a2a_session.py         # in another (or: --url http://127.0.0.1:N/)

`a2a-sdk`'s own client (`create_client`, streaming) sends a task whose `write_file` waits for
approval, answers it with `approve` on the same task, sends the researcher a sum (the skill
picked by `metadata.agent`), and asks for an agent that does not exist. What it prints is the
page's transcript (`scripts/doc_excerpts.py`, recipe `a2a-session`), so docs/mcp-and-a2a.md shows
what this client gets today.
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from typing import Any

import httpx
from a2a.client import Client, ClientConfig, create_client
from a2a.helpers.proto_helpers import get_artifact_text, get_message_text
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, TaskState

DEFAULT_URL = "http://127.0.0.1:8766/"
"""Where `agent a2a` listens by default."""


# --8<-- [start:a2a-client]
def message(text: str, *, task: tuple[str, str] | None = None, **metadata: Any) -> Message:
    """A user message: a new task, or (`task`: its id and context) the answer to one."""
    sent = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    if task is not None:
        sent.task_id, sent.context_id = task
    sent.metadata.update(metadata)
    return sent


async def send(client: Client, sent: Message) -> tuple[str, str]:
    """Send a message and print what streams back; the task's id and context."""
    shown = "  (metadata: " + ", ".join(f"{k} {v}" for k, v in sent.metadata.items()) + ")"
    print(f"> {get_message_text(sent)}{shown if sent.metadata else ''}")
    task = (sent.task_id, sent.context_id)
    async for event in client.send_message(SendMessageRequest(message=sent)):
        if event.HasField("task"):
            task = (event.task.id, event.task.context_id)
            print(f"  task {event.task.id} {TaskState.Name(event.task.status.state)}")
        elif event.HasField("status_update"):
            status = event.status_update.status
            text = get_message_text(status.message).replace("\n", "\n    ")
            print(f"  {TaskState.Name(status.state):<28} {text}")
        elif event.HasField("artifact_update"):
            artifact = event.artifact_update.artifact
            print(f"  artifact {artifact.name!r}: {get_artifact_text(artifact)}")
    return task


async def main(url: str) -> None:
    async with httpx.AsyncClient(timeout=httpx.Timeout(60, read=120)) as http:
        client = await create_client(url, ClientConfig(streaming=True, httpx_client=http))
        try:
            task = await send(client, message("Write hello world to notes.txt"))
            await send(client, message("approve", task=task))  # the task waited: answer it
            await send(client, message("What is 17 * 25?", agent="researcher"))
            try:
                await send(client, message("Hello", agent="writer"))
            except Exception as refused:  # a JSON-RPC error: nothing started
                print(f"error: {type(refused).__name__}: {refused}")
        finally:
            await client.close()


# --8<-- [end:a2a-client]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=DEFAULT_URL, help=f"agent a2a's URL ({DEFAULT_URL})")
    asyncio.run(main(parser.parse_args().url))
