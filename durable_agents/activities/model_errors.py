"""Map model-provider failures onto Temporal retry semantics.

Temporal owns retries (the client has `max_retries=0`): connection errors, timeouts, 408, 409,
429 and 5xx are retryable, with `retry-after-ms` / `Retry-After` as the next delay; other 4xx
fail at once and carry the provider's message. 401, 403 and 404 are about the model or the
endpoint itself (`ModelUnusable`: a fallback model may work); 400, 422 and the rest are about
the request (`ModelRequestRejected`: another model would refuse it too).

Every message is scrubbed of API keys: the failing model's own key, and every key configured in
this process (each `OpenAIChatModel` registers its key, so the default endpoint's, every
provider's and so every fallback's), since a gateway may echo another key than the one it was
sent. A key's prefix of `MIN_SECRET_PREFIX` or more characters counts as the key: providers echo
keys cut short ("sk-proj-abc12..."), and such a prefix narrows a key down as the whole does.
"""

from __future__ import annotations

import email.utils
import math
import threading
import time
from collections.abc import Mapping
from datetime import timedelta

import openai
from temporalio.exceptions import ApplicationError

from durable_agents.contracts.errors import (
    MODEL_REQUEST_REJECTED,
    MODEL_UNAVAILABLE,
    MODEL_UNUSABLE,
)

RETRYABLE_STATUS = frozenset({408, 409, 429})
MODEL_ITSELF_STATUS = frozenset({401, 403, 404})
MAX_RETRY_DELAY_SECONDS = 300.0
MIN_SECRET_PREFIX = 8
"""The shortest prefix of a key that is scrubbed as the key (shorter keys, placeholders such as
`ollama` or `none`, are not registered; a model's own key is still replaced whole)."""
SCRUBBED = "***"

_secrets: frozenset[str] = frozenset()
_secrets_lock = threading.Lock()


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


def register_secret(secret: str | None) -> None:
    """Scrub `secret` (and its prefixes) from every model error of this process from now on."""
    global _secrets
    if secret and len(secret) >= MIN_SECRET_PREFIX:
        with _secrets_lock:  # readers take the frozenset as it is, without the lock
            _secrets = _secrets | {secret}


def registered_secrets() -> frozenset[str]:
    """The keys `scrub` removes from every text (besides the one it is given)."""
    return _secrets


def secret_spans(text: str, secret: str) -> list[tuple[int, int]]:
    """Where `text` holds `secret` or a prefix of it of `MIN_SECRET_PREFIX` or more characters:
    `(start, end)` of each such run, each as long as the text goes on matching the key."""
    if len(secret) < MIN_SECRET_PREFIX:
        return []
    head = secret[:MIN_SECRET_PREFIX]
    spans = []
    start = text.find(head)
    while start != -1:
        end = start + MIN_SECRET_PREFIX
        limit = min(len(text), start + len(secret))
        while end < limit and text[end] == secret[end - start]:
            end += 1
        spans.append((start, end))
        start = text.find(head, end)
    return spans


def scrub(text: str, secret: str | None) -> str:
    """Remove API keys from `text` (providers sometimes echo them, whole or cut short, in error
    messages): `secret` wherever it appears, and every registered key or its prefix of
    `MIN_SECRET_PREFIX` or more characters. Each run becomes `***`."""
    if secret and len(secret) < MIN_SECRET_PREFIX:
        text = text.replace(secret, SCRUBBED)  # a short key: only whole
    secrets = _secrets | {secret} if secret else _secrets
    spans = sorted(span for key in secrets for span in secret_spans(text, key))
    if not spans:
        return text
    pieces: list[str] = []
    kept = 0  # text before this index is done
    for start, end in spans:
        if start > kept:
            pieces += [text[kept:start], SCRUBBED]
        elif not pieces:
            pieces.append(SCRUBBED)  # a run at the very start
        kept = max(kept, end)  # an overlapping run extends the one before it
    pieces.append(text[kept:])
    return "".join(pieces)


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
