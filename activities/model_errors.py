"""Map model-provider failures onto Temporal retry semantics.

Temporal owns retries (the client has `max_retries=0`): connection errors, timeouts, 408, 409,
429 and 5xx are retryable, with `retry-after-ms` / `Retry-After` as the next delay; other 4xx
fail at once and carry the provider's message. 401, 403 and 404 are about the model or the
endpoint itself (`ModelUnusable`: a fallback model may work); 400, 422 and the rest are about
the request (`ModelRequestRejected`: another model would refuse it too). The API key is
scrubbed from every message.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Mapping
from datetime import timedelta

import openai
from temporalio.exceptions import ApplicationError

from contracts.errors import MODEL_REQUEST_REJECTED, MODEL_UNAVAILABLE, MODEL_UNUSABLE

RETRYABLE_STATUS = frozenset({408, 409, 429})
MODEL_ITSELF_STATUS = frozenset({401, 403, 404})
MAX_RETRY_DELAY_SECONDS = 300.0


def retry_delay(headers: Mapping[str, str], now: float | None = None) -> timedelta | None:
    """The delay a provider asked for: `retry-after-ms`, then `Retry-After` (seconds or date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    seconds: float | None = None
    if "retry-after-ms" in lowered:
        try:
            seconds = float(lowered["retry-after-ms"]) / 1000
        except ValueError:
            seconds = None
    if seconds is None and "retry-after" in lowered:
        value = lowered["retry-after"].strip()
        try:
            seconds = float(value)
        except ValueError:
            try:
                parsed = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError, IndexError):
                parsed = None  # neither seconds nor an HTTP date: ignore the header
            if parsed is not None:
                seconds = parsed.timestamp() - (time.time() if now is None else now)
    if seconds is None or math.isnan(seconds) or seconds < 0:
        return None
    return timedelta(seconds=min(seconds, MAX_RETRY_DELAY_SECONDS))


def provider_message(error: openai.APIStatusError) -> str:
    """The provider's own error message, from the OpenAI-shaped body when there is one."""
    body = error.body
    if isinstance(body, str) and body.strip():
        return body  # the client unwraps `{"error": "text"}` to the text
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return error.message


def scrub(text: str, secret: str | None) -> str:
    """Remove the API key from `text` (providers sometimes echo it in error messages)."""
    if secret:
        text = text.replace(secret, "***")
    return text


def to_application_error(error: Exception, api_key: str | None) -> ApplicationError:
    """The `ApplicationError` an activity should raise for a failed model request."""
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        message = scrub(f"model provider answered {status}: {provider_message(error)}", api_key)
        should_retry = error.response.headers.get("x-should-retry")
        retryable = status in RETRYABLE_STATUS or status >= 500
        if should_retry in ("true", "false"):
            retryable = should_retry == "true"
        if retryable:
            return ApplicationError(
                message,
                type=MODEL_UNAVAILABLE,
                next_retry_delay=retry_delay(error.response.headers),
            )
        kind = MODEL_UNUSABLE if status in MODEL_ITSELF_STATUS else MODEL_REQUEST_REJECTED
        return ApplicationError(message, type=kind, non_retryable=True)
    if isinstance(error, openai.APITimeoutError):
        return ApplicationError("model request timed out", type=MODEL_UNAVAILABLE)
    if isinstance(error, openai.APIConnectionError):
        cause = scrub(str(error.__cause__ or error), api_key)
        return ApplicationError(f"cannot reach the model provider: {cause}", type=MODEL_UNAVAILABLE)
    # A malformed or truncated response body: usually transient, and bounded by max attempts.
    return ApplicationError(
        scrub(f"unusable answer from the model provider: {type(error).__name__}: {error}", api_key),
        type=MODEL_UNAVAILABLE,
    )
