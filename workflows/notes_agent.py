"""The `notes` agent: keeps a notebook with the tools of `activities/notes.py`; deleting a
note waits for a person's approval. Started from code with `AgentClient.start(notes, ...)`;
other runs may hand it work (`"agents": ["notes"]`), as with any profile.
"""

from datetime import timedelta

from activities.notes import Notebook, delete_note, read_notes, write_note
from durable_agents import Agent

notes = Agent(
    "notes",
    instructions=(
        "You keep the user's notes. Read them before you answer a question about them; write "
        "a note when asked to remember something; delete one only when asked to."
    ),
    description="Keeps the user's notes: give it what to note, or a question about the notes.",
    deps_type=Notebook,
    tools=["current_time"],
)
notes.tool(write_note)
notes.tool(read_notes)
notes.tool(requires_approval=True, approval_timeout=timedelta(days=1))(delete_note)
