# Worker image: `python worker.py` polls the Temporal task queue and runs the agent workflows
# and their activities (model calls, tools).
#
#   docker build -t durable-agents-worker .
#   docker run --rm --add-host=host.docker.internal:host-gateway -e TEMPORAL_ADDRESS=host.docker.internal:7233 durable-agents-worker
#
# Normally built and started by docker-compose.yml (`docker compose up --build`).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Dependencies first, in their own layer, so that editing the source doesn't reinstall them.
# (The list is read from pyproject.toml; tomllib is in the 3.11 standard library.) The core,
# plus the extras a worker of docker-compose.yml uses: local (the `temporal` CLI inside the
# container), crypto (the codec-server service runs this image), postgres (MEMORY_DATABASE_URL),
# s3 (AGENT_PAYLOAD_STORE=s3://...), and every run feature: code (code mode), mcp (MCP_CONFIG),
# otel (OTEL_ENABLED). Not the servers of `agent serve`/`mcp`/`a2a`, nor evals and plots.
ARG WORKER_EXTRAS=local,crypto,postgres,s3,code,mcp,otel
COPY pyproject.toml ./
RUN python -c "import sys, tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; print(*p['dependencies'], *(r for e in sys.argv[1].split(',') for r in p['optional-dependencies'][e]), sep=chr(10))" "$WORKER_EXTRAS" \
        > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

# The project itself: the durable_agents package, and this repository's application that
# `python worker.py` runs from /app (worker.py, workflows/, activities/, and examples/ for the
# demo weather service); see .dockerignore for what is left out.
COPY . .
RUN pip install --no-deps . \
    && rm -rf build ./*.egg-info

# Run as an unprivileged user. The agent's file tools work inside /workspace, and long-term
# memory (SQLite, unless MEMORY_DATABASE_URL names a PostgreSQL database) lives in /data: volumes
# owned by that user (a fresh named volume copies this ownership from the image).
RUN useradd --create-home --uid 10001 --user-group agent \
    && mkdir -p /workspace /data \
    && chown agent:agent /workspace /data
ENV AGENT_WORKSPACE=/workspace
ENV MEMORY_DATABASE_PATH=/data/memory.db
VOLUME ["/workspace", "/data"]
USER agent

CMD ["python", "worker.py"]
