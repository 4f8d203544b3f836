"""AsyncClient: Client's surface for asyncio.

Each call runs the synchronous Client's in a thread of an executor (the
loop's default unless one is given): the standard library has no asyncio
HTTP client, and one transport, tested once, serves both clients, retries
and stream resumption included. A call holds a thread while it waits for
the server, and an open event stream holds one while it is read; close a
stream (async with, or aclose) to give its thread back at once: the
socket is shut, so the read in flight returns.

drive and say take tools that are plain functions or coroutine functions;
a plain one runs on the loop's thread (keep it quick, or make it async).
"""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import Executor
from typing import Any, AsyncIterator, Dict, Iterable, List, Mapping, Optional, Set, Tuple, Union

from ._drive import Tool, answer_call, error_text, result_answer, unanswered
from .client import Client
from .errors import AlreadyAnsweredError, NotPausedError
from .events import EventStream
from .models import Answer, ChatMessage, Event, Message, MessageList, Poll, Replay, Run, RunList, Step, StepRequest

_DONE = object()


class AsyncEventStream:
    """AsyncEventStream is an EventStream for async for; close it with
    aclose (or async with) to stop early."""

    def __init__(self, stream: EventStream, executor: Optional[Executor]):
        self._s = stream
        self._executor = executor

    @property
    def last_event_id(self) -> Optional[str]:
        return self._s.last_event_id

    @property
    def connections(self) -> int:
        return self._s.connections

    def __aiter__(self) -> "AsyncEventStream":
        return self

    async def __anext__(self) -> Event:
        loop = asyncio.get_running_loop()
        try:
            ev = await loop.run_in_executor(self._executor, next, self._s, _DONE)
        except BaseException:
            self._s.close()  # cancelled: the thread's read returns at once
            raise
        if ev is _DONE:
            raise StopAsyncIteration
        return ev

    async def aclose(self) -> None:
        self._s.close()

    async def __aenter__(self) -> "AsyncEventStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self._s.close()


class AsyncClient:
    """AsyncClient is Client for asyncio: the same methods, as coroutines
    (iter_events gives an AsyncEventStream). It takes Client's arguments,
    and executor, the executor its calls run in (the loop's default when
    None)."""

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, *,
                 executor: Optional[Executor] = None, **kw: Any):
        self.sync = Client(url, token, **kw)
        self._executor = executor

    @property
    def url(self) -> str:
        return self.sync.url

    async def _run(self, fn: Any, *args: Any, **kw: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kw))

    # Runs.

    async def create_run(self, agent: str, input: Optional[str] = None,
                         messages: Optional[Iterable[Union[ChatMessage, Mapping[str, Any]]]] = None,
                         idempotency_key: Optional[str] = None, wait: Union[None, float, str] = None) -> Run:
        """create_run: Client.create_run."""
        if messages is not None:
            messages = list(messages)
        return await self._run(self.sync.create_run, agent, input, messages, idempotency_key, wait)

    async def get_run(self, run_id: str) -> Run:
        """get_run: Client.get_run."""
        return await self._run(self.sync.get_run, run_id)

    async def list_runs(self, status: Optional[str] = None, agent: Optional[str] = None, parent: Optional[str] = None,
                        limit: Optional[int] = None, cursor: Optional[str] = None) -> RunList:
        """list_runs: Client.list_runs."""
        return await self._run(self.sync.list_runs, status, agent, parent, limit, cursor)

    async def iter_runs(self, status: Optional[str] = None, agent: Optional[str] = None, parent: Optional[str] = None,
                        page_size: Optional[int] = None) -> AsyncIterator[Run]:
        """iter_runs: Client.iter_runs, for async for."""
        cursor: Optional[str] = None
        while True:
            page = await self.list_runs(status, agent, parent, page_size, cursor)
            for r in page.runs:
                yield r
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def steps(self, run_id: str, start: int = 0, limit: Optional[int] = None) -> List[Step]:
        """steps: Client.steps."""
        return await self._run(self.sync.steps, run_id, start, limit)

    async def iter_steps(self, run_id: str, start: int = 0, page_size: int = 500) -> AsyncIterator[Step]:
        """iter_steps: Client.iter_steps, for async for."""
        while True:
            page = await self.steps(run_id, start, page_size)
            for st in page:
                yield st
            if len(page) < page_size:
                return
            start = page[-1].seq + 1

    async def step_request(self, run_id: str, seq: int) -> StepRequest:
        """step_request: Client.step_request."""
        return await self._run(self.sync.step_request, run_id, seq)

    async def post_results(self, run_id: str, answers: Iterable[Union[Answer, Mapping[str, Any]]],
                           idempotency_key: Optional[str] = None) -> Run:
        """post_results: Client.post_results."""
        return await self._run(self.sync.post_results, run_id, list(answers), idempotency_key)

    async def send_message(self, run_id: str, content: str, idempotency_key: Optional[str] = None) -> Run:
        """send_message: Client.send_message."""
        return await self._run(self.sync.send_message, run_id, content, idempotency_key)

    async def messages(self, run_id: str, start: int = 0, limit: Optional[int] = None) -> MessageList:
        """messages: Client.messages."""
        return await self._run(self.sync.messages, run_id, start, limit)

    async def iter_messages(self, run_id: str, start: int = 0, page_size: Optional[int] = None) -> AsyncIterator[Message]:
        """iter_messages: Client.iter_messages, for async for."""
        nxt: Optional[int] = start
        while nxt is not None:
            page = await self.messages(run_id, nxt, page_size)
            for m in page.messages:
                yield m
            nxt = page.next_from

    async def resume(self, run_id: str, agent: Optional[str] = None, take_over: bool = False) -> Run:
        """resume: Client.resume."""
        return await self._run(self.sync.resume, run_id, agent, take_over)

    async def cancel(self, run_id: str, reason: Optional[str] = None, take_over: bool = False) -> Run:
        """cancel: Client.cancel."""
        return await self._run(self.sync.cancel, run_id, reason, take_over)

    async def fork(self, run_id: str, at: int, result: Optional[Iterable[Union[Answer, Mapping[str, Any]]]] = None,
                   reply: Optional[Mapping[str, Any]] = None, agent: Optional[str] = None) -> Run:
        """fork: Client.fork."""
        return await self._run(self.sync.fork, run_id, at, None if result is None else list(result), reply, agent)

    async def replay(self, run_id: str, agent: Optional[str] = None) -> Replay:
        """replay: Client.replay."""
        return await self._run(self.sync.replay, run_id, agent)

    # Events.

    def iter_events(self, run_id: str, last_event_id: Optional[str] = None, timeout: Optional[float] = None) -> AsyncEventStream:
        """iter_events: Client.iter_events, for async for."""
        return AsyncEventStream(self.sync.iter_events(run_id, last_event_id, timeout), self._executor)

    async def poll_steps(self, run_id: str, after: Optional[int] = None, wait: float = 30.0) -> Poll:
        """poll_steps: Client.poll_steps."""
        return await self._run(self.sync.poll_steps, run_id, after, wait)

    # The server.

    async def list_agents(self) -> List[str]:
        """list_agents: Client.list_agents."""
        return await self._run(self.sync.list_agents)

    async def openapi(self) -> Dict[str, Any]:
        """openapi: Client.openapi."""
        return await self._run(self.sync.openapi)

    async def health(self) -> Dict[str, Any]:
        """health: Client.health."""
        return await self._run(self.sync.health)

    # Helpers.

    async def wait(self, run_id: str, timeout: Optional[float] = None) -> Run:
        """wait: Client.wait."""
        return await self._follow(run_id, None, None, timeout)

    async def drive(self, run_id: str, tools: Mapping[str, Tool], timeout: Optional[float] = None) -> Run:
        """drive: Client.drive; a tool may be a coroutine function."""
        return await self._follow(run_id, None, tools, timeout)

    async def say(self, run_id: str, content: str, wait: bool = True, tools: Optional[Mapping[str, Tool]] = None,
                  timeout: Optional[float] = None, idempotency_key: Optional[str] = None) -> Run:
        """say: Client.say; a tool may be a coroutine function."""
        run = await self.send_message(run_id, content, idempotency_key)
        if not wait:
            return run
        return await self._follow(run_id, run, tools, timeout)

    async def _follow(self, run_id: str, start: Optional[Run], tools: Optional[Mapping[str, Tool]], timeout: Optional[float]) -> Run:
        """_follow: Client._follow, awaiting the tools that are coroutines."""
        if start is None:
            start = await self.get_run(run_id)
        if start.ended:
            return start
        answered: Set[Tuple[int, str]] = set()
        async with self.iter_events(run_id, str(start.steps), timeout) as stream:
            async for ev in stream:
                if ev.event != "run":
                    continue
                calls = unanswered(ev.value, answered)
                if not calls:
                    continue
                if tools is None:
                    return ev.value
                answers = []
                for c in calls:
                    a, pending = answer_call(c, tools)
                    if pending is not None:
                        try:
                            a = result_answer(c, await pending)
                        except Exception as e:  # a tool's failure is a result the model reads
                            a = Answer.fail(c.id, error_text(e))
                    answers.append(a)
                try:
                    await self.post_results(run_id, answers)
                except (AlreadyAnsweredError, NotPausedError):
                    pass  # another client answered this pause first
                answered.update((ev.value.steps, c.id) for c in calls)
        return await self.get_run(run_id)
