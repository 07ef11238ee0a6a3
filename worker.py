"""This repository's worker: `python worker.py` (or `make run`).

The engine's ready-made worker process lives in the library (`durable_agents.worker`): it
connects as the `temporal` CLI does, starts an embedded dev server when none answers, and serves
the default agent, the catalog's profiles and this application's agents. This file is the
application's entry point, as in Temporal's samples; see `durable_agents/worker.py` for what it
reads from the environment.
"""

from durable_agents.worker import main

if __name__ == "__main__":
    main()
