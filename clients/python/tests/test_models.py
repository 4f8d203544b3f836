"""The dataclasses, the errors and the SSE parser, offline."""

import unittest

import stepwise
from stepwise.errors import error_from
from stepwise.events import SSEParser


class TestModels(unittest.TestCase):
    def test_run_is_read_leniently(self):
        run = stepwise.Run.from_json({
            "id": "r1", "agent": "shopper", "status": "awaiting_tool_results", "steps": 4, "turns": 1,
            "holder": None, "failure": None, "a_field_of_a_newer_server": {"x": 1},
            "pending_tool_calls": [{"id": "c1", "name": "approve_purchase", "arguments": {"item": "lamp"}, "raw": "", "new": 2}],
            "in_doubt_calls": [{"id": "c0", "name": "charge", "arguments": {}, "raw": "", "step": 3, "started": "2026-01-01T00:00:00Z"}],
            "counters": {"steps": 4, "requests": 4, "model_calls": 2, "corrections": 0, "escalations": 0},
            "usage": {"prompt_tokens": 300, "completion_tokens": 40},
        })
        self.assertTrue(run.paused)
        self.assertFalse(run.ended)
        self.assertIsNone(run.holder)
        self.assertEqual(run.pending_tool_calls[0], stepwise.ToolCall("c1", "approve_purchase", {"item": "lamp"}, ""))
        self.assertEqual(run.in_doubt_calls[0].step, 3)
        self.assertEqual(run.counters.model_calls, 2)
        self.assertEqual(run.usage.completion_tokens, 40)
        self.assertEqual(run.raw_json["a_field_of_a_newer_server"], {"x": 1})
        self.assertEqual(run.answer, "")  # absent: the default

    def test_wrong_shapes_read_as_defaults(self):
        run = stepwise.Run.from_json({"id": "r", "pending_tool_calls": None, "holder": "?", "counters": 7})
        self.assertEqual(run.pending_tool_calls, [])
        self.assertIsNone(run.holder)
        self.assertIsNone(run.counters)
        self.assertEqual(stepwise.Run.from_json(None).id, "")

    def test_step_and_events(self):
        data = {"seq": 2, "status": "running", "turn": 1,
                "action": {"kind": "tools", "describe": "tools ...", "calls": [{"id": "c", "name": "read_file", "arguments": {"path": "p"}, "raw": ""}]},
                "result": {"kind": "reply", "describe": "reply", "data": {"text": "hi"}},
                "messages": [{"role": "assistant", "content": "hi", "calls": [{"id": "c", "name": "read_file", "arguments": {}, "raw": ""}]}],
                "counters": {"steps": 2}, "usage": {}}
        ev = stepwise.Event.parse("step", "2", data)
        self.assertIsInstance(ev.value, stepwise.Step)
        self.assertEqual(ev.seq, 2)
        self.assertEqual(ev.value.action.calls[0].name, "read_file")
        self.assertEqual(ev.value.result.data, {"text": "hi"})
        self.assertEqual(ev.value.messages[0].calls[0].id, "c")
        self.assertEqual(ev.value.counters.steps, 2)
        self.assertIsInstance(stepwise.Event.parse("run", "", {"id": "r"}).value, stepwise.Run)
        self.assertEqual(stepwise.Event.parse("message", "", {"seq": 7, "content": "hi"}).value, stepwise.MessageEvent(7, "hi"))
        delta = stepwise.Event.parse("delta", "3.1", {"seq": 3, "n": 1, "part": "text", "text": "He"})
        self.assertEqual((delta.value.seq, delta.value.n, delta.value.text), (3, 1, "He"))
        odd = stepwise.Event.parse("something_new", "", {"k": 1})
        self.assertEqual(odd.value, {"k": 1})
        self.assertIsNone(stepwise.Event.parse("end", "", {}).seq)

    def test_chat_messages(self):
        m = stepwise.Message.from_json({"index": 2, "role": "assistant", "content": None,
                                        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
        self.assertEqual(m.index, 2)
        self.assertEqual(m.tool_calls[0].function.name, "f")
        self.assertEqual(m.to_json(), {"role": "assistant", "content": None,
                                       "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
        self.assertEqual(stepwise.ChatMessage("user", "hi").to_json(), {"role": "user", "content": "hi"})
        page = stepwise.MessageList.from_json({"messages": [{"index": 0, "role": "user", "content": "hi"}]})
        self.assertIsNone(page.next_from)

    def test_answers(self):
        self.assertEqual(stepwise.Answer.ok("c", {"a": 1}).to_json(), {"tool_call_id": "c", "result": {"a": 1}})
        self.assertEqual(stepwise.Answer.ok("c", None).to_json(), {"tool_call_id": "c", "result": None})
        self.assertEqual(stepwise.Answer.fail("c", "no").to_json(), {"tool_call_id": "c", "error": "no"})
        self.assertEqual(stepwise.Answer.skipped("c").to_json(), {"tool_call_id": "c", "not_run": True})
        self.assertEqual(stepwise.Answer("c").to_json(), {"tool_call_id": "c", "result": None})


class TestErrors(unittest.TestCase):
    def test_each_code_has_its_class(self):
        for code, cls in stepwise.CODES.items():
            e = error_from(400, ('{"error": {"code": "%s", "message": "m"}}' % code).encode())
            self.assertIs(type(e), cls, code)
            self.assertEqual((e.code, e.message, e.status), (code, "m", 400))
            self.assertIsInstance(e, stepwise.StepwiseError)

    def test_families(self):
        self.assertTrue(issubclass(stepwise.EndedError, stepwise.ConflictError))
        self.assertTrue(issubclass(stepwise.BusyError, stepwise.ConflictError))
        self.assertTrue(issubclass(stepwise.UnknownAgentError, stepwise.NotFoundError))
        self.assertTrue(issubclass(stepwise.InvalidResultsError, stepwise.BadRequestError))
        self.assertTrue(issubclass(stepwise.TooManyStreamsError, stepwise.UnavailableError))

    def test_unknown_code_and_no_json(self):
        e = error_from(409, b'{"error": {"code": "a_newer_code", "message": "m"}}')
        self.assertIs(type(e), stepwise.ConflictError)
        self.assertEqual(e.code, "a_newer_code")
        e = error_from(502, b"<html>Bad Gateway</html>", 3.0)
        self.assertIs(type(e), stepwise.UnavailableError)
        self.assertEqual((e.code, e.retry_after), ("http_502", 3.0))
        self.assertIs(type(error_from(418, b"")), stepwise.StepwiseError)


class TestSSEParser(unittest.TestCase):
    def feed(self, text):
        p, out = SSEParser(), []
        for line in text.split("\n"):
            got = p.line(line)
            if got:
                out.append(got)
        return out

    def test_events(self):
        text = ": ping\n\nid: 1\nevent: step\ndata: {\"a\":\ndata:  1}\n\nevent: run\ndata:{}\n\nid: 9\n\ndata: x\n\n"
        self.assertEqual(self.feed(text), [("step", "1", '{"a":\n 1}'), ("run", None, "{}"), ("message", None, "x")])

    def test_a_cut_event_is_not_dispatched(self):
        p = SSEParser()
        for line in ["id: 4", "event: step", "data: {\"seq\""]:
            self.assertIsNone(p.line(line))
        p.reset()
        self.assertIsNone(p.line(""))


if __name__ == "__main__":
    unittest.main()
