"""This repository's worker: `python worker.py` (or `make run`).

The engine's ready-made worker process (`durable_agents.worker`) connects as the `temporal`
CLI does, starts an embedded dev server when none answers, and serves the default agent, the
catalog's profiles and this application's agents (`workflows/`), whose tools (`activities/`)
get the notebook as their dependency. See `durable_agents/worker.py` for what it reads from the
environment. An application with its own `Worker` uses `DurableAgentsPlugin` instead.
"""

from pathlib import Path

from activities.notes import Notebook
from durable_agents.worker import main
from workflows import AGENTS

if __name__ == "__main__":
    main(agents=AGENTS, deps=Notebook(Path("workspace") / "notes"))
