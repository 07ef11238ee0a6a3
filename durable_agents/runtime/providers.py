"""Model providers the worker knows, so runs can name `provider/model` (see
`activities/model_router.py`).

Given as JSON in `MODEL_PROVIDERS`, or in a file named by `MODEL_PROVIDERS_FILE`:

    {"ollama":   {"base_url": "http://localhost:11434/v1", "api_key": "ollama"},
     "deepseek": {"base_url": "https://api.deepseek.com/v1", "api_key_env": "DEEPSEEK_API_KEY"}}

`api_key_env` names a variable holding the key, so the JSON itself can be committed. Keys are
`SecretStr`: they never print, and never reach workflow input, history or results.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from durable_agents.loop.validation_errors import describe_validation_error

PROVIDER_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class ProviderSettings(BaseModel):
    """One OpenAI-compatible endpoint and its key."""

    model_config = ConfigDict(extra="forbid")

    base_url: str = Field(min_length=1)
    api_key: SecretStr | None = None
    api_key_env: str | None = None
    tool_calling: Literal["native", "prompted"] = "native"
    """`prompted` for an endpoint without native tool calling (activities/prompted_tools.py)."""


class ProvidersError(ValueError):
    """The providers configuration cannot be used; the message names the provider and field."""


def parse_providers(
    text: str | None, file: Path | None, environ: Mapping[str, str]
) -> dict[str, ProviderSettings]:
    """The providers of `MODEL_PROVIDERS` (JSON) or `MODEL_PROVIDERS_FILE`; both is an error."""
    if text and file:
        raise ProvidersError("set MODEL_PROVIDERS or MODEL_PROVIDERS_FILE, not both")
    where = "MODEL_PROVIDERS"
    if file is not None:
        where = f"MODEL_PROVIDERS_FILE ({file})"
        try:
            text = file.read_text()
        except OSError as error:
            raise ProvidersError(f"{where}: cannot read: {error.strerror}") from None
    if not text:
        return {}
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise ProvidersError(
            f"{where}: not valid JSON ({error.msg} at position {error.pos})"
        ) from None
    if not isinstance(raw, dict):
        raise ProvidersError(f"{where}: expected an object of providers by name")
    providers: dict[str, ProviderSettings] = {}
    for name, entry in raw.items():
        if not PROVIDER_NAME.match(name):
            raise ProvidersError(f"{where}: provider name {name!r} may hold letters, digits, _.-")
        try:
            provider = ProviderSettings.model_validate(entry)
        except ValidationError as error:
            raise ProvidersError(f"{where}: {name}: {describe_validation_error(error)}") from None
        if provider.api_key_env:
            key = environ.get(provider.api_key_env, "").strip()
            if not key:
                raise ProvidersError(
                    f"{where}: {name}: api_key_env names {provider.api_key_env}, which is not set"
                )
            provider = provider.model_copy(update={"api_key": SecretStr(key)})
        providers[name] = provider
    return providers
