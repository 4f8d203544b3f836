package core

import "testing"

func TestParseFenced(t *testing.T) {
	runParseCases(t, FormatFenced, nil, []parseCase{
		{name: "issue example", in: "```tool\n{\"tool\": \"search\", \"parameters\": {\"query\": \"x\"}}\n```",
			calls: []NativeCall{{Name: "search", Arguments: `{"query":"x"}`}}},
		{name: "text around is the message", in: "Let me check.\n\n```tool\n{\"tool\": \"search\", \"parameters\": {\"query\": \"x\"}, \"tag\": \"a1\"}\n```\n\nOne moment.",
			text:  "Let me check.\n\n\nOne moment.",
			calls: []NativeCall{{ID: "a1", Name: "search", Arguments: `{"query":"x"}`}}},
		{name: "several blocks keep their order", in: "```tool\n{\"tool\": \"b\"}\n```\nand\n```tool\n{\"tool\": \"a\", \"parameters\": {\"n\": 1}}\n```\n",
			text:  "and",
			calls: []NativeCall{{Name: "b", Arguments: `{}`}, {Name: "a", Arguments: `{"n":1}`}}},
		{name: "pretty-printed, indented, CRLF", in: "  ```tool\r\n{\r\n  \"tool\": \"s\",\r\n  \"parameters\": {\"n\": -1e3}\r\n}\r\n  ```\r\n",
			calls: []NativeCall{{Name: "s", Arguments: `{"n":-1e3}`}}},
		{name: "unicode and braces and fences inside strings", in: "Voilà\n```tool\n{\"tool\": \"run\", \"parameters\": {\"code\": \"```\\n} {\", \"q\": \"東京 🎉\"}}\n```",
			text:  "Voilà",
			calls: []NativeCall{{Name: "run", Arguments: `{"code":"` + "```" + `\n} {","q":"東京 🎉"}`}}},
		{name: "longer fence", in: "````tool\n{\"tool\": \"s\"}\n````", calls: []NativeCall{{Name: "s", Arguments: `{}`}}},
		{name: "info string with more words", in: "```tool json\n{\"tool\": \"s\"}\n```", calls: []NativeCall{{Name: "s", Arguments: `{}`}}},
		{name: "other fences are text", in: "Run:\n```python\nprint('```tool')\n```\ndone", text: "Run:\n```python\nprint('```tool')\n```\ndone"},
		{name: "tool line inside another fence is text", in: "````markdown\n```tool\n{\"tool\": \"s\"}\n```\n````", text: "````markdown\n```tool\n{\"tool\": \"s\"}\n```\n````"},
		{name: "unclosed other fence is text", in: "```python\nprint(1)", text: "```python\nprint(1)"},
		{name: "inline backticks are text", in: "use ```tool``` blocks", text: "use ```tool``` blocks"},
		{name: "no block is a final answer", in: "It is 42.", text: "It is 42."},

		{name: "unterminated block", in: "Checking.\n```tool\n{\"tool\": \"search\", \"parameters\": {\"query\": \"x\"}}\n", err: "the ```tool block opened here is not closed", line: 2, col: 1},
		{name: "truncated reply", in: "```tool\n{\"tool\": \"search\", \"parameters\": {\"query\": \"x", err: "is not closed"},
		{name: "truncated JSON in a closed block", in: "```tool\n{\"tool\": \"search\", \"parameters\": {\n```", err: "ends before the JSON is complete", line: 2, col: 1},
		{name: "empty block", in: "```tool\n\n```", err: "this ```tool block is empty", line: 1, col: 1},
		{name: "not an object", in: "```tool\nsearch(query=\"x\")\n```", err: "must hold one JSON object", line: 2, col: 1},
		{name: "two objects", in: "```tool\n{\"tool\": \"a\"}\n{\"tool\": \"b\"}\n```", err: "holds exactly one call", line: 3, col: 1},
		{name: "wrong arguments key", in: "```tool\n{\"tool\": \"s\", \"args\": {}}\n```", err: `unknown key "args"; write the call as {"tool": "search", "parameters": {"query": "x"}}`, line: 2, col: 15},
		{name: "missing tool", in: "```tool\n{\"parameters\": {}}\n```", err: `"tool" (the tool's name) is missing`},
		{name: "invalid JSON", in: "```tool\n{\"tool\": 's'}\n```", err: "is not valid JSON", line: 2, col: 10},
	})
}

func TestRenderFencedCall(t *testing.T) {
	got := RenderCall(FormatFenced, NativeCall{ID: "a1", Name: "search", Arguments: `{"query": "x"}`})
	if want := "```tool\n{\"tool\": \"search\", \"parameters\": {\"query\":\"x\"}, \"tag\": \"a1\"}\n```"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
