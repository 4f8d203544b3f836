"""A fault-injecting HTTP proxy for the tests: it stands between the client
and a real server and, as told, cuts event streams mid-way, drops the
answer to a request the server did carry out, or answers in the server's
place with an error. One request per connection (the client opens one per
request); it records every request it carried."""

from __future__ import annotations

import re
import socket
import threading
from typing import Dict, List, Optional, Set, Tuple
from urllib.parse import urlsplit


def _read_head(sock: socket.socket, buf: bytes = b"") -> Tuple[bytes, bytes]:
    """_read_head reads up to the blank line that ends the headers; it
    returns the head and what came after it."""
    while b"\r\n\r\n" not in buf:
        got = sock.recv(65536)
        if not got:
            raise ConnectionError("closed before the end of the headers")
        buf += got
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n", rest


def _header(head: bytes, name: str) -> Optional[str]:
    m = re.search(rb"(?im)^" + re.escape(name.encode()) + rb":\s*(.*?)\r$", head)
    return m.group(1).decode() if m else None


def dechunk(body: bytes) -> bytes:
    """dechunk decodes a chunked body (as far as it goes)."""
    out = b""
    while body:
        size_line, sep, body = body.partition(b"\r\n")
        if not sep:
            break
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += body[:size]
        body = body[size + 2:]
    return out


class Record:
    def __init__(self, method: str, path: str, head: bytes, body: bytes):
        self.method, self.path, self.head, self.body = method, path, head, body
        self.status = 0
        self.response_body = b""
        self.dropped = False

    def header(self, name: str) -> Optional[str]:
        return _header(self.head, name)


class Proxy:
    """Proxy forwards 127.0.0.1:PORT to upstream.

    cut_after: names of events (e.g. {"step"}) after each of which, the
    first time it passes, the stream is cut: the event is sent whole, then
    the next event up to a few bytes of its data (its id line included),
    then the connection is closed without the chunked body's end.
    drop: {(METHOD, path regex): n}: the server's answer to the first n
    such requests is read and thrown away, the client's connection closed.
    fail: {(METHOD, path regex): [status, ...]}: the first such requests
    are answered with these statuses (Retry-After: 0) and never reach the
    server."""

    def __init__(self, upstream: str, cut_after: Optional[Set[str]] = None,
                 drop: Optional[Dict[Tuple[str, str], int]] = None,
                 fail: Optional[Dict[Tuple[str, str], List[int]]] = None):
        u = urlsplit(upstream)
        self.upstream = (u.hostname, u.port or 80)
        self.cut_after = set(cut_after or ())
        self.drop = dict(drop or {})
        self.fail = {k: list(v) for k, v in (fail or {}).items()}
        self.records: List[Record] = []
        # cuts counts the streams cut; partial_ids the id lines sent of
        # events cut off before their end.
        self.cuts = 0
        self.partial_ids = 0
        self._cut_done: Set[bytes] = set()
        self._lock = threading.Lock()
        self._srv = socket.socket()
        self._srv.bind(("127.0.0.1", 0))
        self._srv.listen(64)
        self.url = "http://127.0.0.1:%d" % self._srv.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self._srv.close()

    def __enter__(self) -> "Proxy":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                c, _ = self._srv.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _rule(self, table: dict, method: str, path: str):
        with self._lock:
            for (m, pattern), v in table.items():
                if m == method and re.fullmatch(pattern, path.split("?")[0]):
                    if isinstance(v, int) and v > 0:
                        table[(m, pattern)] = v - 1
                        return True
                    if isinstance(v, list) and v:
                        return v.pop(0)
        return None

    def _serve(self, c: socket.socket) -> None:
        up = None
        try:
            head, rest = _read_head(c)
            method, path, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
            n = int(_header(head, "Content-Length") or 0)
            while len(rest) < n:
                rest += c.recv(65536)
            rec = Record(method, path, head, rest[:n])
            with self._lock:
                self.records.append(rec)
            status = self._rule(self.fail, method, path)
            if status:
                body = b'{"error": {"code": "unavailable", "message": "the test proxy says so"}}'
                rec.status = status
                c.sendall(b"HTTP/1.1 %d Injected\r\nContent-Type: application/json\r\nRetry-After: 0\r\n"
                          b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (status, len(body), body))
                return
            up = socket.create_connection(self.upstream)
            # One request per connection: ask the server to close after it.
            head = re.sub(rb"(?im)^connection:.*\r\n", b"", head)
            head = head[:-2] + b"Connection: close\r\n\r\n"
            up.sendall(head + rest[:n])
            if method == "GET" and "/events" in path and "wait=" not in path:
                self._stream(c, up, rec)
                return
            resp = b""
            while True:
                got = up.recv(65536)
                if not got:
                    break
                resp += got
            rhead, _, rbody = resp.partition(b"\r\n\r\n")
            rec.status = int(rhead.split(b" ", 2)[1])
            rec.response_body = dechunk(rbody) if (_header(rhead + b"\r\n", "Transfer-Encoding") or "").lower() == "chunked" else rbody
            if self._rule(self.drop, method, path):
                rec.dropped = True
                return  # the server did the work; the client never hears of it
            c.sendall(resp)
        except (OSError, ValueError, ConnectionError):
            pass
        finally:
            for s in (c, up):
                if s is not None:
                    try:
                        s.close()
                    except OSError:
                        pass

    def _stream(self, c: socket.socket, up: socket.socket, rec: Record) -> None:
        """_stream passes an event stream on, event by event, re-chunked,
        and cuts it as cut_after says."""
        rhead, body = _read_head(up)
        rec.status = int(rhead.split(b" ", 2)[1])
        c.sendall(rhead)
        if rec.status != 200 or (_header(rhead, "Transfer-Encoding") or "").lower() != "chunked":
            c.sendall(body)
            while True:
                got = up.recv(65536)
                if not got:
                    return
                c.sendall(got)
        raw, text, finished = body, b"", False
        while True:
            # Decode the chunks that arrived.
            while not finished:
                size_line, sep, after = raw.partition(b"\r\n")
                if not sep:
                    break
                size = int(size_line.split(b";")[0], 16)
                if size == 0:
                    finished = True
                    break
                if len(after) < size + 2:
                    break
                text += after[:size]
                raw = after[size + 2:]
            # Pass the whole events on; cut after a new one named in cut_after.
            while b"\n\n" in text:
                block, _, text = text.partition(b"\n\n")
                block += b"\n\n"
                self._send(c, block)
                name = re.search(rb"(?m)^event: (.*)$", block)
                if name and name.group(1).decode() in self.cut_after:
                    with self._lock:
                        fresh = block not in self._cut_done
                        self._cut_done.add(block)
                    if fresh:
                        self._cut(c, up, raw, text)
                        return
            if finished:
                self._send(c, text)
                c.sendall(b"0\r\n\r\n")
                return
            got = up.recv(65536)
            if not got:
                return
            raw += got

    def _cut(self, c: socket.socket, up: socket.socket, raw: bytes, text: bytes) -> None:
        """_cut sends the start of the next event, through its id line and a
        few bytes of its data when they came, then closes."""
        up.settimeout(0.5)
        try:
            while b"data: " not in text:
                got = up.recv(65536)
                if not got:
                    break
                raw += got
                size_line, sep, after = raw.partition(b"\r\n")
                while sep:
                    size = int(size_line.split(b";")[0], 16)
                    if size == 0 or len(after) < size + 2:
                        break
                    text += after[:size]
                    raw = after[size + 2:]
                    size_line, sep, after = raw.partition(b"\r\n")
        except OSError:
            pass
        i = text.find(b"data: ")
        with self._lock:
            self.cuts += 1
            if i >= 0:
                self.partial_ids += text[:i].count(b"id: ")
        if i >= 0:
            self._send(c, text[: i + 16])

    @staticmethod
    def _send(c: socket.socket, data: bytes) -> None:
        if data:
            c.sendall(b"%x\r\n%s\r\n" % (len(data), data))
