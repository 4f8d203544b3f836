"""Client: the API of `stepwise serve`, one method per route, and helpers
that drive a run (drive, say, wait)."""

from __future__ import annotations

import os
import uuid
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Set, Tuple, Union
from urllib.parse import quote

from ._drive import Tool, answer_call, unanswered
from ._http import KEYED, SAFE, UNSAFE, Transport
from .errors import AlreadyAnsweredError, NotPausedError
from .events import EventStream
from .models import Answer, ChatMessage, Message, MessageList, Poll, Replay, Run, RunList, Step, StepRequest

DEFAULT_URL = "http://127.0.0.1:8080"


def new_idempotency_key() -> str:
    """new_idempotency_key is a fresh Idempotency-Key: one per logical
    call, the same across that call's retries."""
    return "py-" + uuid.uuid4().hex


def _p(run_id: str) -> str:
    return "/v1/runs/" + quote(run_id, safe="")


def _wait_text(wait: Union[None, float, str]) -> Optional[str]:
    if wait is None or isinstance(wait, str):
        return wait
    return f"{float(wait):.3f}s"


def _wait_seconds(wait: Union[None, float, str]) -> float:
    """_wait_seconds is how long a create_run with wait may take, to widen
    the request's timeout by; a duration text is read roughly."""
    if wait is None:
        return 0.0
    if not isinstance(wait, str):
        return float(wait)
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    for u in ("ms", "s", "m", "h"):
        if wait.endswith(u):
            try:
                return float(wait[: -len(u)]) * units[u]
            except ValueError:
                break
    return 300.0  # the most the server waits


def _messages_json(messages: Iterable[Union[ChatMessage, Mapping[str, Any]]]) -> List[Any]:
    return [m.to_json() if isinstance(m, ChatMessage) else dict(m) for m in messages]


def _answers_json(answers: Iterable[Union[Answer, Mapping[str, Any]]]) -> List[Any]:
    return [a.to_json() if isinstance(a, Answer) else dict(a) for a in answers]


class Client:
    """Client calls a stepwise server. url defaults to $STEPWISE_URL (else
    http://127.0.0.1:8080), token to $STEPWISE_TOKEN. timeout bounds each
    request's connect and each read, in seconds; retries is how many times
    a request is sent again (see the _http module for when), waiting backoff
    seconds, doubling up to max_backoff, or the server's Retry-After.
    stream_read_timeout and stream_reconnects are an event stream's (the
    server pings every 15 s; reconnects counts failures in a row).

    A Client holds no connection between calls: one may be shared by
    threads."""

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, *, timeout: float = 30.0,
                 retries: int = 4, backoff: float = 0.5, max_backoff: float = 8.0,
                 stream_read_timeout: float = 60.0, stream_reconnects: int = 8):
        url = url or os.environ.get("STEPWISE_URL") or DEFAULT_URL
        token = token if token is not None else os.environ.get("STEPWISE_TOKEN") or None
        self._t = Transport(url, token, timeout, retries, backoff, max_backoff)
        self.stream_read_timeout = stream_read_timeout
        self.stream_reconnects = stream_reconnects

    @property
    def url(self) -> str:
        return self._t.base_url

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        return self._t.call(method, path, **kw)[0]

    # Runs.

    def create_run(self, agent: str, input: Optional[str] = None,
                   messages: Optional[Iterable[Union[ChatMessage, Mapping[str, Any]]]] = None,
                   idempotency_key: Optional[str] = None, wait: Union[None, float, str] = None) -> Run:
        """create_run starts a run of the agent (a name in the server's
        agents directory) on an input, or on a message history in the
        OpenAI chat format (ChatMessage or dicts). With wait (seconds, or a
        duration like "30s", up to 5 minutes) the answer comes once the run
        leaves running. Sent with an Idempotency-Key (a fresh one unless
        given), so a retry never starts a second run."""
        body: Dict[str, Any] = {"agent": agent}
        if input is not None:
            body["input"] = input
        if messages is not None:
            body["messages"] = _messages_json(messages)
        if wait is not None:
            body["options"] = {"wait": _wait_text(wait)}
        return Run.from_json(self._call("POST", "/v1/runs", body=body, send_body=True, kind=KEYED,
                                        idempotency_key=idempotency_key or new_idempotency_key(),
                                        timeout=self._t.timeout + _wait_seconds(wait)))

    def get_run(self, run_id: str) -> Run:
        """get_run is the run: status, answer or failure, the calls it waits
        for, in-doubt calls, holder, counters, usage."""
        return Run.from_json(self._call("GET", _p(run_id)))

    def list_runs(self, status: Optional[str] = None, agent: Optional[str] = None, parent: Optional[str] = None,
                  limit: Optional[int] = None, cursor: Optional[str] = None) -> RunList:
        """list_runs is a page of runs, newest first (next_cursor pages on)."""
        q = {"status": status, "agent": agent, "parent": parent, "limit": limit, "cursor": cursor or None}
        return RunList.from_json(self._call("GET", "/v1/runs", query=q))

    def iter_runs(self, status: Optional[str] = None, agent: Optional[str] = None, parent: Optional[str] = None,
                  page_size: Optional[int] = None) -> Iterator[Run]:
        """iter_runs yields every run list_runs would page through."""
        cursor: Optional[str] = None
        while True:
            page = self.list_runs(status, agent, parent, page_size, cursor)
            yield from page.runs
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def steps(self, run_id: str, start: int = 0, limit: Optional[int] = None) -> List[Step]:
        """steps is a page of the run's steps, by seq from start (the
        query's from); at most limit (the server's default 500)."""
        q = {"from": start or None, "limit": limit}
        got = self._call("GET", _p(run_id) + "/steps", query=q) or {}
        return [Step.from_json(s) for s in got.get("steps") or []]

    def iter_steps(self, run_id: str, start: int = 0, page_size: int = 500) -> Iterator[Step]:
        """iter_steps yields the run's steps from start to its last."""
        while True:
            page = self.steps(run_id, start, page_size)
            yield from page
            if len(page) < page_size:
                return
            start = page[-1].seq + 1

    def step_request(self, run_id: str, seq: int) -> StepRequest:
        """step_request is the request step seq's model call made, as its
        provider sent it (credentials redacted)."""
        return StepRequest.from_json(self._call("GET", f"{_p(run_id)}/steps/{int(seq)}/request"))

    def post_results(self, run_id: str, answers: Iterable[Union[Answer, Mapping[str, Any]]],
                     idempotency_key: Optional[str] = None) -> Run:
        """post_results answers a paused run: one Answer (or dict) for
        every call it waits for, or the outcomes of its in-doubt calls.
        Sent with an Idempotency-Key, so a retry never answers twice."""
        return Run.from_json(self._call("POST", _p(run_id) + "/results", body=_answers_json(answers), send_body=True,
                                        kind=KEYED, idempotency_key=idempotency_key or new_idempotency_key()))

    def send_message(self, run_id: str, content: str, idempotency_key: Optional[str] = None) -> Run:
        """send_message sends the user's next message to the run (a run is
        a conversation); the answer is the run as it stands, running again
        when it had completed. Sent with an Idempotency-Key, so a retry
        never posts the message twice. say() sends and waits for the
        answer."""
        return Run.from_json(self._call("POST", _p(run_id) + "/messages", body={"content": content}, send_body=True,
                                        kind=KEYED, idempotency_key=idempotency_key or new_idempotency_key()))

    def messages(self, run_id: str, start: int = 0, limit: Optional[int] = None) -> MessageList:
        """messages is a page of the run's conversation in the OpenAI chat
        format, from message start; next_from pages on (None at the end)."""
        q = {"from": start or None, "limit": limit}
        return MessageList.from_json(self._call("GET", _p(run_id) + "/messages", query=q))

    def iter_messages(self, run_id: str, start: int = 0, page_size: Optional[int] = None) -> Iterator[Message]:
        """iter_messages yields the run's whole conversation from start."""
        nxt: Optional[int] = start
        while nxt is not None:
            page = self.messages(run_id, nxt, page_size)
            yield from page.messages
            nxt = page.next_from

    def resume(self, run_id: str, agent: Optional[str] = None, take_over: bool = False) -> Run:
        """resume makes an interrupted or stalled run runnable now, driven
        by agent from now on when given; take_over takes its lease from
        whoever holds it."""
        body: Dict[str, Any] = {}
        if agent:
            body["agent"] = agent
        if take_over:
            body["take_over"] = True
        return Run.from_json(self._call("POST", _p(run_id) + "/resume", body=body, send_body=True, kind=UNSAFE))

    def cancel(self, run_id: str, reason: Optional[str] = None, take_over: bool = False) -> Run:
        """cancel ends a run that has not ended (cancelled); a run another
        server drives is asked to end (its cancel_requested is set)."""
        body: Dict[str, Any] = {}
        if reason:
            body["reason"] = reason
        if take_over:
            body["take_over"] = True
        return Run.from_json(self._call("POST", _p(run_id) + "/cancel", body=body, send_body=True, kind=UNSAFE))

    def fork(self, run_id: str, at: int, result: Optional[Iterable[Union[Answer, Mapping[str, Any]]]] = None,
             reply: Optional[Mapping[str, Any]] = None, agent: Optional[str] = None) -> Run:
        """fork makes a new run from the state at step at: with result
        (answers) or reply ({"text", "tool_calls": [{"id", "name",
        "arguments"}]}) that step's request gets it, with neither it is
        made again; agent drives the fork instead of the run's."""
        body: Dict[str, Any] = {"at": int(at)}
        if result is not None:
            body["result"] = _answers_json(result)
        if reply is not None:
            body["reply"] = dict(reply)
        if agent:
            body["agent"] = agent
        return Run.from_json(self._call("POST", _p(run_id) + "/fork", body=body, send_body=True, kind=UNSAFE))

    def replay(self, run_id: str, agent: Optional[str] = None) -> Replay:
        """replay re-drives the core over the recorded run (no model or tool
        called) and reports the first step that diverges."""
        body = {"agent": agent} if agent else {}
        return Replay.from_json(self._call("POST", _p(run_id) + "/replay", body=body, send_body=True, kind=SAFE))

    # Events.

    def iter_events(self, run_id: str, last_event_id: Optional[str] = None, timeout: Optional[float] = None) -> EventStream:
        """iter_events follows the run's events (an EventStream of Event),
        after last_event_id when given, until "end"; it reconnects on its
        own and resumes by Last-Event-ID, so no step is lost or repeated.
        timeout bounds the whole stream (TimeoutError)."""
        return EventStream(self._t, run_id, last_event_id, read_timeout=self.stream_read_timeout,
                           reconnects=self.stream_reconnects, timeout=timeout)

    def poll_steps(self, run_id: str, after: Optional[int] = None, wait: float = 30.0) -> Poll:
        """poll_steps long-polls instead of streaming: the steps after step
        `after`, at once when there are some, else when one comes or wait
        seconds passed, with the run."""
        q = {"after": after, "wait": _wait_text(wait)}
        return Poll.from_json(self._call("GET", _p(run_id) + "/events", query=q, timeout=self._t.timeout + float(wait)))

    # The server.

    def list_agents(self) -> List[str]:
        """list_agents are the names of the server's agent files."""
        return list((self._call("GET", "/v1/agents") or {}).get("agents") or [])

    def openapi(self) -> Dict[str, Any]:
        """openapi is the server's API description (OpenAPI 3.1)."""
        return self._call("GET", "/openapi.json")

    def health(self) -> Dict[str, Any]:
        """health is the server's health ({"status": "ok"})."""
        return self._call("GET", "/healthz")

    # Helpers.

    def wait(self, run_id: str, timeout: Optional[float] = None) -> Run:
        """wait follows the run until it ends (completed, failed, cancelled)
        or pauses for external calls, and returns it."""
        return self._follow(run_id, None, None, timeout)

    def drive(self, run_id: str, tools: Mapping[str, Tool], timeout: Optional[float] = None) -> Run:
        """drive answers the run's external tool calls until it ends, and
        returns it. tools maps a tool's name to a callable that takes the
        call's arguments and returns the result; what it raises, and a call
        of a tool not in tools, becomes an error result the model reads."""
        return self._follow(run_id, None, tools, timeout)

    def say(self, run_id: str, content: str, wait: bool = True, tools: Optional[Mapping[str, Tool]] = None,
            timeout: Optional[float] = None, idempotency_key: Optional[str] = None) -> Run:
        """say sends the user's message and, with wait, follows the run until
        its turn ends; it returns the run (its answer in .answer). With tools
        it answers external calls as drive does; without, it returns when
        the run pauses for them."""
        run = self.send_message(run_id, content, idempotency_key)
        if not wait:
            return run
        return self._follow(run_id, run, tools, timeout)

    def _follow(self, run_id: str, start: Optional[Run], tools: Optional[Mapping[str, Tool]], timeout: Optional[float]) -> Run:
        """_follow watches the run's "run" events from the run as start
        shows it (else as it is now) until its stream ends, answering its
        pauses with tools, or, with none, returning at a pause."""
        if start is None:
            start = self.get_run(run_id)
        if start.ended:
            return start
        answered: Set[Tuple[int, str]] = set()
        with self.iter_events(run_id, str(start.steps), timeout) as stream:
            for ev in stream:
                if ev.event != "run":
                    continue
                calls = unanswered(ev.value, answered)
                if not calls:
                    continue
                if tools is None:
                    return ev.value
                answers = []
                for c in calls:
                    a, _ = answer_call(c, tools)
                    answers.append(a if a is not None else Answer.fail(c.id, f"the tool {c.name} is a coroutine; use AsyncClient"))
                try:
                    self.post_results(run_id, answers)
                except (AlreadyAnsweredError, NotPausedError):
                    pass  # another client answered this pause first
                answered.update((ev.value.steps, c.id) for c in calls)
        return self.get_run(run_id)
