package core

import (
	"errors"
	"testing"
)

func TestParseAuto(t *testing.T) {
	runParseCases(t, FormatAuto, helperTools, []parseCase{
		{name: "xml", in: `Looking. <tool name="search" tag="a1">{"query": "x"}</tool>`, text: "Looking.",
			calls: []NativeCall{{ID: "a1", Name: "search", Arguments: `{"query":"x"}`}}},
		{name: "helpers", in: "<helpers>\nfind_user(\"Sarah\")\n</helpers>", calls: []NativeCall{hcall("find_user", `{"name":"Sarah"}`)}},
		{name: "fenced", in: "```tool\n{\"tool\": \"search\", \"parameters\": {\"query\": \"x\"}}\n```", calls: []NativeCall{hcall("search", `{"query":"x"}`)}},
		{name: "json envelope", in: `{"message": "m", "tools": [{"tool": "search", "args": {"query": "x"}}]}`, text: "m",
			calls: []NativeCall{hcall("search", `{"query":"x"}`)}},
		{name: "fenced json envelope", in: "```json\n{\"tools\": [{\"tool\": \"now\"}]}\n```", calls: []NativeCall{hcall("now", `{}`)}},
		{name: "json envelope without calls gives its message", in: `{"message": "It is 42.", "tools": []}`, text: "It is 42."},
		{name: "strict", in: ` {"tool": "search", "args": {"query": "x"}} `, calls: []NativeCall{hcall("search", `{"query":"x"}`)}},
		{name: "plain text", in: "It is 42.", text: "It is 42."},
		{name: "a JSON object that is not a call is text", in: `{"answer": 42}`, text: `{"answer": 42}`},
		{name: "markers that are not calls are text", in: "Use <tools> or a ```tool block.", text: "Use <tools> or a ```tool block."},
		{name: "xml before helpers", in: "<helpers>now()</helpers>\n<tool name=\"search\">{}</tool>", text: "<helpers>now()</helpers>",
			calls: []NativeCall{hcall("search", `{}`)}},
		{name: "a later format wins over an earlier error", in: "The <tool> tag is XML.\n<helpers>now()</helpers>", text: "The <tool> tag is XML.",
			calls: []NativeCall{hcall("now", `{}`)}},
		{name: "the first error when nothing reads", in: "<tool name=\"search\">{\"query\": \"x\"}", err: "xml format, line 1 column 1: the <tool> block opened here is not closed"},
		{name: "truncated helpers", in: "<helpers>\nfind_user(name=\"Sa", err: "helpers format"},
		{name: "truncated fenced", in: "```tool\n{\"tool\": \"s\"}", err: "fenced format"},
		{name: "truncated envelope", in: `{"message": "m", "tools": [{"tool": "s"`, err: "json format"},
		{name: "truncated strict", in: `{"tool": "search", "args": {"q`, err: "strict format"},
	})
}

func TestParseAutoNativeWins(t *testing.T) {
	r := ModelReply{Text: `<tool name="search">{}</tool>`, Calls: []NativeCall{{ID: "c1", Name: "now", Arguments: `{}`}}}
	got, err := Parse(FormatAuto, r, nil)
	if err != nil || len(got.Calls) != 1 || got.Calls[0] != r.Calls[0] || got.Text != r.Text {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestParseUnknownFormat(t *testing.T) {
	_, err := Parse("yaml", ModelReply{Text: "x"}, nil)
	if !errors.Is(err, ErrParse) {
		t.Fatalf("got %v", err)
	}
}
