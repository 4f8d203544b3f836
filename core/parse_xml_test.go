package core

import "testing"

func TestParseXML(t *testing.T) {
	runParseCases(t, FormatXML, nil, []parseCase{
		{name: "issue example", in: `<tool name="search" tag="a1">{"query": "x"}</tool>`,
			calls: []NativeCall{{ID: "a1", Name: "search", Arguments: `{"query":"x"}`}}},
		{name: "text around is the message", in: "Let me look that up.\n<tool name=\"search\">{\"query\": \"x\"}</tool>\nBack soon.",
			text:  "Let me look that up.\n\nBack soon.",
			calls: []NativeCall{{Name: "search", Arguments: `{"query":"x"}`}}},
		{name: "several blocks keep their order", in: `<tool name="b">{"n": 2}</tool> then <tool tag='t2' name='a'>{"n": 1}</tool>`,
			text:  "then",
			calls: []NativeCall{{Name: "b", Arguments: `{"n":2}`}, {ID: "t2", Name: "a", Arguments: `{"n":1}`}}},
		{name: "attributes in any order, spaces around =", in: `<tool  tag = "z9"   name = "search" >{}</tool>`,
			calls: []NativeCall{{ID: "z9", Name: "search", Arguments: `{}`}}},
		{name: "unicode", in: "Voilà 東京:\n<tool name=\"search\" tag=\"é1\">{\"query\": \"café 東京 🎉\"}</tool>",
			text:  "Voilà 東京:",
			calls: []NativeCall{{ID: "é1", Name: "search", Arguments: `{"query":"café 東京 🎉"}`}}},
		{name: "closing tag and braces inside JSON strings", in: `<tool name="run">{"code": "f() { return \"</tool>\" }", "n": {"deep": [1, {"x": "}"}]}}</tool>after`,
			text:  "after",
			calls: []NativeCall{{Name: "run", Arguments: `{"code":"f() { return \"</tool>\" }","n":{"deep":[1,{"x":"}"}]}}`}}},
		{name: "multi-line JSON body", in: "<tool name=\"s\">\n{\n  \"q\": \"x\",\n  \"n\": 1.50\n}\n</tool>",
			calls: []NativeCall{{Name: "s", Arguments: `{"q":"x","n":1.50}`}}},
		{name: "empty body is no arguments", in: `<tool name="now"></tool>`, calls: []NativeCall{{Name: "now", Arguments: `{}`}}},
		{name: "blank body is no arguments", in: "<tool name=\"now\">\n  \n</tool>", calls: []NativeCall{{Name: "now", Arguments: `{}`}}},
		{name: "self-closing tag", in: `<tool name="now" />`, calls: []NativeCall{{Name: "now", Arguments: `{}`}}},
		{name: "escaped attribute", in: `<tool name="a&amp;b">{}</tool>`, calls: []NativeCall{{Name: "a&b", Arguments: `{}`}}},
		{name: "no block is a final answer", in: "  The answer is 42.  ", text: "The answer is 42."},
		{name: "other tags are text", in: "<tools> and <tool_result name=\"x\">1</tool_result>", text: "<tools> and <tool_result name=\"x\">1</tool_result>"},

		{name: "unterminated block", in: "Searching.\n<tool name=\"search\">{\"query\": \"x\"}", err: "is not closed: the reply ended before </tool>", line: 2, col: 1},
		{name: "truncated inside the JSON", in: `<tool name="search">{"query": "cut of`, err: `the arguments of <tool name="search"> ends before the JSON is complete`},
		{name: "truncated inside the tag", in: `ok <tool name="sea`, err: "the <tool> tag opened here is not closed", line: 1, col: 4},
		{name: "truncated after <tool", in: `ok <tool`, err: "is not closed"},
		{name: "missing name", in: `<tool tag="a1">{}</tool>`, err: "needs the tool's name"},
		{name: "bare <tool>", in: `use <tool>{}</tool>`, err: "needs the tool's name", line: 1, col: 5},
		{name: "unquoted attribute", in: `<tool name=search>{}</tool>`, err: "must be in quotes", line: 1, col: 12},
		{name: "attribute without value", in: `<tool name>{}</tool>`, err: "needs a quoted value"},
		{name: "unknown attribute", in: `<tool name="s" id="1">{}</tool>`, err: `unknown attribute "id"`},
		{name: "duplicate attribute", in: `<tool name="s" name="t">{}</tool>`, err: "appears twice"},
		{name: "body not an object", in: `<tool name="s">query: x</tool>`, err: "must be a JSON object", line: 1, col: 16},
		{name: "array body", in: `<tool name="s">[1]</tool>`, err: "must be a JSON object"},
		{name: "invalid JSON located", in: "Hi\n<tool name=\"s\">{\"a\": tru}</tool>", err: "is not valid JSON", line: 2, col: 25},
		{name: "trailing comma", in: `<tool name="s">{"a": 1,}</tool>`, err: "is not valid JSON"},
		{name: "text after the JSON", in: `<tool name="s">{"a": 1} please</tool>`, err: `expected </tool> after the JSON arguments of <tool name="s">, found "please</tool>"`},
		{name: "second block broken", in: `<tool name="a">{}</tool><tool name="b">{`, err: "ends before the JSON is complete"},
	})
}

func TestRenderXMLCall(t *testing.T) {
	got := RenderCall(FormatXML, NativeCall{ID: "a1", Name: "search", Arguments: "{\"query\": \"x\"}"})
	if want := `<tool name="search" tag="a1">{"query":"x"}</tool>`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if got := RenderCall(FormatXML, NativeCall{Name: `a"b`}); got != `<tool name="a&quot;b">{}</tool>` {
		t.Fatalf("got %s", got)
	}
}
