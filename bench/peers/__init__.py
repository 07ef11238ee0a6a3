"""The same workloads on ours and on the real peers (issue 24, `make bench-peers`): Temporal's
OpenAI Agents integration, Pydantic AI's Temporal integration and Temporal's agent harness, each
in its own virtual environment under `bench/peers/.venvs/` (`bench/peers/venvs.sh`), each worker
in a process of its own, all on one dev server against the one fake model (`bench.fake_model`).

`bench.peers.run` drives them from the project's venv; `bench.peers.workers` holds the peers'
worker and workflow modules, which run only inside the peers' venvs. Results and configurations:
BENCHMARKS.md, "Against the real peers".
"""
