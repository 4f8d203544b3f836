package core

import (
	"reflect"
	"testing"
)

// Every text format gives each call the text it was parsed from.
func TestParseRaw(t *testing.T) {
	for _, c := range []struct {
		f    Format
		in   string
		want []string
	}{
		{FormatXML, "Hi <tool name=\"s\" tag=\"a\">{\"q\": 1}</tool> and <tool name=\"now\"/> bye",
			[]string{"<tool name=\"s\" tag=\"a\">{\"q\": 1}</tool>", "<tool name=\"now\"/>"}},
		{FormatFenced, "Look:\n```tool\n{\"tool\": \"s\", \"parameters\": {\"q\": 1}}\n```\nthen\n```tool\n{\"tool\": \"now\"}\n```",
			[]string{"```tool\n{\"tool\": \"s\", \"parameters\": {\"q\": 1}}\n```", "```tool\n{\"tool\": \"now\"}\n```"}},
		{FormatJSON, `{"message": "m", "tools": [{"tool": "s", "args": {"q": 1}}, {"tag": "b", "tool": "now"}]}`,
			[]string{`{"tool": "s", "args": {"q": 1}}`, `{"tag": "b", "tool": "now"}`}},
		{FormatStrict, "  {\"tool\": \"s\", \"args\": {\"q\": 1}}\n", []string{`{"tool": "s", "args": {"q": 1}}`}},
		{FormatHelpers, "<helpers>\nu = s(q=1)  # first\nnow(); s(\n  q=2,\n)\n</helpers>", []string{"u = s(q=1)", "now()", "s(\n  q=2,\n)"}},
		{FormatAuto, "<helpers>s(q=1)</helpers>", []string{"s(q=1)"}},
	} {
		got, err := Parse(c.f, ModelReply{Text: c.in}, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.f, err)
		}
		if !reflect.DeepEqual(got.Raw, c.want) || len(got.Raw) != len(got.Calls) {
			t.Errorf("%s: raw %q, want %q (calls %v)", c.f, got.Raw, c.want, got.Calls)
		}
	}
	native, _ := Parse(FormatNative, ModelReply{Calls: []NativeCall{{ID: "a", Name: "s", Arguments: `{}`}}}, nil)
	if native.Raw != nil {
		t.Errorf("native calls have raw %q", native.Raw)
	}
}

// The raw text reaches the pending calls; a native call has none.
func TestPendingCallsCarryRaw(t *testing.T) {
	for _, c := range []struct {
		f     Format
		reply ModelReply
		want  string
	}{
		{FormatXML, ModelReply{Text: "<tool name=\"approve\" tag=\"x\">{\"what\": \"a\"}</tool>"}, "<tool name=\"approve\" tag=\"x\">{\"what\": \"a\"}</tool>"},
		{FormatHelpers, ModelReply{Text: "<helpers>\nok = approve(what=\"a\")\n</helpers>"}, "ok = approve(what=\"a\")"},
		{FormatNative, ModelReply{Calls: []NativeCall{{ID: "x", Name: "approve", Arguments: `{"what": "a"}`}}}, ""},
	} {
		cfg := testConfig()
		cfg.Format = c.f
		st := mustStart(t, cfg, "q")
		st = mustResume(t, cfg, mustStep(t, cfg, st).Next(), c.reply)
		a, ok := mustStep(t, cfg, st).(RequestExternalToolCalls)
		if !ok || len(a.Calls) != 1 || a.Calls[0].Raw != c.want {
			t.Errorf("%s: pending %+v, want raw %q", c.f, a, c.want)
		}
		if got := a.Next().Turn.Calls[0].Raw; got != c.want {
			t.Errorf("%s: the state's call has raw %q", c.f, got)
		}
	}
}
