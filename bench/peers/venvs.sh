#!/usr/bin/env bash
# Create each peer's own virtual environment under bench/peers/.venvs/ (gitignored), if missing:
#
#   bash bench/peers/venvs.sh [PYTHON]
#
# Each peer gets the same temporalio as the project (1.35.0) and its own packages, pinned to the
# versions issue 24 names; none of them is a dependency of the project (pyproject.toml).
# A venv is complete once its `.installed` stamp exists; a failed install is retried next time.
set -euo pipefail
PYTHON="${1:-python3}"
HERE="$(cd "$(dirname "$0")" && pwd)"
VENVS="$HERE/.venvs"
mkdir -p "$VENVS"

make_venv() {
  local name="$1"; shift
  local dir="$VENVS/$name"
  if [ -f "$dir/.installed" ]; then return 0; fi
  echo "bench/peers: creating the $name venv ($*)"
  rm -rf "$dir"
  "$PYTHON" -m venv "$dir"
  "$dir/bin/python" -m pip install --quiet --upgrade pip
  "$dir/bin/python" -m pip install --quiet "temporalio==1.35.0" "$@"
  "$dir/bin/python" -m pip freeze > "$dir/.installed"
}

make_venv openai_agents "temporalio-openai-agents==1.1.0" "openai-agents>=0.22,<0.23"
make_venv pydantic_ai "pydantic-ai-slim[temporal,openai]==2.68.0"
make_venv harness "temporal-agent-harness[openai-agents]==0.8.0"
