"""Provider failures map onto Temporal retry semantics, with real `openai` exception objects."""

from __future__ import annotations

import email.utils
import json
from datetime import timedelta
from typing import Any

import httpx2
import openai
import pytest
from temporalio.exceptions import ApplicationError

from durable_agents.activities.model_errors import (
    MAX_RETRY_DELAY_SECONDS,
    MIN_SECRET_PREFIX,
    provider_message,
    register_secret,
    registered_secrets,
    retry_delay,
    scrub,
    secret_spans,
    to_application_error,
)
from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.contracts.errors import (
    MODEL_REQUEST_REJECTED,
    MODEL_UNAVAILABLE,
    MODEL_UNUSABLE,
)

API_KEY = "sk-unit-test-KEY-0123456789abcdef"
URL = "http://x/v1/chat/completions"

STATUS_ERRORS: dict[int, type[openai.APIStatusError]] = {
    400: openai.BadRequestError,
    401: openai.AuthenticationError,
    403: openai.PermissionDeniedError,
    404: openai.NotFoundError,
    408: openai.APIStatusError,
    409: openai.ConflictError,
    422: openai.UnprocessableEntityError,
    429: openai.RateLimitError,
    500: openai.InternalServerError,
    503: openai.InternalServerError,
}


def request() -> httpx2.Request:
    return httpx2.Request("POST", URL)


def status_error(
    status: int,
    *,
    headers: dict[str, str] | None = None,
    body: object | None = None,
    message: str | None = None,
) -> openai.APIStatusError:
    """What the openai client raises for an HTTP error answer."""
    if body is None:
        body = {"message": f"provider says {status}", "type": "error", "code": None}
    response = httpx2.Response(status, headers=headers or {}, json=body, request=request())
    error_class = STATUS_ERRORS.get(status, openai.APIStatusError)
    return error_class(message or f"Error code: {status}", response=response, body=body)


# --- retry_delay ------------------------------------------------------------------------------


def test_no_header_means_no_delay() -> None:
    assert retry_delay({}) is None


def test_retry_after_ms() -> None:
    assert retry_delay({"retry-after-ms": "1500"}) == timedelta(seconds=1.5)


def test_retry_after_seconds() -> None:
    assert retry_delay({"Retry-After": "7"}) == timedelta(seconds=7)
    assert retry_delay({"Retry-After": " 2.5 "}) == timedelta(seconds=2.5)


def test_retry_after_ms_wins_over_retry_after() -> None:
    assert retry_delay({"retry-after-ms": "250", "retry-after": "9"}) == timedelta(seconds=0.25)


def test_bad_retry_after_ms_falls_back_to_retry_after() -> None:
    assert retry_delay({"retry-after-ms": "soon", "retry-after": "9"}) == timedelta(seconds=9)
    assert retry_delay({"retry-after-ms": "soon"}) is None


def test_retry_after_http_date() -> None:
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)

    assert retry_delay({"Retry-After": date}, now=now) == timedelta(seconds=30)


def test_retry_after_http_date_in_the_past_is_ignored() -> None:
    now = 1_700_000_000.0
    date = email.utils.formatdate(now - 30, usegmt=True)

    assert retry_delay({"Retry-After": date}, now=now) is None


@pytest.mark.parametrize(
    "headers",
    [{"retry-after": "-5"}, {"retry-after-ms": "-100"}, {"retry-after": ""}],
)
def test_negative_or_empty_delay_is_ignored(headers: dict[str, str]) -> None:
    assert retry_delay(headers) is None


@pytest.mark.parametrize("value", ["soon", "tomorrow-ish", "Wed, 99 Foo"])
def test_garbage_retry_after_is_ignored(value: str) -> None:
    assert retry_delay({"Retry-After": value}) is None


@pytest.mark.parametrize("headers", [{"retry-after": "nan"}, {"retry-after-ms": "NaN"}])
def test_nan_retry_after_is_ignored(headers: dict[str, str]) -> None:
    assert retry_delay(headers) is None


@pytest.mark.parametrize(
    "headers",
    [
        {"retry-after": "86400"},
        {"retry-after-ms": "999999999"},
        {"retry-after": "inf"},
    ],
)
def test_delay_is_capped(headers: dict[str, str]) -> None:
    assert retry_delay(headers) == timedelta(seconds=MAX_RETRY_DELAY_SECONDS)


@pytest.mark.parametrize("name", ["retry-after", "Retry-After", "RETRY-AFTER", "rEtRy-AfTeR"])
def test_header_names_are_case_insensitive(name: str) -> None:
    assert retry_delay({name: "3"}) == timedelta(seconds=3)
    assert retry_delay({name + "-MS": "3000"}) == timedelta(seconds=3)


def test_retry_delay_reads_httpx_headers() -> None:
    headers = httpx2.Headers({"Retry-After-Ms": "400"})

    assert retry_delay(headers) == timedelta(seconds=0.4)


# --- provider_message and scrub ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"message": "inner shape", "type": "x"}, "inner shape"),
        ({"error": {"message": "outer shape"}}, "outer shape"),
        ({"error": "just a string"}, "just a string"),
        ({"detail": "no message here"}, "Error code: 418"),
        (["not", "a", "dict"], "Error code: 418"),
    ],
)
def test_provider_message(body: object, expected: str) -> None:
    assert provider_message(status_error(418, body=body)) == expected


def test_scrub() -> None:
    assert scrub(f"bad key {API_KEY}!", API_KEY) == "bad key ***!"
    assert scrub("nothing secret", API_KEY) == "nothing secret"
    assert scrub("kept as is", None) == "kept as is"
    assert scrub("kept as is", "") == "kept as is"


@pytest.mark.parametrize("length", [MIN_SECRET_PREFIX, 10, 20, len(API_KEY) - 1])
def test_a_prefix_of_the_key_is_scrubbed(length: int) -> None:
    prefix = API_KEY[:length]
    assert scrub(f"Incorrect API key provided: {prefix}...", API_KEY) == (
        "Incorrect API key provided: ***..."
    )
    assert scrub(f"{prefix}", API_KEY) == "***"
    assert scrub(f"({prefix})({prefix}x)", API_KEY) == "(***)(***x)"


def test_a_prefix_shorter_than_the_minimum_is_kept() -> None:
    short = API_KEY[: MIN_SECRET_PREFIX - 1]
    assert scrub(f"keys look like {short}...", API_KEY) == f"keys look like {short}..."


def test_the_run_stops_where_the_text_stops_matching_the_key() -> None:
    # The key followed by more key-like text: only the key goes; a longer run is cut at its end.
    assert scrub(f"{API_KEY}{API_KEY[:3]} tail", API_KEY) == f"***{API_KEY[:3]} tail"
    assert secret_spans(f"ab{API_KEY[:12]}Z", API_KEY) == [(2, 14)]
    assert secret_spans("nothing here", API_KEY) == []


def test_a_short_own_key_is_replaced_whole_only() -> None:
    # Placeholders such as `ollama` are not secrets anyone could use; they are not registered.
    assert scrub("model ollama not found", "ollama") == "model *** not found"
    register_secret("ollama")
    assert "ollama" not in registered_secrets()
    assert scrub("ollama here", None) == "ollama here"


def test_every_configured_key_is_scrubbed_from_every_model_error() -> None:
    # A gateway may echo another provider's key: each model registers its own when built.
    other = "sk-other-PROVIDER-9a8b7c6d5e4f3a2b"
    OpenAIChatModel(api_key=other, default_model="m", base_url="http://127.0.0.1:9/v1")
    assert other in registered_secrets()
    said = f"keys tried: {other[:11]}..., {API_KEY[:9]}"
    error = status_error(401, body={"message": said})
    assert to_application_error(error, API_KEY).message == (
        "model provider answered 401: keys tried: ***..., ***"
    )
    assert scrub(f"both {other}{API_KEY}", None) == "both ***" + API_KEY  # API_KEY: never built


# --- to_application_error ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, MODEL_REQUEST_REJECTED),
        (401, MODEL_UNUSABLE),
        (403, MODEL_UNUSABLE),
        (404, MODEL_UNUSABLE),
        (422, MODEL_REQUEST_REJECTED),
    ],
)
def test_client_errors_are_rejected_without_retry(status: int, kind: str) -> None:
    """401/403/404 are about the model or endpoint (a fallback may work); 400/422 about the
    request (another model would refuse it too)."""
    error = status_error(status, headers={"retry-after": "5"})

    app_error = to_application_error(error, API_KEY)

    assert isinstance(app_error, ApplicationError)
    assert app_error.non_retryable is True
    assert app_error.type == kind
    assert app_error.message == f"model provider answered {status}: provider says {status}"


@pytest.mark.parametrize("status", [408, 409, 429, 500, 503])
def test_transient_errors_are_retryable_with_the_asked_delay(status: int) -> None:
    error = status_error(status, headers={"Retry-After": "12"})

    app_error = to_application_error(error, API_KEY)

    assert app_error.non_retryable is False
    assert app_error.type == MODEL_UNAVAILABLE
    assert app_error.next_retry_delay == timedelta(seconds=12)
    assert str(status) in app_error.message
    assert f"provider says {status}" in app_error.message


def test_retryable_error_without_header_has_no_delay() -> None:
    app_error = to_application_error(status_error(502), API_KEY)

    assert app_error.type == MODEL_UNAVAILABLE
    assert app_error.non_retryable is False
    assert app_error.next_retry_delay is None


def test_retry_after_ms_header_is_used() -> None:
    app_error = to_application_error(status_error(429, headers={"retry-after-ms": "750"}), None)

    assert app_error.next_retry_delay == timedelta(seconds=0.75)


def test_should_retry_false_overrides_a_5xx() -> None:
    app_error = to_application_error(status_error(500, headers={"x-should-retry": "false"}), None)

    assert app_error.non_retryable is True
    assert app_error.type == MODEL_REQUEST_REJECTED


def test_should_retry_true_overrides_a_4xx() -> None:
    error = status_error(400, headers={"X-Should-Retry": "true", "retry-after": "2"})

    app_error = to_application_error(error, None)

    assert app_error.non_retryable is False
    assert app_error.type == MODEL_UNAVAILABLE
    assert app_error.next_retry_delay == timedelta(seconds=2)


def test_other_should_retry_values_are_ignored() -> None:
    app_error = to_application_error(status_error(400, headers={"x-should-retry": "maybe"}), None)

    assert app_error.non_retryable is True


def test_garbage_retry_after_still_gives_an_application_error() -> None:
    app_error = to_application_error(status_error(429, headers={"Retry-After": "soon"}), None)

    assert app_error.type == MODEL_UNAVAILABLE
    assert app_error.next_retry_delay is None


def test_timeout_is_retryable() -> None:
    app_error = to_application_error(openai.APITimeoutError(request=request()), API_KEY)

    assert app_error.type == MODEL_UNAVAILABLE
    assert app_error.non_retryable is False
    assert "timed out" in app_error.message


def test_connection_error_is_retryable_and_names_the_cause() -> None:
    error = openai.APIConnectionError(request=request())
    error.__cause__ = ConnectionRefusedError("connection refused by 10.0.0.1")

    app_error = to_application_error(error, API_KEY)

    assert app_error.type == MODEL_UNAVAILABLE
    assert app_error.non_retryable is False
    assert app_error.message == ("cannot reach the model provider: connection refused by 10.0.0.1")


def test_connection_error_without_cause_uses_its_own_message() -> None:
    app_error = to_application_error(openai.APIConnectionError(request=request()), None)

    assert app_error.message == "cannot reach the model provider: Connection error."


def test_undecodable_answer_is_retryable() -> None:
    try:
        json.loads("{not json")
    except json.JSONDecodeError as error:
        app_error = to_application_error(error, API_KEY)

    assert app_error.type == MODEL_UNAVAILABLE
    assert app_error.non_retryable is False
    assert app_error.message.startswith(
        "unusable answer from the model provider: JSONDecodeError: "
    )


def leaky_errors(echoed: str = API_KEY) -> list[Exception]:
    said = f"Incorrect API key provided: {echoed}."
    connection = openai.APIConnectionError(message=said, request=request())
    caused = openai.APIConnectionError(request=request())
    caused.__cause__ = OSError(said)
    return [
        status_error(401, body={"message": said, "type": "invalid_request_error"}),
        status_error(401, body={"error": {"message": said}}),
        status_error(503, body={"message": said}),
        connection,
        caused,
        ValueError(said),
    ]


@pytest.mark.parametrize("error", leaky_errors(), ids=lambda e: type(e).__name__)
def test_api_key_is_scrubbed(error: Exception) -> None:
    app_error = to_application_error(error, API_KEY)

    assert API_KEY not in app_error.message
    assert API_KEY not in str(app_error)
    assert "Incorrect API key provided: ***." in app_error.message


@pytest.mark.parametrize(
    "error", leaky_errors(f"{API_KEY[:10]}..."), ids=lambda e: type(e).__name__
)
def test_a_prefix_of_the_api_key_is_scrubbed(error: Exception) -> None:
    app_error = to_application_error(error, API_KEY)

    assert API_KEY[:MIN_SECRET_PREFIX] not in str(app_error)
    assert "Incorrect API key provided: ***...." in app_error.message


def test_the_error_has_no_details_that_could_leak() -> None:
    error = status_error(401, body={"message": f"bad key {API_KEY}"})

    app_error = to_application_error(error, API_KEY)

    details: tuple[Any, ...] = tuple(app_error.details)
    assert details == ()
