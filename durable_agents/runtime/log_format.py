"""Log formats for the worker: readable text, or one JSON object per line (`LOG_FORMAT=json`)
with the structured fields the workflow and activities attach (`agent`: session, turn, phase,
tool, outcome, latency_ms, tokens, ...; `temporal_workflow` / `temporal_activity`: ids)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

STRUCTURED_KEYS = ("agent", "temporal_workflow", "temporal_activity")
CHATTY_LOGGERS = ("httpx", "httpcore")
"""HTTP clients that log every request at INFO (the model client's calls, the Web UI probe):
kept at WARNING unless the worker logs at DEBUG."""


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message and the structured fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in STRUCTURED_KEYS:
            value = getattr(record, key, None)
            if value is not None:
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure_logging(level: str = "INFO", fmt: str = "text") -> None:
    """Root logging for the worker process."""
    handler = logging.StreamHandler()
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        for chatty in CHATTY_LOGGERS:  # one INFO line per HTTP request: DEBUG keeps them
            logging.getLogger(chatty).setLevel(logging.WARNING)
