package core

import "testing"

func TestParseStrict(t *testing.T) {
	runParseCases(t, FormatStrict, nil, []parseCase{
		{name: "issue example", in: `{"tool": "search", "args": {"query": "x"}}`,
			calls: []NativeCall{{Name: "search", Arguments: `{"query":"x"}`}}},
		{name: "surrounding space, keys in any order", in: "\n  {\"args\": {\"q\": \"東京 {}\"},\n \"tool\": \"s\"}  \n",
			calls: []NativeCall{{Name: "s", Arguments: `{"q":"東京 {}"}`}}},
		{name: "empty arguments", in: `{"tool": "now", "args": {}}`, calls: []NativeCall{{Name: "now", Arguments: `{}`}}},
		{name: "null arguments", in: `{"tool": "now", "args": null}`, calls: []NativeCall{{Name: "now", Arguments: `{}`}}},
		{name: "plain text is a final answer", in: "The answer is 42.", text: "The answer is 42."},
		{name: "a JSON array is a final answer", in: `[1, 2]`, text: `[1, 2]`},
		{name: "a JSON string is a final answer", in: `"done"`, text: `"done"`},
		{name: "braces in prose are a final answer", in: "{curly} is a word", text: "{curly} is a word"},
		{name: "text before the object is a final answer", in: `Sure: {"tool": "s", "args": {}}`, text: `Sure: {"tool": "s", "args": {}}`},

		{name: "a fenced call", in: "```json\n{\"tool\": \"s\", \"args\": {}}\n```", err: "without a ``` fence around it", line: 1, col: 1},
		{name: "a fenced text is a final answer", in: "```\nls -l\n```", text: "```\nls -l\n```"},
		{name: "extra key", in: `{"tool": "s", "args": {}, "tag": "a1"}`, err: `unknown key "tag"`, line: 1, col: 27},
		{name: "missing args", in: `{"tool": "s"}`, err: `"args" (the arguments) is missing`},
		{name: "missing tool", in: `{"args": {}}`, err: `"tool" (the tool's name) is missing`},
		{name: "some other object", in: `{"answer": 42}`, err: `unknown key "answer"`},
		{name: "wrong arguments key", in: `{"tool": "s", "parameters": {}}`, err: `unknown key "parameters"`},
		{name: "args not an object", in: `{"tool": "s", "args": [1]}`, err: `"args" must be a JSON object of arguments, found an array`},
		{name: "truncated", in: `{"tool": "search", "args": {"query": "x`, err: "ends before the JSON is complete", line: 1, col: 1},
		{name: "malformed", in: "{\"tool\": \"search\",\n \"args\": {query: 1}}", err: "is not valid JSON", line: 2, col: 11},
		{name: "text after the call", in: `{"tool": "s", "args": {}} Thanks!`, err: "unexpected text after the call object", line: 1, col: 27},
		{name: "two calls", in: "{\"tool\": \"a\", \"args\": {}}\n{\"tool\": \"b\", \"args\": {}}", err: "one call per reply", line: 2, col: 1},
	})
}

func TestRenderStrictCall(t *testing.T) {
	got := RenderCall(FormatStrict, NativeCall{ID: "dropped", Name: "search", Arguments: ""})
	if want := `{"tool": "search", "args": {}}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
