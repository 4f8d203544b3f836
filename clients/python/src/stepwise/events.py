"""A run's event stream: Server-Sent Events, resumed on a dropped connection.

EventStream reads GET /v1/runs/{id}/events and yields each event as an
Event. When the connection drops (reset, cut mid-event, a read that times
out: the server pings every 15 s), it waits and connects again with
Last-Event-ID, the id of the last event it yielded, so that the server
sends the steps after it: no step is lost, and none comes twice (the
stream also drops a step or message event whose seq it has yielded, should
one come again). An event cut off mid-way is never yielded: an event counts
once its closing blank line came.

What comes again after a reconnection: the "run" event (a snapshot of the
run, sent first on each connection and on each change), and the live
events of a model call in flight ("calling"); the live events sent while
the client was away are not sent again (the next step holds the whole
reply). The stream ends after the "end" event, or when closed.
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import threading
import time
from typing import Any, Iterator, List, Optional, Tuple
from urllib.parse import quote

from .errors import ConnectionFailed, StepwiseError, error_from
from .models import Event
from ._http import Transport, _NotSent, parse_retry_after


class SSEParser:
    """SSEParser reads the lines of a text/event-stream (the WHATWG rules:
    "field: value" lines, data lines joined by newlines, comments from
    ":", an event dispatched at a blank line, none when it has no data)."""

    def __init__(self) -> None:
        self._event = ""
        self._id: Optional[str] = None
        self._data: List[str] = []

    def reset(self) -> None:
        """reset drops a partly read event (its connection dropped)."""
        self.__init__()

    def line(self, line: str) -> Optional[Tuple[str, Optional[str], str]]:
        """line takes one line (without its end); at a blank line it returns
        the event read, as (name, id or None, data)."""
        if line == "":
            event, ident, data = self._event or "message", self._id, self._data
            self.reset()
            if not data:
                return None
            return event, ident, "\n".join(data)
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id = value
        return None


def _seq_of(last_event_id: Optional[str]) -> int:
    """_seq_of is the step a Last-Event-ID ("7" or "7.3") stands for; -1
    for none."""
    if not last_event_id:
        return -1
    head = last_event_id.split(".", 1)[0]
    try:
        return int(head)
    except ValueError:
        raise ValueError(f"last_event_id {last_event_id!r}: want a step's seq, like '7' or '7.3'") from None


class EventStream:
    """EventStream is the iterator of a run's events (Client.iter_events).
    Close it (or use it in a with block) to stop early; close may be called
    from another thread."""

    def __init__(self, transport: Transport, run_id: str, last_event_id: Optional[str] = None, *,
                 read_timeout: float = 60.0, reconnects: int = 8, timeout: Optional[float] = None):
        self._t = transport
        self.run_id = run_id
        self.last_event_id = last_event_id or None
        self._last_step = _seq_of(self.last_event_id)
        self._last_message = self._last_step
        self._read_timeout = read_timeout
        self._reconnects = reconnects
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._timeout = timeout
        self._parser = SSEParser()
        self._conn: Optional[http.client.HTTPConnection] = None
        self._sock: Optional[socket.socket] = None
        self._resp: Optional[http.client.HTTPResponse] = None
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._ended = False
        self._busy = False  # a thread is in __next__
        self._failures = 0
        # connections counts the connections made (1 when none dropped).
        self.connections = 0

    def __iter__(self) -> Iterator[Event]:
        return self

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """close stops the stream: the iteration ends, and a read in flight
        in another thread returns at once."""
        self._closed.set()
        with self._lock:
            if self._sock is not None:
                try:
                    self._sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            idle = not self._busy
        if idle:
            self._disconnect()

    def __next__(self) -> Event:
        with self._lock:
            self._busy = True
        try:
            return self._next()
        finally:
            with self._lock:
                self._busy = False

    def _next(self) -> Event:
        while True:
            if self._ended or self._closed.is_set():
                self._disconnect()
                raise StopIteration
            if self._resp is None:
                self._connect()
                continue
            self._sock_timeout()
            try:
                raw = self._resp.readline()
            except (OSError, ValueError, http.client.HTTPException) as e:
                self._drop(e)
                continue
            if not raw:
                self._drop(None)  # the server (or something between) closed it
                continue
            got = self._parser.line(raw.decode("utf-8", "replace").rstrip("\r\n"))
            if got is None:
                continue
            ev = self._accept(*got)
            if ev is not None:
                return ev

    # Events.

    def _accept(self, name: str, ident: Optional[str], data_text: str) -> Optional[Event]:
        """_accept turns a dispatched event into an Event, or None for one
        to skip: a step or message event already yielded."""
        try:
            data = json.loads(data_text)
        except ValueError:
            data = data_text
        ev = Event.parse(name, ident or "", data)
        self._failures = 0  # the connection works: a later drop starts the count again
        seq = ev.seq
        if name == "step" and seq is not None:
            if seq <= self._last_step:
                return None
            self._last_step = seq
        elif name == "message" and seq is not None:
            if seq <= self._last_message or seq <= self._last_step:
                return None
            self._last_message = seq
        elif name == "end":
            self._ended = True
        if ident:
            self.last_event_id = ident
        return ev

    # The connection.

    def _remaining(self) -> Optional[float]:
        if self._deadline is None:
            return None
        left = self._deadline - time.monotonic()
        if left <= 0:
            self._disconnect()
            raise TimeoutError(f"run {self.run_id}: the events did not end within {self._timeout:g}s")
        return left

    def _sock_timeout(self) -> None:
        """_sock_timeout shortens the next read's timeout to the time left
        (the connection was made with the read timeout)."""
        left = self._remaining()
        if left is None or left >= self._read_timeout or self._sock is None:
            return
        try:
            self._sock.settimeout(left)
        except OSError:
            pass  # http.client closed it at the body's end: the read says so

    def _connect(self) -> None:
        """_connect opens the stream from last_event_id; after a failure it
        waits first, and gives up past the reconnects allowed in a row."""
        left = self._remaining()
        timeout = self._read_timeout if left is None else min(self._read_timeout, left)
        headers = self._t.headers({"Accept": "text/event-stream", "Cache-Control": "no-store"})
        if self.last_event_id:
            headers["Last-Event-ID"] = self.last_event_id
        path = self._t.url_path(f"/v1/runs/{quote(self.run_id, safe='')}/events")
        try:
            conn, sock = self._t.connect(timeout)
        except _NotSent as e:
            self._fail(ConnectionFailed(f"GET {self._t.base_url}{path}: {e.__cause__}"), None)
            return
        with self._lock:
            self._conn, self._sock = conn, sock
        if self._closed.is_set():
            return
        self.connections += 1
        try:
            conn.request("GET", path, headers=headers)
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            self._disconnect()
            self._fail(ConnectionFailed(f"GET {self._t.base_url}{path}: {type(e).__name__}: {e}"), None)
            return
        if resp.status == 200:
            self._resp = resp
            self._parser.reset()
            return
        try:
            body = resp.read()
        except (OSError, http.client.HTTPException):
            body = b""
        self._disconnect()
        retry_after = parse_retry_after(resp.headers.get("Retry-After"))
        err = error_from(resp.status, body, retry_after)
        if resp.status not in (429, 502, 503, 504):
            raise err
        self._fail(err, retry_after)

    def _drop(self, cause: Optional[BaseException]) -> None:
        """_drop forgets a connection that broke, and waits before the next."""
        self._disconnect()
        if self._closed.is_set() or self._ended:
            return
        if isinstance(cause, socket.timeout):
            self._remaining()  # raises when it was the caller's deadline
        what = "the connection closed" if cause is None else f"{type(cause).__name__}: {cause}"
        self._fail(ConnectionFailed(f"the event stream of run {self.run_id}: {what}"), None)

    def _fail(self, err: StepwiseError, retry_after: Optional[float]) -> None:
        """_fail counts a failure in a row: raises err past the reconnects
        allowed, else waits (Retry-After, or a backoff) for the next try."""
        self._failures += 1
        if self._failures > self._reconnects:
            raise err
        if self._failures == 1 and retry_after is None:
            delay = 0.1  # a dropped stream comes back at once
        elif retry_after is not None:
            delay = retry_after
        else:
            delay = min(self._t.max_backoff, self._t.backoff * (2 ** (self._failures - 2)))
            delay *= 0.5 + random.random() / 2
        left = self._remaining()
        if left is not None:
            delay = min(delay, left)
        self._closed.wait(delay)

    def _disconnect(self) -> None:
        with self._lock:
            conn, self._conn, self._sock, self._resp = self._conn, None, None, None
        if conn is not None:
            conn.close()

