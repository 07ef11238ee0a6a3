"""This repository's worker: `python worker.py` (or `make run`).

The engine's ready-made worker process (`durable_agents.worker`) connects as the `temporal`
CLI does, starts an embedded dev server when none answers, and serves the default agent, the
catalog's profiles and this application's agents (`workflows/`), whose tools (`activities/`)
get the notebook as their dependency. See `durable_agents/worker.py` for what it reads from the
environment. An application with its own `Worker` uses `DurableAgentsPlugin` instead. Without
`WEATHER_URL`, the `weather` tool asks a demo service started here (`examples/weather_service.py`:
made-up weather, and the first request of each call fails on purpose).
"""

from pathlib import Path

from activities.notes import Notebook
from durable_agents.worker import main
from examples.weather_service import serve_demo_weather
from workflows import AGENTS

if __name__ == "__main__":
    serve_demo_weather()
    main(agents=AGENTS, deps=Notebook(Path("workspace") / "notes"))
