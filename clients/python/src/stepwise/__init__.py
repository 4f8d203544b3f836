"""stepwise: a client of the HTTP API of `stepwise serve`.

Standard library only, Python 3.9 or later::

    import stepwise

    client = stepwise.Client("http://127.0.0.1:8080")
    run = client.create_run("external", input="Buy a desk lamp")
    run = client.drive(run.id, tools={"approve_purchase": lambda args: "approved"})
    print(run.status, run.answer)

Client calls the API (a method per route; _coverage.ROUTES lists them),
AsyncClient does the same for asyncio. Objects are dataclasses read
leniently from the JSON (models); failures are StepwiseError and its
subclasses, one per API error code (errors).
"""

import types as _types

from .aio import AsyncClient, AsyncEventStream
from .client import DEFAULT_URL, Client, new_idempotency_key
from .errors import (
    CODES,
    AlreadyAnsweredError,
    BadRequestError,
    BusyError,
    ConflictError,
    ConnectionFailed,
    EndedError,
    ForbiddenError,
    IdempotencyMismatchError,
    InProgressError,
    InternalError,
    InvalidAgentError,
    InvalidHistoryError,
    InvalidResultsError,
    MethodNotAllowedError,
    NotFoundError,
    NotPausedError,
    RequestTimeoutError,
    StepwiseError,
    TooLargeError,
    TooManyStreamsError,
    UnauthorizedError,
    UnavailableError,
    UnknownAgentError,
    UnsupportedMediaTypeError,
)
from .events import EventStream, SSEParser
from .models import (
    Action,
    Answer,
    ChatFunction,
    ChatMessage,
    ChatToolCall,
    Counters,
    Divergence,
    Event,
    Failure,
    Holder,
    InDoubtCall,
    LiveEvent,
    Message,
    MessageEvent,
    MessageList,
    Parent,
    Child,
    PendingCall,
    Poll,
    Replay,
    Run,
    RunList,
    Status,
    Step,
    StepMessage,
    StepRequest,
    StepResult,
    ToolCall,
    Usage,
)

__version__ = "0.1.0"

__all__ = sorted(n for n, v in globals().items() if not n.startswith("_") and not isinstance(v, _types.ModuleType))
