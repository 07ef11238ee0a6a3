"""The peers' workers, workflows and replayer, each run by a peer's own interpreter
(`bench/peers/.venvs/<peer>/bin/python -m bench.peers.workers.<module>`), never by the
project's venv: they import packages the project does not depend on."""
