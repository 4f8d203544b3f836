"""The errors the client raises.

Every failure of a call is a StepwiseError. An answer of the server's that
is an error carries the API's stable code (``{"error": {"code",
"message"}}``, the codes of internal/server/errors.go) and is raised as the
subclass for that code, so a caller catches what it can handle::

    try:
        client.send_message(run_id, "next")
    except stepwise.EndedError:
        ...  # the run failed or was cancelled: its conversation is over

A request that got no answer at all (the server could not be reached, the
connection dropped) is a ConnectionFailed, with code "connection_error" and
status None; that code is the client's own, not the API's.
"""

from __future__ import annotations

import json
from typing import Dict, Optional, Type


class StepwiseError(Exception):
    """StepwiseError is a call that failed: the HTTP status (None when no
    answer came), the API's error code and its message. retry_after is the
    server's Retry-After in seconds, when it sent one."""

    def __init__(self, status: Optional[int], code: str, message: str, retry_after: Optional[float] = None):
        super().__init__(f"{status} {code}: {message}" if status else f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after


class ConnectionFailed(StepwiseError):
    """ConnectionFailed: no answer came (refused, reset, timed out), after
    the client's retries."""

    def __init__(self, message: str):
        super().__init__(None, "connection_error", message)


class BadRequestError(StepwiseError):
    """BadRequestError: bad_request, and the request errors below it."""


class InvalidResultsError(BadRequestError):
    """InvalidResultsError: invalid_results, results that do not answer the
    pause (unknown, duplicate or missing ids); nothing changed."""


class InvalidHistoryError(BadRequestError):
    """InvalidHistoryError: invalid_history, a message history a run cannot
    start from."""


class UnsupportedMediaTypeError(BadRequestError):
    """UnsupportedMediaTypeError: unsupported_media_type."""


class MethodNotAllowedError(BadRequestError):
    """MethodNotAllowedError: method_not_allowed."""


class NotFoundError(StepwiseError):
    """NotFoundError: not_found (no such run, step or route)."""


class UnknownAgentError(NotFoundError):
    """UnknownAgentError: unknown_agent, no agent file of that name."""


class InvalidAgentError(StepwiseError):
    """InvalidAgentError: invalid_agent, an agent file that does not load."""


class ConflictError(StepwiseError):
    """ConflictError: a 409, the run's state refuses the request."""


class BusyError(ConflictError):
    """BusyError: busy, another driver holds the run."""


class AlreadyAnsweredError(ConflictError):
    """AlreadyAnsweredError: already_answered, the pause was answered."""


class NotPausedError(ConflictError):
    """NotPausedError: not_paused, the run waits for no results."""


class EndedError(ConflictError):
    """EndedError: ended, the run has ended (failed or cancelled: its
    conversation is over)."""


class InProgressError(ConflictError):
    """InProgressError: in_progress, a request with this Idempotency-Key is
    under way (the client retries it on its own)."""


class IdempotencyMismatchError(StepwiseError):
    """IdempotencyMismatchError: idempotency_mismatch, the key was used
    with another body."""


class TooLargeError(StepwiseError):
    """TooLargeError: too_large, a body, input or message over a limit."""


class UnauthorizedError(StepwiseError):
    """UnauthorizedError: unauthorized, no valid bearer token."""


class ForbiddenError(StepwiseError):
    """ForbiddenError: forbidden_host or forbidden_origin."""


class RequestTimeoutError(StepwiseError):
    """RequestTimeoutError: timeout, the body did not arrive in time."""


class UnavailableError(StepwiseError):
    """UnavailableError: unavailable (the store cannot be reached now) or
    a 502/503/504 of a proxy; retried by the client, raised past its
    retries."""


class TooManyStreamsError(UnavailableError):
    """TooManyStreamsError: too_many_streams, past the server's bound of
    open event streams."""


class InternalError(StepwiseError):
    """InternalError: internal, a fault the server's log explains."""


# CODES maps each error code of the API to the exception raised for it.
CODES: Dict[str, Type[StepwiseError]] = {
    "bad_request": BadRequestError,
    "invalid_results": InvalidResultsError,
    "invalid_history": InvalidHistoryError,
    "not_found": NotFoundError,
    "unknown_agent": UnknownAgentError,
    "invalid_agent": InvalidAgentError,
    "busy": BusyError,
    "already_answered": AlreadyAnsweredError,
    "not_paused": NotPausedError,
    "ended": EndedError,
    "too_large": TooLargeError,
    "unauthorized": UnauthorizedError,
    "method_not_allowed": MethodNotAllowedError,
    "internal": InternalError,
    "unavailable": UnavailableError,
    "forbidden_host": ForbiddenError,
    "forbidden_origin": ForbiddenError,
    "unsupported_media_type": UnsupportedMediaTypeError,
    "too_many_streams": TooManyStreamsError,
    "timeout": RequestTimeoutError,
    "in_progress": InProgressError,
    "idempotency_mismatch": IdempotencyMismatchError,
}

# _BY_STATUS is the exception for an error whose code this client does not
# know (a newer server's) or an answer with no API error in it (a proxy's).
_BY_STATUS: Dict[int, Type[StepwiseError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    408: RequestTimeoutError,
    409: ConflictError,
    413: TooLargeError,
    500: InternalError,
    502: UnavailableError,
    503: UnavailableError,
    504: UnavailableError,
}


def error_from(status: int, body: bytes, retry_after: Optional[float] = None) -> StepwiseError:
    """error_from is the exception for an error answer: its code's class,
    else one chosen by its status (code "http_STATUS" when the body holds
    no API error)."""
    code, message = f"http_{status}", ""
    try:
        err = json.loads(body.decode("utf-8")).get("error")
        if isinstance(err, dict) and isinstance(err.get("code"), str):
            code, message = err["code"], str(err.get("message", ""))
    except (ValueError, AttributeError, UnicodeDecodeError):
        message = body[:200].decode("utf-8", "replace").strip()
    cls = CODES.get(code) or _BY_STATUS.get(status) or StepwiseError
    return cls(status, code, message, retry_after)
