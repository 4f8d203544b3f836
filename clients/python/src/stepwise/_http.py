"""The HTTP transport: one request, with the client's retries.

It speaks HTTP/1.1 with http.client (urllib's own transport): one
connection per request (a call of this API waits seconds for a model, so
reuse buys little, and a fresh connection never meets one the server closed
while idle), and the socket at hand, so that an event stream read in a
worker thread can be cut from another (AsyncClient closes streams so).

Retries. A request is retried, with backoff, when no answer came
(connection refused, reset, timed out) or the answer says to come back: 429
(Retry-After), 502, 503, 504, and 409 in_progress for a request with an
Idempotency-Key. Whether a request that may have reached the server is sent
again depends on what it is:

  - SAFE (GET, and replay, which changes nothing) and KEYED (the POSTs that
    take an Idempotency-Key, sent with the same key each time, so a retry
    gets the first outcome, never a second run, answer or message) are
    retried in every case above;
  - UNSAFE (resume, cancel, fork) only when the request never left: the
    connection was refused, or the server answered 429.
"""

from __future__ import annotations

import email.utils
import json
import random
import socket
import time
import http.client
from typing import Any, Dict, Mapping, Optional, Tuple
from urllib.parse import urlencode, urlsplit

from .errors import ConnectionFailed, StepwiseError, error_from

SAFE, KEYED, UNSAFE = "safe", "keyed", "unsafe"

# _RETRY_STATUS are the answers that say to try again later.
_RETRY_STATUS = frozenset({429, 502, 503, 504})

# MAX_RETRY_AFTER caps a server's Retry-After, in seconds.
MAX_RETRY_AFTER = 60.0

USER_AGENT = "stepwise-python/0.1"


class _NotSent(Exception):
    """_NotSent wraps a failure to connect: the request never left."""


class Transport:
    """Transport sends requests to one server. It holds no connection
    between requests, so one Transport serves many threads."""

    def __init__(self, base_url: str, token: Optional[str], timeout: float, retries: int, backoff: float, max_backoff: float):
        u = urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"the server's URL {base_url!r}: want http://HOST[:PORT] or https://...")
        self.base_url = base_url.rstrip("/")
        self._https = u.scheme == "https"
        self._host = u.hostname
        self._port = u.port
        self._prefix = u.path.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff

    # The one request.

    def connect(self, timeout: float) -> Tuple[http.client.HTTPConnection, socket.socket]:
        """connect opens a connection; _NotSent when it cannot."""
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=timeout)
        try:
            conn.connect()
        except OSError as e:
            conn.close()
            raise _NotSent(e) from e
        return conn, conn.sock

    def headers(self, extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
        h = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if extra:
            h.update(extra)
        return h

    def url_path(self, path: str, query: Optional[Mapping[str, Any]] = None) -> str:
        q = {k: v for k, v in (query or {}).items() if v is not None}
        return self._prefix + path + ("?" + urlencode(q) if q else "")

    def _once(self, method: str, target: str, body: Optional[bytes], headers: Dict[str, str], timeout: float) -> Tuple[int, Mapping[str, str], bytes]:
        conn, _ = self.connect(timeout)
        try:
            conn.request(method, target, body=body, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.headers, resp.read()
        finally:
            conn.close()

    def call(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None, body: Any = None,
             send_body: bool = False, kind: str = SAFE, idempotency_key: Optional[str] = None,
             timeout: Optional[float] = None) -> Tuple[Any, Mapping[str, str]]:
        """call sends a request and returns its JSON answer and headers,
        retrying as the module's doc says; an error answer is raised as
        its StepwiseError, no answer as ConnectionFailed."""
        data = None
        extra: Dict[str, str] = {}
        if method == "POST":
            # Every POST says it is JSON, even with no body (415 otherwise).
            extra["Content-Type"] = "application/json"
            data = json.dumps(body, separators=(",", ":")).encode() if send_body else b""
        if idempotency_key:
            extra["Idempotency-Key"] = idempotency_key
        headers = self.headers(extra)
        target = self.url_path(path, query)
        timeout = self.timeout if timeout is None else timeout
        attempt = 0
        while True:
            delay: Optional[float] = None
            try:
                status, rh, raw = self._once(method, target, data, headers, timeout)
            except _NotSent as e:
                err: StepwiseError = ConnectionFailed(f"{method} {self.base_url}{target}: {e.__cause__}")
                delay = self._backoff(attempt)
            except (OSError, http.client.HTTPException) as e:
                err = ConnectionFailed(f"{method} {self.base_url}{target}: {type(e).__name__}: {e}")
                if kind != UNSAFE:
                    delay = self._backoff(attempt)
            else:
                if 200 <= status < 300:
                    return decode_json(status, raw), rh
                retry_after = parse_retry_after(rh.get("Retry-After"))
                err = error_from(status, raw, retry_after)
                if retryable(status, err.code, kind):
                    delay = retry_after if retry_after is not None else self._backoff(attempt)
            if delay is None or attempt >= self.retries:
                raise err
            attempt += 1
            time.sleep(delay)

    def _backoff(self, attempt: int) -> float:
        """_backoff is the wait before retry attempt+1: exponential from
        backoff, capped, with jitter (clients that failed together do not
        come back together)."""
        d = min(self.max_backoff, self.backoff * (2 ** attempt))
        return d * (0.5 + random.random() / 2)


def decode_json(status: int, raw: bytes) -> Any:
    """decode_json reads a successful answer's JSON (None for no body)."""
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError as e:
        raise StepwiseError(status, "invalid_response", f"the answer is not JSON: {e}: {raw[:200]!r}") from None


def retryable(status: int, code: str, kind: str) -> bool:
    """retryable says whether an error answer is worth the same request
    again, for a request of that kind."""
    if status == 429:
        return True  # refused before any work
    if kind == UNSAFE:
        return False
    if status in _RETRY_STATUS:
        return True
    return kind == KEYED and code == "in_progress"


def parse_retry_after(v: Optional[str]) -> Optional[float]:
    """parse_retry_after reads Retry-After (seconds or an HTTP date), capped
    at MAX_RETRY_AFTER; None when absent or unreadable."""
    if not v:
        return None
    v = v.strip()
    try:
        secs = float(v)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(v)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        secs = when.timestamp() - time.time()
    return max(0.0, min(secs, MAX_RETRY_AFTER))
