"""A scripted HTTP server for the offline tests: each request gets the next
scripted answer; every request is recorded."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, List, Optional, Tuple


class Answer:
    """Answer is one scripted answer: a status, a JSON body (or raw bytes),
    headers; or stream, a function that writes an event stream to the
    handler's wfile itself (HTTP/1.0 style: the body ends when the
    connection closes)."""

    def __init__(self, status: int = 200, body: Any = None, headers: Optional[dict] = None,
                 stream: Optional[Callable[[Any], None]] = None):
        self.status, self.body, self.headers, self.stream = status, body, headers or {}, stream


def error(status: int, code: str, retry_after: Optional[str] = None) -> Answer:
    h = {"Retry-After": retry_after} if retry_after is not None else {}
    return Answer(status, {"error": {"code": code, "message": "scripted " + code}}, h)


class FakeServer:
    def __init__(self, answers: List[Answer]):
        self.answers = list(answers)
        self.requests: List[Tuple[str, str, dict, bytes]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *a: Any) -> None:
                pass

            def _handle(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                fake.requests.append((self.command, self.path, dict(self.headers), body))
                a = fake.answers.pop(0) if fake.answers else Answer(500, {"error": {"code": "internal", "message": "no more answers"}})
                self.send_response(a.status)
                for k, v in a.headers.items():
                    self.send_header(k, v)
                if a.stream is not None:
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    try:
                        a.stream(self.wfile)
                    except OSError:
                        pass
                    return
                data = a.body if isinstance(a.body, bytes) else json.dumps(a.body).encode()
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _handle

        self._srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._srv.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self._srv.server_address[1]
        threading.Thread(target=self._srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self._srv.shutdown()
        self._srv.server_close()

    def __enter__(self) -> "FakeServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def sse(*events: str, hold: float = 0.0) -> Callable[[Any], None]:
    """sse is a stream that writes the events' text, then holds the
    connection open for hold seconds, then closes it."""

    def write(w: Any) -> None:
        for e in events:
            w.write(e.encode())
            w.flush()
        if hold:
            time.sleep(hold)

    return write


def step(seq: int) -> str:
    return 'id: %d\nevent: step\ndata: {"seq": %d, "status": "running"}\n\n' % (seq, seq)
