"""The API's objects as dataclasses, read leniently from its JSON.

Each class mirrors a schema of the server's openapi.json (_coverage.SCHEMAS
says which). Reading is lenient so that an older client keeps working with
a newer server: a field the class does not know is ignored (every object
keeps the JSON it was read from, newer fields included, in ``raw_json``), a
field the server left out takes its default, and a nested object of an
unexpected type reads as its default. Fields have the API's names; times
stay the server's RFC 3339 strings.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional


class Status:
    """Status: a run's (and a step's) status, as the API spells it."""

    RUNNING = "running"
    AWAITING_TOOL_RESULTS = "awaiting_tool_results"
    INTERRUPTED = "interrupted"
    STALLED = "stalled"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    # ENDED are the statuses whose event stream ends. A completed run
    # still takes the user's next message (send_message); a failed or
    # cancelled one takes nothing more.
    ENDED = frozenset({COMPLETED, FAILED, CANCELLED})


def _list_of(cls: Any) -> Callable[[Any], list]:
    def read(v: Any) -> list:
        if not isinstance(v, list):
            return []
        return [cls.from_json(x) if hasattr(cls, "from_json") else x for x in v]

    return read


def _obj(cls: Any) -> Callable[[Any], Any]:
    return lambda v: cls.from_json(v) if isinstance(v, dict) else None


def _conv(read: Callable[[Any], Any]) -> Dict[str, Any]:
    return {"read": read}


class _Model:
    """_Model reads a dataclass from a JSON object: the fields it knows, by
    name, through each field's "read" function when it has one."""

    raw_json: Dict[str, Any]

    @classmethod
    def from_json(cls, data: Any):
        if not isinstance(data, dict):
            data = {}
        kw = {}
        for f in dataclasses.fields(cls):
            if f.name == "raw_json" or f.name not in data:
                continue
            v = data[f.name]
            read = f.metadata.get("read")
            if read is not None:
                v = read(v)
            elif v is None and (f.default is not dataclasses.MISSING and f.default is not None):
                continue  # null for a field with a non-null default: keep the default
            kw[f.name] = v
        obj = cls(**kw)
        obj.raw_json = data
        return obj


def _raw() -> Any:
    return field(default_factory=dict, repr=False, compare=False)


@dataclass
class Failure(_Model):
    """Failure: why a run failed (its code and reason)."""

    code: str = ""
    reason: str = ""
    raw_json: Dict[str, Any] = _raw()


@dataclass
class Parent(_Model):
    """Parent: the run and step a fork was made from."""

    id: str = ""
    step: int = 0
    raw_json: Dict[str, Any] = _raw()


@dataclass
class Child(_Model):
    """Child: a child run of a sub-agent call (its id is the parent's id, a
    dot and call_id)."""

    step: int = 0
    call_id: str = ""
    tool: str = ""
    id: str = ""
    agent: str = ""
    status: str = ""
    raw_json: Dict[str, Any] = _raw()


@dataclass
class Holder(_Model):
    """Holder: who drives a run (its lease). owner is opaque unless the
    server exposes holders (then host and pid are set)."""

    owner: str = ""
    expires: str = ""
    live: bool = False
    alive: Optional[bool] = None
    host: str = ""
    pid: int = 0
    raw_json: Dict[str, Any] = _raw()


@dataclass
class ToolCall(_Model):
    """ToolCall: a call the model made (schema Call): its id (what a result
    answers), the tool's name, its arguments, and the text the model wrote
    it as (empty for a native call)."""

    id: str = ""
    name: str = ""
    arguments: Dict[str, Any] = field(default_factory=dict)
    raw: str = ""
    raw_json: Dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, data: Any):
        obj = super().from_json(data)
        if not isinstance(obj.arguments, dict):
            obj.arguments = {}
        return obj


# PendingCall is a call a paused run waits for: a ToolCall.
PendingCall = ToolCall


@dataclass
class InDoubtCall(ToolCall):
    """InDoubtCall: a call that started at step `step` and whose outcome
    was not recorded (answer it with Answer.not_run or its result)."""

    step: int = 0
    started: str = ""
    raw_json: Dict[str, Any] = _raw()


@dataclass
class Counters(_Model):
    """Counters: steps (the last step's seq), requests (what max_steps
    bounds), model calls, corrections and escalations."""

    steps: int = 0
    requests: int = 0
    model_calls: int = 0
    corrections: int = 0
    escalations: int = 0
    raw_json: Dict[str, Any] = _raw()


@dataclass
class Usage(_Model):
    """Usage: the tokens the run's model calls used, and their cost (an exact
    decimal, in the currency of the agent's prices; "" without prices)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: str = ""
    raw_json: Dict[str, Any] = _raw()


@dataclass
class Run(_Model):
    """Run: a run as GET /v1/runs/{id} shows it. pending_tool_calls are the
    calls a paused run (awaiting_tool_results) waits for; output is the
    answer as JSON for an agent with an output schema."""

    id: str = ""
    agent: str = ""
    status: str = ""
    created: str = ""
    updated: str = ""
    input: str = ""
    answer: str = ""
    output: Any = None
    failure: Optional[Failure] = field(default=None, metadata=_conv(_obj(Failure)))
    reason: str = ""
    retry_at: str = ""
    stall_attempts: int = 0
    parent: Optional[Parent] = field(default=None, metadata=_conv(_obj(Parent)))
    holder: Optional[Holder] = field(default=None, metadata=_conv(_obj(Holder)))
    steps: int = 0
    pending_tool_calls: List[ToolCall] = field(default_factory=list, metadata=_conv(_list_of(ToolCall)))
    in_doubt_calls: List[InDoubtCall] = field(default_factory=list, metadata=_conv(_list_of(InDoubtCall)))
    counters: Optional[Counters] = field(default=None, metadata=_conv(_obj(Counters)))
    usage: Optional[Usage] = field(default=None, metadata=_conv(_obj(Usage)))
    tools_used: List[str] = field(default_factory=list, metadata=_conv(_list_of(str)))
    sources: List[str] = field(default_factory=list, metadata=_conv(_list_of(str)))
    cancel_requested: str = ""
    turns: int = 0
    stored_status: str = ""
    children: List[Child] = field(default_factory=list, metadata=_conv(_list_of(Child)))
    raw_json: Dict[str, Any] = _raw()

    @property
    def ended(self) -> bool:
        """ended: completed, failed or cancelled (its event stream ends)."""
        return self.status in Status.ENDED

    @property
    def paused(self) -> bool:
        """paused: the run waits for the results of external calls."""
        return self.status == Status.AWAITING_TOOL_RESULTS


@dataclass
class RunList(_Model):
    """RunList: a page of runs, newest first; next_cursor ("" on the last
    page) is the next page's cursor."""

    runs: List[Run] = field(default_factory=list, metadata=_conv(_list_of(Run)))
    next_cursor: str = ""
    raw_json: Dict[str, Any] = _raw()


@dataclass
class StepMessage(_Model):
    """StepMessage: a message a step added to the conversation, in the
    run's own form (schema Message): role, content, the calls of a model's
    reply, and for a tool's result the call it answers."""

    role: str = ""
    content: str = ""
    calls: List[ToolCall] = field(default_factory=list, metadata=_conv(_list_of(ToolCall)))
    call_id: str = ""
    name: str = ""
    is_error: bool = False
    raw_json: Dict[str, Any] = _raw()


@dataclass
class ChatFunction(_Model):
    """ChatFunction: the function of a ChatToolCall; arguments are JSON
    text, as the model wrote them."""

    name: str = ""
    arguments: str = ""
    raw_json: Dict[str, Any] = _raw()


@dataclass
class ChatToolCall(_Model):
    """ChatToolCall: a tool call of an assistant message, OpenAI style."""

    id: str = ""
    type: str = "function"
    function: ChatFunction = field(default_factory=ChatFunction, metadata=_conv(lambda v: ChatFunction.from_json(v)))
    raw_json: Dict[str, Any] = _raw()

    def to_json(self) -> Dict[str, Any]:
        return {"id": self.id, "type": self.type, "function": {"name": self.function.name, "arguments": self.function.arguments}}


@dataclass
class ChatMessage(_Model):
    """ChatMessage: a message in the OpenAI chat format, what a run can
    start from (create_run(messages=...)): role system, user, assistant or
    tool; content None for an assistant message that only calls tools."""

    role: str = ""
    content: Any = None
    tool_calls: List[ChatToolCall] = field(default_factory=list, metadata=_conv(_list_of(ChatToolCall)))
    tool_call_id: str = ""
    name: str = ""
    raw_json: Dict[str, Any] = _raw()

    def to_json(self) -> Dict[str, Any]:
        """to_json is the message as the API takes it."""
        out: Dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_json() for c in self.tool_calls]
        if self.tool_call_id:
            out["tool_call_id"] = self.tool_call_id
        if self.name:
            out["name"] = self.name
        return out


@dataclass
class Message(ChatMessage):
    """Message: a message of a run's conversation (schema
    ConversationMessage, GET /v1/runs/{id}/messages): a ChatMessage with
    its index in the conversation, from 0."""

    index: int = 0
    raw_json: Dict[str, Any] = _raw()


@dataclass
class MessageList(_Model):
    """MessageList: a page of a run's conversation; next_from (None on the
    last page) is the next page's start."""

    messages: List[Message] = field(default_factory=list, metadata=_conv(_list_of(Message)))
    next_from: Optional[int] = None
    raw_json: Dict[str, Any] = _raw()


@dataclass
class MessageEvent(_Model):
    """MessageEvent: the data of a "message" event, the user's message
    that step seq folded into the run (its step event follows)."""

    seq: int = 0
    content: str = ""
    raw_json: Dict[str, Any] = _raw()


@dataclass
class Action(_Model):
    """Action: what a step decided: its kind (model, tools, external,
    complete, fail, ...), the core's one-line description, and the
    details of its kind."""

    kind: str = ""
    describe: str = ""
    role: str = ""
    calls: List[ToolCall] = field(default_factory=list, metadata=_conv(_list_of(ToolCall)))
    answer: str = ""
    code: str = ""
    reason: str = ""
    raw_json: Dict[str, Any] = _raw()


@dataclass
class StepResult(_Model):
    """StepResult: the result a step folded in (the answer to the request
    of the step before it): its kind, description and data."""

    kind: str = ""
    describe: str = ""
    data: Any = None
    raw_json: Dict[str, Any] = _raw()


@dataclass
class Step(_Model):
    """Step: one step of a run, by seq from 0 (the start): the result it
    folded in, the action it decided, the messages it added, the run's
    counters and usage after it, and the user turn it is in."""

    seq: int = 0
    created: str = ""
    status: str = ""
    action: Optional[Action] = field(default=None, metadata=_conv(_obj(Action)))
    result: Optional[StepResult] = field(default=None, metadata=_conv(_obj(StepResult)))
    messages: List[StepMessage] = field(default_factory=list, metadata=_conv(_list_of(StepMessage)))
    counters: Counters = field(default_factory=Counters, metadata=_conv(lambda v: Counters.from_json(v)))
    usage: Usage = field(default_factory=Usage, metadata=_conv(lambda v: Usage.from_json(v)))
    turn: int = 0
    raw_json: Dict[str, Any] = _raw()


@dataclass
class StepRequest(_Model):
    """StepRequest: the request a step's model call made, as its provider
    sent it (credentials redacted); method and url are empty for a
    provider that makes no HTTP request."""

    step: int = 0
    role: str = ""
    call: int = 0
    provider: str = ""
    method: str = ""
    url: str = ""
    headers: Dict[str, str] = field(default_factory=dict)
    body: Any = None
    raw_json: Dict[str, Any] = _raw()


@dataclass
class Divergence(_Model):
    """Divergence: the first step a replay decided differently."""

    step: int = 0
    recorded: str = ""
    replayed: str = ""
    detail: str = ""
    raw_json: Dict[str, Any] = _raw()


@dataclass
class Replay(_Model):
    """Replay: the report of a replay; divergence is None when identical."""

    run_id: str = ""
    steps: int = 0
    identical: bool = False
    divergence: Optional[Divergence] = field(default=None, metadata=_conv(_obj(Divergence)))
    raw_json: Dict[str, Any] = _raw()


@dataclass
class LiveEvent(_Model):
    """LiveEvent: the data of a live event, never stored: "calling" (a
    model call of step seq started), "delta" (piece n of its reply; part
    text, reasoning or call:NAME), "retry", "progress" (a running tool's
    output)."""

    seq: int = 0
    n: int = 0
    part: str = ""
    text: str = ""
    started: str = ""
    raw_json: Dict[str, Any] = _raw()


_NO_ANSWER = object()


@dataclass
class Answer:
    """Answer: the answer to one call a run waits for (schema Answer):
    exactly one of a result (a string, or any JSON value, kept as its
    text), an error (the text the model reads), or not_run (an in-doubt
    call that did not run). Answer.ok, Answer.fail and Answer.skipped make
    each kind."""

    tool_call_id: str
    result: Any = _NO_ANSWER
    error: Optional[str] = None
    not_run: bool = False

    @classmethod
    def ok(cls, tool_call_id: str, result: Any) -> "Answer":
        return cls(tool_call_id, result=result)

    @classmethod
    def fail(cls, tool_call_id: str, error: str) -> "Answer":
        return cls(tool_call_id, error=error)

    @classmethod
    def skipped(cls, tool_call_id: str) -> "Answer":
        """skipped: an in-doubt call that did not run."""
        return cls(tool_call_id, not_run=True)

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"tool_call_id": self.tool_call_id}
        if self.not_run:
            out["not_run"] = True
        elif self.error is not None:
            out["error"] = self.error
        else:
            out["result"] = None if self.result is _NO_ANSWER else self.result
        return out


@dataclass
class Event:
    """Event: one event of a run's stream. event is its name (step, run,
    message, end, calling, delta, retry, progress, or one this client does
    not know); id its SSE id ("" when none; a step's is its seq); data the
    JSON it carried; value the data as its class (Step, Run, MessageEvent,
    LiveEvent; the dict itself for other events)."""

    event: str
    id: str = ""
    data: Any = None
    value: Any = field(default=None, repr=False)

    @classmethod
    def parse(cls, event: str, id: str, data: Any) -> "Event":
        reader = _EVENT_VALUES.get(event)
        value = reader.from_json(data) if reader is not None else data
        return cls(event=event, id=id, data=data, value=value)

    @property
    def seq(self) -> Optional[int]:
        """seq: the step the event belongs to (None for run and end)."""
        if isinstance(self.data, dict) and isinstance(self.data.get("seq"), int):
            return self.data["seq"]
        return None


_EVENT_VALUES: Dict[str, Any] = {
    "step": Step,
    "run": Run,
    "message": MessageEvent,
    "calling": LiveEvent,
    "delta": LiveEvent,
    "retry": LiveEvent,
    "progress": LiveEvent,
}


@dataclass
class Poll(_Model):
    """Poll: the answer of a long poll (poll_steps): the steps after the
    one asked for, and the run."""

    steps: List[Step] = field(default_factory=list, metadata=_conv(_list_of(Step)))
    run: Run = field(default_factory=Run, metadata=_conv(lambda v: Run.from_json(v)))
    raw_json: Dict[str, Any] = _raw()
