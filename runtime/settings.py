"""Worker configuration, read once from the environment into a small typed model."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr

DEFAULT_TASK_QUEUE = "agents"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"


class WorkerSettings(BaseModel):
    """Everything the worker process needs; the API key is a `SecretStr` so it never prints.

    | variable | meaning | default |
    | --- | --- | --- |
    | TEMPORAL_ADDRESS | server to use; unset: localhost:7233, or an embedded dev server | unset |
    | TEMPORAL_NAMESPACE | namespace | default |
    | TASK_QUEUE | task queue of workflows and activities | agents |
    | OPENAI_API_KEY | key of an OpenAI-compatible server; unset: the offline demo model | unset |
    | OPENAI_BASE_URL | endpoint, e.g. http://localhost:11434/v1 for Ollama | OpenAI |
    | MODEL | default model name | gpt-4o-mini (demo-offline without a key) |
    | AGENT_WORKSPACE | folder the file tools are confined to | ./workspace |
    | TEMPORAL_DEV_PORT / TEMPORAL_DEV_UI_PORT | ports of the embedded dev server | 7233 / 8233 |
    | TEMPORAL_DEV_DB | the embedded dev server's SQLite file | .temporal/dev.db |
    | WORKER_DRAIN_SECONDS | on Ctrl-C/SIGTERM, time in-flight activities get to finish | 30 |
    | AGENT_PAYLOAD_KEY | base64 AES-256 key: encrypt every payload (docs/encryption.md) | unset |
    | AGENT_PAYLOAD_KEY_ID | name of that key, stored with each encrypted payload | default |
    | AGENT_PAYLOAD_PREVIOUS_KEYS | `id=base64key,...`: older keys, for decoding only | unset |
    | AGENT_CODEC_ENDPOINT | codec server the embedded dev server's Web UI uses to decode | unset |
    | AGENT_TOOL_MODULES | comma-separated modules to import that register extra tools | unset |
    | LOG_LEVEL / LOG_FORMAT | logging level; `text` or `json` (one object per line) | INFO / text |
    """

    model_config = ConfigDict(frozen=True)

    temporal_address: str | None = None
    temporal_namespace: str = "default"
    task_queue: str = Field(default=DEFAULT_TASK_QUEUE, min_length=1)
    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None
    model: str | None = None
    workspace: Path = Path("workspace")
    dev_server_port: int = Field(default=7233, gt=0, lt=65536)
    dev_server_ui_port: int = Field(default=8233, gt=0, lt=65536)
    dev_server_db: Path = Path(".temporal/dev.db")
    drain_seconds: float = Field(default=30.0, ge=0)
    payload_key: SecretStr | None = None
    payload_key_id: str = Field(default="default", min_length=1)
    payload_previous_keys: SecretStr | None = None
    codec_endpoint: str | None = None
    tool_modules: list[str] = []

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> WorkerSettings:
        env = os.environ if env is None else env

        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        key = get("OPENAI_API_KEY")
        payload_key = get("AGENT_PAYLOAD_KEY")
        previous = get("AGENT_PAYLOAD_PREVIOUS_KEYS")
        return cls(
            temporal_address=get("TEMPORAL_ADDRESS"),
            temporal_namespace=get("TEMPORAL_NAMESPACE") or "default",
            task_queue=get("TASK_QUEUE") or DEFAULT_TASK_QUEUE,
            openai_api_key=SecretStr(key) if key else None,
            openai_base_url=get("OPENAI_BASE_URL"),
            model=get("MODEL"),
            workspace=Path(get("AGENT_WORKSPACE") or "workspace"),
            dev_server_port=int(get("TEMPORAL_DEV_PORT") or 7233),
            dev_server_ui_port=int(get("TEMPORAL_DEV_UI_PORT") or 8233),
            dev_server_db=Path(get("TEMPORAL_DEV_DB") or ".temporal/dev.db"),
            drain_seconds=float(get("WORKER_DRAIN_SECONDS") or 30),
            payload_key=SecretStr(payload_key) if payload_key else None,
            payload_key_id=get("AGENT_PAYLOAD_KEY_ID") or "default",
            payload_previous_keys=SecretStr(previous) if previous else None,
            codec_endpoint=get("AGENT_CODEC_ENDPOINT"),
            tool_modules=[
                m.strip() for m in (get("AGENT_TOOL_MODULES") or "").split(",") if m.strip()
            ],
        )

    @property
    def uses_demo_model(self) -> bool:
        return self.openai_api_key is None
