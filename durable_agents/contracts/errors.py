"""Error type names carried by Temporal `ApplicationError`s, so callers can match on them."""

INVALID_INPUT = "InvalidAgentInput"
"""The workflow input failed validation; the message names the field."""

MODEL_REQUEST_REJECTED = "ModelRequestRejected"
"""The model provider refused the request (400, 401, 403, 404, 422, ...); retrying cannot help."""

MODEL_UNAVAILABLE = "ModelUnavailable"
"""The model provider failed transiently (connection, timeout, 408, 409, 429, 5xx); retried."""

MODEL_UNUSABLE = "ModelUnusable"
"""The provider refused this model or endpoint (401, 403, 404): a fallback model may work."""

MODEL_CALL_FAILED = "ModelCallFailed"
"""The workflow gave up on the model after its retries; raised by the workflow."""

TOOL_ERROR = "ToolError"
"""A tool reported an expected failure; it goes back to the model, never retried."""

TOOL_FAILED_RUN = "ToolFailedRun"
"""A tool registered with `on_error="stop"` failed, so the run fails."""

MAX_ITERATIONS_REACHED = "MaxIterationsReached"
"""The run used up `max_iterations` and `on_max_iterations` is `fail`."""

NO_PRICE_FOR_MODEL = "NoPriceForModel"
"""A cost budget is set but its price table has no entry for the model that answered."""

STEER_REFUSED = "SteerRefused"
"""A `steer` update that cannot apply (empty text, a run that has ended, no running turn)."""

HUMAN_WAIT_TIMED_OUT = "HumanWaitTimedOut"
"""An approval or question expired and its timeout action is `fail`."""
