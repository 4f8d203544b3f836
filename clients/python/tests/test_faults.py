"""The client through a proxy that breaks things, in front of a real
server: event streams cut mid-way, answers lost after the server acted,
errors in the server's place."""

import json
import unittest

import stepwise
from _proxy import Proxy
from _support import CHAT, CHAT_ANSWERS, EXTERNAL, URL, approve, client, needs_server


@needs_server
class TestCutStreams(unittest.TestCase):
    def test_a_stream_cut_after_every_step_loses_and_repeats_none(self):
        direct = client()
        with Proxy(URL, cut_after={"step"}) as proxy:
            c = client(proxy.url)
            run = c.create_run(EXTERNAL, input="Buy a desk lamp")
            seqs, answered = [], set()
            with c.iter_events(run.id) as stream:
                for ev in stream:
                    if ev.event == "step":
                        seqs.append(ev.seq)
                    elif ev.event == "run" and ev.value.paused:
                        calls = [x for x in ev.value.pending_tool_calls if x.id not in answered]
                        if calls:
                            c.post_results(run.id, [stepwise.Answer.ok(x.id, approve(x.arguments)) for x in calls])
                            answered.update(x.id for x in calls)
            final = direct.get_run(run.id)
            self.assertEqual(final.status, "completed")
            self.assertEqual(seqs, list(range(final.steps + 1)))
            self.assertGreaterEqual(proxy.cuts, final.steps)
            self.assertGreater(proxy.partial_ids, 0, "no event was cut after its id line")
            self.assertEqual(stream.connections, proxy.cuts + 1)
            # The same steps as an uncut stream gives.
            uncut = [e.value for e in direct.iter_events(run.id) if e.event == "step"]
            cut = [e.value for e in c.iter_events(run.id) if e.event == "step"]
            self.assertEqual(cut, uncut)

    def test_drive_through_cut_streams(self):
        with Proxy(URL, cut_after={"step", "run"}) as proxy:
            c = client(proxy.url)
            run = c.drive(c.create_run(EXTERNAL, input="Buy a desk lamp").id, tools={"approve_purchase": approve}, timeout=30)
            self.assertEqual((run.status, run.answer), ("completed", "Approved: I bought the desk lamp for 42.50 EUR."))
            self.assertGreater(proxy.cuts, 0)
            results = [r for r in proxy.records if r.method == "POST" and r.path.endswith("/results")]
            self.assertEqual(len(results), 1, "one answer for one pause")

    def test_a_message_cut_from_its_step_comes_once(self):
        c = client()
        run = c.create_run(CHAT, input="Hello", wait=10)
        c.say(run.id, "How much is the desk lamp?", timeout=30)
        c.say(run.id, "Thanks", timeout=30)
        with Proxy(URL, cut_after={"message"}) as proxy:
            events = [(e.event, e.seq) for e in client(proxy.url).iter_events(run.id) if e.event in ("message", "step")]
            self.assertEqual(proxy.cuts, 2)
        messages = [seq for name, seq in events if name == "message"]
        steps = [seq for name, seq in events if name == "step"]
        self.assertEqual(len(messages), 2)
        self.assertEqual(len(set(messages)), 2)
        self.assertEqual(steps, sorted(set(steps)))
        for seq in messages:
            i = events.index(("message", seq))
            self.assertEqual(events[i + 1], ("step", seq))


@needs_server
class TestLostAnswers(unittest.TestCase):
    """The server acted and its answer was lost: the retry, with the same
    Idempotency-Key, gets the first outcome instead of acting again."""

    def test_create_run(self):
        with Proxy(URL, drop={("POST", "/v1/runs"): 1}) as proxy:
            run = client(proxy.url).create_run(CHAT, input="Hello")
            posts = [r for r in proxy.records if r.method == "POST"]
            self.assertEqual(len(posts), 2)
            self.assertTrue(posts[0].dropped)
            self.assertEqual(posts[0].header("Idempotency-Key"), posts[1].header("Idempotency-Key"))
            self.assertEqual(json.loads(posts[0].response_body)["id"], run.id)
            self.assertEqual(posts[1].status, 201)

    def test_send_message(self):
        c = client()
        run = c.create_run(CHAT, input="Hello", wait=10)
        with Proxy(URL, drop={("POST", "/v1/runs/[^/]+/messages"): 1}) as proxy:
            client(proxy.url).say(run.id, "How much is the desk lamp?", timeout=30)
            posts = [r for r in proxy.records if r.method == "POST"]
            self.assertEqual(len(posts), 2)
            self.assertEqual(posts[0].header("Idempotency-Key"), posts[1].header("Idempotency-Key"))
        users = [m.content for m in c.iter_messages(run.id) if m.role == "user"]
        self.assertEqual(users, ["Hello", "How much is the desk lamp?"])
        self.assertEqual(c.get_run(run.id).answer, CHAT_ANSWERS[1])

    def test_post_results(self):
        c = client()
        run = c.wait(c.create_run(EXTERNAL, input="Buy a desk lamp").id, timeout=30)
        with Proxy(URL, drop={("POST", "/v1/runs/[^/]+/results"): 1}) as proxy:
            client(proxy.url).post_results(run.id, [stepwise.Answer.ok(run.pending_tool_calls[0].id, "approved")])
            posts = [r for r in proxy.records if r.method == "POST"]
            self.assertEqual(len(posts), 2)
            self.assertEqual(posts[1].status, 200)  # not already_answered: the first outcome
        self.assertEqual(c.wait(run.id, timeout=30).status, "completed")

    def test_an_unsafe_call_is_not_repeated(self):
        c = client()
        run = c.wait(c.create_run(EXTERNAL, input="Buy a desk lamp").id, timeout=30)
        with Proxy(URL, drop={("POST", "/v1/runs/[^/]+/fork"): 1}) as proxy:
            with self.assertRaises(stepwise.ConnectionFailed):
                client(proxy.url).fork(run.id, run.steps)
            self.assertEqual(len([r for r in proxy.records if r.method == "POST"]), 1)
        self.assertEqual(len(c.list_runs(parent=run.id).runs), 1)  # the fork the server made, once


@needs_server
class TestErrorsInTheServersPlace(unittest.TestCase):
    def test_transient_errors_are_retried(self):
        with Proxy(URL, fail={("GET", "/v1/agents"): [503, 502, 429], ("POST", "/v1/runs"): [504]}) as proxy:
            c = client(proxy.url)
            self.assertIn(CHAT, c.list_agents())
            run = c.create_run(CHAT, input="Hello", wait=10)
            self.assertEqual(run.answer, CHAT_ANSWERS[0])
            self.assertEqual([r.status for r in proxy.records if r.path == "/v1/agents"], [503, 502, 429, 200])

    def test_a_stream_refused_for_a_while(self):
        c = client()
        run = c.create_run(CHAT, input="Hello", wait=10)
        with Proxy(URL, fail={("GET", "/v1/runs/[^/]+/events"): [429, 503]}) as proxy:
            seqs = [e.seq for e in client(proxy.url).iter_events(run.id) if e.event == "step"]
            self.assertEqual(seqs, list(range(run.steps + 1)))
            self.assertEqual([r.status for r in proxy.records], [429, 503, 200])


if __name__ == "__main__":
    unittest.main()
