package core

import "testing"

func TestParseJSON(t *testing.T) {
	runParseCases(t, FormatJSON, nil, []parseCase{
		{name: "issue example", in: `{"message": "Let me search.", "tools": [{"tool": "search", "args": {"query": "x"}, "tag": "a1"}]}`,
			text:  "Let me search.",
			calls: []NativeCall{{ID: "a1", Name: "search", Arguments: `{"query":"x"}`}}},
		{name: "several calls keep their order", in: `{"tools": [{"tool": "b", "args": {"n": 2}}, {"tool": "a", "args": {"n": 1}, "tag": "x"}]}`,
			calls: []NativeCall{{Name: "b", Arguments: `{"n":2}`}, {ID: "x", Name: "a", Arguments: `{"n":1}`}}},
		{name: "surrounding space and pretty printing", in: "\n  {\n  \"message\": \"hi\",\n  \"tools\": [\n    {\"tool\": \"s\", \"args\": {}}\n  ]\n}\n\n",
			text: "hi", calls: []NativeCall{{Name: "s", Arguments: `{}`}}},
		{name: "json fence", in: "```json\n{\"message\": \"m\", \"tools\": [{\"tool\": \"s\"}]}\n```",
			text: "m", calls: []NativeCall{{Name: "s", Arguments: `{}`}}},
		{name: "bare fence", in: "```\n{\"message\": \"m\"}\n```", text: "m"},
		{name: "no tools is a final answer", in: `{"message": "It is 42."}`, text: "It is 42."},
		{name: "empty tools is a final answer", in: `{"message": "It is 42.", "tools": []}`, text: "It is 42."},
		{name: "null tools and args", in: `{"message": null, "tools": [{"tool": "s", "args": null, "tag": null}]}`,
			calls: []NativeCall{{Name: "s", Arguments: `{}`}}},
		{name: "unicode and nested braces in strings", in: `{"message": "東京 🎉", "tools": [{"tool": "run", "args": {"code": "{\"a\": [1, \"]\"]}", "k": {"é": [{}]}}}]}`,
			text: "東京 🎉", calls: []NativeCall{{Name: "run", Arguments: `{"code":"{\"a\": [1, \"]\"]}","k":{"é":[{}]}}`}}},
		{name: "plain text is a final answer", in: "The answer is 42.", text: "The answer is 42."},
		{name: "braces in prose are text", in: "{curly} braces are fine", text: "{curly} braces are fine"},
		{name: "other fences are text", in: "```python\nprint(1)\n```", text: "```python\nprint(1)\n```"},

		{name: "truncated envelope", in: `{"message": "Searching", "tools": [{"tool": "search", "args": {"query": "x`, err: "the JSON envelope ends before the JSON is complete", line: 1, col: 1},
		{name: "truncated fence", in: "```json\n{\"message\": \"m\", \"tools\": [", err: "ends before the JSON is complete", line: 2, col: 1},
		{name: "lone brace", in: "{", err: "ends before the JSON is complete"},
		{name: "malformed", in: `{"message": "m", "tools": [}`, err: "is not valid JSON", line: 1, col: 28},
		{name: "unknown envelope key", in: `{"message": "m", "answer": 42}`, err: `unknown key "answer" in the envelope`, line: 1, col: 18},
		{name: "unknown call key", in: `{"tools": [{"tool": "s", "parameters": {}}]}`, err: `tools[0]: unknown key "parameters"`, line: 1, col: 26},
		{name: "missing tool", in: `{"tools": [{"args": {}}]}`, err: `tools[0]: "tool" (the tool's name) is missing`},
		{name: "tool not a string", in: `{"tools": [{"tool": 3}]}`, err: `"tool" must be the tool's name as a non-empty string, found a number`},
		{name: "empty tool name", in: `{"tools": [{"tool": ""}]}`, err: `non-empty string`},
		{name: "args not an object", in: `{"tools": [{"tool": "s", "args": "q=x"}]}`, err: `"args" must be a JSON object of arguments, found a string`, line: 1, col: 34},
		{name: "tag not a string", in: `{"tools": [{"tool": "s", "tag": 1}]}`, err: `"tag" must be a string`},
		{name: "entry not an object", in: `{"tools": ["search"]}`, err: "tools[0] must be an object"},
		{name: "second entry located", in: "{\"tools\": [\n {\"tool\": \"a\"},\n {\"tool\": \"b\", \"x\": 1}\n]}", err: `tools[1]: unknown key "x"`, line: 3, col: 16},
		{name: "tools not an array", in: `{"tools": {"tool": "s"}}`, err: `"tools" must be an array`},
		{name: "message not a string", in: `{"message": ["a"]}`, err: `"message" must be a string, found an array`},
		{name: "duplicate key", in: `{"message": "a", "message": "b"}`, err: `the key "message" appears twice`},
		{name: "text after the envelope", in: `{"message": "a"} and more`, err: "unexpected text after the JSON envelope", line: 1, col: 18},
		{name: "two envelopes", in: `{"message": "a"}{"message": "b"}`, err: "unexpected text after the JSON envelope"},
	})
}

func TestRenderJSONCall(t *testing.T) {
	got := RenderCall(FormatJSON, NativeCall{ID: "a1", Name: "search", Arguments: `{"query": "<x>"}`})
	if want := `{"tools": [{"tool": "search", "args": {"query":"<x>"}, "tag": "a1"}]}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
