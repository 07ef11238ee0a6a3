"""`MODEL_PROVIDERS` / `MODEL_PROVIDERS_FILE`: parsed at start, keys kept secret, every mistake
named; the worker's model backend routes `provider/model` names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from durable_agents.activities.model_router import ModelRouter
from durable_agents.runtime.models import chat_model_for
from durable_agents.runtime.settings import EnvironmentSettings, SettingsError

PROVIDERS = {
    "ollama": {"base_url": "http://localhost:11434/v1", "api_key": "ollama-key-SECRET"},
    "deepseek": {"base_url": "https://api.deepseek.com/v1", "api_key_env": "DEEPSEEK_KEY"},
}


def test_providers_from_json_with_a_key_from_another_variable() -> None:
    settings = EnvironmentSettings.from_env(
        {"MODEL_PROVIDERS": json.dumps(PROVIDERS), "DEEPSEEK_KEY": "sk-deep-SECRET"}
    )
    providers = settings.providers
    assert list(providers) == ["ollama", "deepseek"]
    assert providers["deepseek"].api_key is not None
    assert providers["deepseek"].api_key.get_secret_value() == "sk-deep-SECRET"
    for shown in (repr(settings), str(settings), repr(providers)):
        assert "SECRET" not in shown


def test_providers_from_a_file(tmp_path: Path) -> None:
    file = tmp_path / "providers.json"
    file.write_text(json.dumps({"local": {"base_url": "http://127.0.0.1:8000/v1"}}))
    settings = EnvironmentSettings.from_env({"MODEL_PROVIDERS_FILE": str(file)})
    assert settings.providers["local"].base_url == "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MODEL_PROVIDERS": "{nope"}, "MODEL_PROVIDERS: not valid JSON"),
        ({"MODEL_PROVIDERS": "[1]"}, "MODEL_PROVIDERS: expected an object of providers"),
        ({"MODEL_PROVIDERS": '{"x": {}}'}, "MODEL_PROVIDERS: x: base_url: Field required"),
        (
            {"MODEL_PROVIDERS": '{"x": {"base_url": "u", "key": "k"}}'},
            "MODEL_PROVIDERS: x: key: Extra inputs are not permitted",
        ),
        (
            {"MODEL_PROVIDERS": '{"x": {"base_url": "u", "api_key_env": "NOT_SET"}}'},
            "MODEL_PROVIDERS: x: api_key_env names NOT_SET, which is not set",
        ),
        ({"MODEL_PROVIDERS": '{"a/b": {"base_url": "u"}}'}, "provider name 'a/b'"),
        ({"MODEL_PROVIDERS_FILE": "/nonexistent/p.json"}, "MODEL_PROVIDERS_FILE (/nonexistent"),
    ],
)
def test_bad_provider_settings_are_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=None) as error:
        EnvironmentSettings.from_env(env)
    assert message in str(error.value)


def test_the_worker_routes_provider_names() -> None:
    settings = EnvironmentSettings.from_env(
        {"MODEL_PROVIDERS": json.dumps({"local": PROVIDERS["ollama"]})}
    )
    model = chat_model_for(settings)
    assert isinstance(model, ModelRouter) and model.providers == ["local"]
    assert model.default_model == "demo-offline"  # no OPENAI_API_KEY: the demo is the default
    plain = chat_model_for(EnvironmentSettings.from_env({}))
    assert not isinstance(plain, ModelRouter)
