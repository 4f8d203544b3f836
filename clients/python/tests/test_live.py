"""The client against a real `stepwise serve` (STEPWISE_URL)."""

import asyncio
import unittest

import stepwise
from _support import CHAT, CHAT_ANSWERS, EXTERNAL, TOKEN, URL, approve, client, needs_server


@needs_server
class TestRuns(unittest.TestCase):
    def setUp(self):
        self.c = client()

    def test_server(self):
        self.assertEqual(self.c.health(), {"status": "ok"})
        agents = self.c.list_agents()
        self.assertIn(EXTERNAL, agents)
        self.assertIn(CHAT, agents)
        self.assertEqual(self.c.openapi()["info"]["title"], "stepwise")

    def test_drive_a_paused_run_to_its_end(self):
        seen = []

        def tool(args):
            seen.append(args)
            return approve(args)

        run = self.c.create_run(EXTERNAL, input="Buy a desk lamp", wait=10)
        self.assertEqual(run.status, stepwise.Status.AWAITING_TOOL_RESULTS)
        self.assertEqual([c.name for c in run.pending_tool_calls], ["approve_purchase"])
        run = self.c.drive(run.id, tools={"approve_purchase": tool}, timeout=30)
        self.assertEqual(run.status, stepwise.Status.COMPLETED, run)
        self.assertIn("desk lamp", run.answer)
        self.assertEqual(seen, [{"item": "desk lamp", "amount_eur": 42.5}])
        self.assertTrue(run.ended)
        self.assertIn("approve_purchase", run.tools_used)

        # The conversation, paged, is the whole conversation once.
        whole = self.c.messages(run.id)
        self.assertIsNone(whole.next_from)
        paged = list(self.c.iter_messages(run.id, page_size=2))
        self.assertEqual([m.index for m in paged], list(range(len(whole.messages))))
        self.assertEqual(paged, whole.messages)
        tool_msg = [m for m in paged if m.role == "tool" and m.name == "approve_purchase"]
        self.assertEqual(tool_msg[0].content, "approved (42.50 EUR)")

        # Steps, paged, and the step's model request.
        steps = list(self.c.iter_steps(run.id, page_size=2))
        self.assertEqual([s.seq for s in steps], list(range(run.steps + 1)))
        self.assertEqual(steps[-1].action.kind, "complete")
        self.assertEqual(self.c.step_request(run.id, 1).provider, "script")
        poll = self.c.poll_steps(run.id, after=run.steps - 1, wait=1)
        self.assertEqual(([s.seq for s in poll.steps], poll.run.id), ([run.steps], run.id))
        rep = self.c.replay(run.id)
        self.assertTrue(rep.identical)
        self.assertEqual(rep.steps, run.steps)

        # Listing.
        ids = [r.id for r in self.c.iter_runs(status="completed", page_size=1)]
        self.assertIn(run.id, ids)

    def test_a_failing_tool_is_an_error_the_model_reads(self):
        run = self.c.create_run(EXTERNAL, input="Buy a desk lamp")

        def refuse(args):
            raise PermissionError("no purchases today")

        run = self.c.drive(run.id, tools={"approve_purchase": refuse}, timeout=30)
        self.assertEqual(run.status, "completed")
        tool = [m for m in self.c.iter_messages(run.id) if m.role == "tool" and m.name == "approve_purchase"]
        self.assertIn("PermissionError: no purchases today", tool[0].content)

        run = self.c.drive(self.c.create_run(EXTERNAL, input="Buy a desk lamp").id, tools={}, timeout=30)
        tool = [m for m in self.c.iter_messages(run.id) if m.role == "tool" and m.name == "approve_purchase"]
        self.assertIn("no tool 'approve_purchase'", tool[0].content)

    def test_wait_returns_at_a_pause_and_post_results(self):
        run = self.c.create_run(EXTERNAL, input="Buy a desk lamp")
        run = self.c.wait(run.id, timeout=30)
        self.assertTrue(run.paused)
        call = run.pending_tool_calls[0]
        with self.assertRaises(stepwise.InvalidResultsError):
            self.c.post_results(run.id, [stepwise.Answer.ok("no_such_call", "x")])
        self.c.post_results(run.id, [stepwise.Answer.ok(call.id, "approved")], idempotency_key="k-" + run.id)
        # The same answer again with the same key: the first outcome, not already_answered.
        again = self.c.post_results(run.id, [stepwise.Answer.ok(call.id, "approved")], idempotency_key="k-" + run.id)
        self.assertEqual(again.id, run.id)
        with self.assertRaises(stepwise.AlreadyAnsweredError):
            self.c.post_results(run.id, [{"tool_call_id": call.id, "result": "approved"}])
        self.assertEqual(self.c.wait(run.id, timeout=30).status, "completed")

    def test_a_conversation(self):
        run = self.c.create_run(CHAT, input="Hello", wait=10)
        self.assertEqual(run.answer, CHAT_ANSWERS[0])
        run = self.c.say(run.id, "How much is the desk lamp?", timeout=30)
        self.assertEqual((run.status, run.answer, run.turns), ("completed", CHAT_ANSWERS[1], 2))
        run = self.c.say(run.id, "Thanks", timeout=30)
        self.assertEqual((run.answer, run.turns), (CHAT_ANSWERS[2], 3))
        users = [m.content for m in self.c.iter_messages(run.id) if m.role == "user"]
        self.assertEqual(users, ["Hello", "How much is the desk lamp?", "Thanks"])
        # A message event per message the run took, each before its step.
        events = list(self.c.iter_events(run.id))
        got = [(e.event, e.seq) for e in events if e.event in ("message", "step")]
        for i, (name, seq) in enumerate(got):
            if name == "message":
                self.assertEqual(got[i + 1], ("step", seq))
        self.assertEqual([e.value.content for e in events if e.event == "message"], users[1:])

    def test_start_from_a_history(self):
        history = [stepwise.ChatMessage("system", "Be brief."), stepwise.ChatMessage("user", "Hi"),
                   {"role": "assistant", "content": "Hello."}, stepwise.ChatMessage("user", "Prices?")]
        run = self.c.create_run(CHAT, messages=history, wait=10)
        self.assertEqual((run.status, run.answer, run.turns), ("completed", CHAT_ANSWERS[0], 2))
        with self.assertRaises(stepwise.InvalidHistoryError):
            self.c.create_run(CHAT, messages=[{"role": "assistant", "content": "I speak first"}])

    def test_fork_resume_cancel(self):
        run = self.c.wait(self.c.create_run(EXTERNAL, input="Buy a desk lamp").id, timeout=30)
        fork = self.c.fork(run.id, run.steps, result=[stepwise.Answer.fail(run.pending_tool_calls[0].id, "refused")])
        self.assertEqual(fork.parent.id, run.id)
        self.assertEqual(self.c.wait(fork.id, timeout=30).status, "completed")
        self.assertIn(fork.id, [r.id for r in self.c.list_runs(parent=run.id).runs])
        cancelled = self.c.cancel(run.id, reason="a test")
        self.assertEqual(cancelled.status, "cancelled")
        with self.assertRaises(stepwise.EndedError):
            self.c.send_message(run.id, "still there?")
        with self.assertRaises(stepwise.EndedError):
            self.c.cancel(run.id)
        self.assertEqual(self.c.resume(run.id).status, "cancelled")  # nothing to resume

    def test_errors(self):
        with self.assertRaises(stepwise.NotFoundError) as cm:
            self.c.get_run("r-no-such-run")
        self.assertEqual((cm.exception.status, cm.exception.code), (404, "not_found"))
        with self.assertRaises(stepwise.UnknownAgentError):
            self.c.create_run("no-such-agent", input="x")
        with self.assertRaises(stepwise.BadRequestError) as cm:
            self.c.create_run(CHAT, input="x", messages=[{"role": "user", "content": "y"}])
        self.assertEqual(cm.exception.code, "bad_request")
        run = self.c.create_run(CHAT, input="Hello", wait=10)
        with self.assertRaises(stepwise.BadRequestError):
            self.c.send_message(run.id, "")
        with self.assertRaises(stepwise.IdempotencyMismatchError):
            self.c.send_message(run.id, "one", idempotency_key="same-" + run.id)
            self.c.send_message(run.id, "two", idempotency_key="same-" + run.id)

    @unittest.skipUnless(TOKEN, "the server has no tokens")
    def test_unauthorized(self):
        with self.assertRaises(stepwise.UnauthorizedError):
            stepwise.Client(URL, "not-the-token-0123456789").list_agents()
        self.assertEqual(stepwise.Client(URL, "").health(), {"status": "ok"})  # /healthz needs none


@needs_server
class TestAsyncRuns(unittest.TestCase):
    def test_drive_and_say(self):
        async def approve_later(args):
            await asyncio.sleep(0.01)
            return approve(args)

        async def main():
            c = stepwise.AsyncClient(URL, TOKEN)
            run = await c.create_run(EXTERNAL, input="Buy a desk lamp")
            done = await c.drive(run.id, tools={"approve_purchase": approve_later}, timeout=30)
            chat = await c.create_run(CHAT, input="Hello", wait=10)
            said = await c.say(chat.id, "How much is the desk lamp?", timeout=30)
            seqs = [ev.seq async for ev in c.iter_events(chat.id) if ev.event == "step"]
            msgs = [m.content async for m in c.iter_messages(chat.id, page_size=1)]
            return done, said, seqs, msgs

        done, said, seqs, msgs = asyncio.run(main())
        self.assertEqual((done.status, done.answer), ("completed", "Approved: I bought the desk lamp for 42.50 EUR."))
        self.assertEqual(said.answer, CHAT_ANSWERS[1])
        self.assertEqual(seqs, list(range(said.steps + 1)))
        self.assertIn("How much is the desk lamp?", msgs)


if __name__ == "__main__":
    unittest.main()
