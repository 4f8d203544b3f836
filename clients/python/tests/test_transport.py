"""Retries, Idempotency-Key reuse and event stream resumption, against a
scripted server (offline)."""

import asyncio
import socket
import threading
import time
import unittest

import stepwise
from _fake import Answer, FakeServer, error, sse, step

RUN = {"id": "r1", "agent": "a", "status": "running", "steps": 0, "pending_tool_calls": [], "turns": 1}


def quick(url, **kw):
    kw.setdefault("backoff", 0.01)
    kw.setdefault("max_backoff", 0.02)
    return stepwise.Client(url, "tok-0123456789abcdef", **kw)


class TestRetries(unittest.TestCase):
    def test_get_is_retried_past_503_and_502(self):
        with FakeServer([error(503, "unavailable", "0"), Answer(502, b"<html>bad gateway</html>"), Answer(200, {"status": "ok"})]) as s:
            self.assertEqual(quick(s.url).health(), {"status": "ok"})
            self.assertEqual(len(s.requests), 3)
            self.assertEqual(s.requests[0][2]["Authorization"], "Bearer tok-0123456789abcdef")

    def test_a_keyed_post_keeps_its_key_across_retries(self):
        with FakeServer([Answer(504, b""), error(409, "in_progress", "0"), Answer(202, RUN)]) as s:
            run = quick(s.url).send_message("r1", "hi")
            self.assertEqual(run.id, "r1")
            keys = [h.get("Idempotency-Key") for _, _, h, _ in s.requests]
            self.assertEqual(len(keys), 3)
            self.assertTrue(keys[0] and keys[0] == keys[1] == keys[2], keys)
            self.assertEqual([b for _, _, _, b in s.requests], [b'{"content":"hi"}'] * 3)
            self.assertEqual(s.requests[0][2]["Content-Type"], "application/json")

    def test_each_logical_call_gets_its_own_key_unless_given(self):
        with FakeServer([Answer(201, RUN), Answer(201, RUN), Answer(201, RUN)]) as s:
            c = quick(s.url)
            c.create_run("a", input="x")
            c.create_run("a", input="x")
            c.create_run("a", input="x", idempotency_key="mine")
            keys = [h.get("Idempotency-Key") for _, _, h, _ in s.requests]
            self.assertNotEqual(keys[0], keys[1])
            self.assertEqual(keys[2], "mine")

    def test_an_unsafe_post_is_not_sent_again(self):
        with FakeServer([error(503, "unavailable", "0"), Answer(200, RUN)]) as s:
            with self.assertRaises(stepwise.UnavailableError) as cm:
                quick(s.url).cancel("r1")
            self.assertEqual(cm.exception.retry_after, 0.0)
            self.assertEqual(len(s.requests), 1)
            self.assertEqual(s.requests[0][2]["Content-Type"], "application/json")  # even with no fields

    def test_429_is_retried_for_any_request(self):
        with FakeServer([error(429, "too_many_streams", "0"), Answer(200, RUN)]) as s:
            self.assertEqual(quick(s.url).resume("r1").id, "r1")
            self.assertEqual(len(s.requests), 2)

    def test_errors_are_not_retried(self):
        with FakeServer([error(404, "not_found"), error(409, "in_progress", "0")]) as s:
            with self.assertRaises(stepwise.NotFoundError):
                quick(s.url).get_run("r9")
            with self.assertRaises(stepwise.InProgressError):
                quick(s.url, retries=0).send_message("r1", "x")
            self.assertEqual(len(s.requests), 2)

    def test_gives_up_past_its_retries(self):
        with FakeServer([error(503, "unavailable", "0")] * 3) as s:
            with self.assertRaises(stepwise.UnavailableError):
                quick(s.url, retries=2).get_run("r1")
            self.assertEqual(len(s.requests), 3)

    def test_no_server(self):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()  # nothing listens there now
        with self.assertRaises(stepwise.ConnectionFailed) as cm:
            quick("http://127.0.0.1:%d" % port, retries=1).health()
        self.assertIsNone(cm.exception.status)
        self.assertEqual(cm.exception.code, "connection_error")

    def test_query_and_paths(self):
        with FakeServer([Answer(200, {"runs": [], "next_cursor": ""}), Answer(200, {"steps": []}),
                         Answer(200, {"messages": [], "next_from": None})]) as s:
            c = quick(s.url)
            c.list_runs(status="completed", limit=5)
            c.steps("r/1", start=3, limit=2)
            c.messages("r1", start=0)
            paths = [p for _, p, _, _ in s.requests]
            self.assertEqual(paths, ["/v1/runs?status=completed&limit=5", "/v1/runs/r%2F1/steps?from=3&limit=2", "/v1/runs/r1/messages"])


class TestEventStream(unittest.TestCase):
    def test_resumes_after_a_cut_with_no_loss_and_no_repeat(self):
        cut = step(0) + 'event: message\ndata: {"seq": 1, "content": "hi"}\n\nid: 1\nevent: step\ndata: {"se'
        again = 'event: message\ndata: {"seq": 1, "content": "hi"}\n\n' + step(1) + step(2)
        with FakeServer([Answer(stream=sse(cut)), error(429, "too_many_streams", "0"), Answer(stream=sse(again)),
                         Answer(stream=sse(step(2) + step(3) + "event: end\ndata: {}\n\n"))]) as s:
            stream = quick(s.url).iter_events("r1")
            got = [(e.event, e.seq) for e in stream]
            self.assertEqual(got, [("step", 0), ("message", 1), ("step", 1), ("step", 2), ("step", 3), ("end", None)])
            ids = [h.get("Last-Event-ID") for _, _, h, _ in s.requests]
            self.assertEqual(ids, [None, "0", "0", "2"])
            self.assertEqual(s.requests[0][2]["Accept"], "text/event-stream")
            self.assertEqual(stream.connections, 4)

    def test_starts_after_last_event_id(self):
        with FakeServer([Answer(stream=sse(step(5), "event: end\ndata: {}\n\n"))]) as s:
            self.assertEqual([e.seq for e in quick(s.url).iter_events("r1", last_event_id="4.2")], [5, None])
            self.assertEqual(s.requests[0][2]["Last-Event-ID"], "4.2")

    def test_an_error_answer_is_raised(self):
        with FakeServer([error(404, "not_found")]) as s:
            with self.assertRaises(stepwise.NotFoundError):
                list(quick(s.url).iter_events("r9"))

    def test_gives_up_when_no_event_comes(self):
        with FakeServer([Answer(stream=sse())] * 4) as s:
            with self.assertRaises(stepwise.ConnectionFailed):
                list(quick(s.url, stream_reconnects=3).iter_events("r1"))
            self.assertEqual(len(s.requests), 4)

    def test_timeout(self):
        with FakeServer([Answer(stream=sse(step(0), hold=5))]) as s:
            t0 = time.monotonic()
            with self.assertRaises(TimeoutError):
                list(quick(s.url).iter_events("r1", timeout=0.5))
            self.assertLess(time.monotonic() - t0, 3)

    def test_close_from_another_thread(self):
        with FakeServer([Answer(stream=sse(step(0), hold=5))]) as s:
            stream = quick(s.url).iter_events("r1")
            self.assertEqual(next(stream).seq, 0)
            threading.Timer(0.2, stream.close).start()
            t0 = time.monotonic()
            self.assertEqual(list(stream), [])
            self.assertLess(time.monotonic() - t0, 2)


class TestAsync(unittest.TestCase):
    def test_calls_and_events(self):
        async def main(url):
            c = stepwise.AsyncClient(url, "tok-0123456789abcdef", backoff=0.01)
            self.assertEqual(await c.health(), {"status": "ok"})
            seqs = []
            async with c.iter_events("r1") as stream:
                async for ev in stream:
                    seqs.append(ev.seq)
            return seqs

        with FakeServer([Answer(200, {"status": "ok"}), Answer(stream=sse(step(0), step(1), "event: end\ndata: {}\n\n"))]) as s:
            self.assertEqual(asyncio.run(main(s.url)), [0, 1, None])

    def test_cancelling_a_read_frees_its_thread(self):
        async def main(url):
            c = stepwise.AsyncClient(url, "tok-0123456789abcdef")
            stream = c.iter_events("r1")

            async def read():
                async for _ in stream:
                    pass

            task = asyncio.ensure_future(read())
            await asyncio.sleep(0.3)
            task.cancel()
            t0 = time.monotonic()
            with self.assertRaises(asyncio.CancelledError):
                await task
            return time.monotonic() - t0

        with FakeServer([Answer(stream=sse(hold=10))]) as s:
            t0 = time.monotonic()
            asyncio.run(main(s.url))  # returns once the executor's thread is done
            self.assertLess(time.monotonic() - t0, 3)


if __name__ == "__main__":
    unittest.main()
