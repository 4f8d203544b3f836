package core

import (
	"errors"
	"strings"
	"testing"
)

const searchSchema = `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Name = "tester"
	cfg.SystemPrompt = "You are a test agent."
	cfg.Tools = []Tool{
		{Name: "search", Description: "search the web", Parameters: []byte(searchSchema)},
		{Name: "approve", Description: "ask a human", Mode: ModeExternal, Parameters: []byte(`{"type":"object","properties":{"what":{"type":"string"}}}`)},
	}
	return cfg
}

func mustStart(t *testing.T, cfg Config, input string) State {
	t.Helper()
	st, err := Start(cfg, Request{Input: input})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return st
}

func mustStep(t *testing.T, cfg Config, st State) Action {
	t.Helper()
	a, err := Step(cfg, st)
	if err != nil {
		t.Fatalf("Step: %v", err)
	}
	return a
}

func mustResume(t *testing.T, cfg Config, st State, r Result) State {
	t.Helper()
	next, err := Resume(cfg, st, r)
	if err != nil {
		t.Fatalf("Resume(%s): %v", DescribeResult(r), err)
	}
	return next
}

func call(id, name, args string) NativeCall { return NativeCall{ID: id, Name: name, Arguments: args} }

func TestNativeRunWithInternalAndExternalCalls(t *testing.T) {
	cfg := testConfig()
	st := mustStart(t, cfg, "find x")
	a := mustStep(t, cfg, st)
	m, ok := a.(RequestModelCall)
	if !ok || m.Role != Primary || len(m.Messages) != 2 || len(m.Tools) != 2 {
		t.Fatalf("first action = %s", DescribeAction(a))
	}
	st = mustResume(t, cfg, a.Next(), ModelReply{Calls: []NativeCall{
		call("c1", "approve", `{"what":"spend"}`),
		call("c2", "search", `{ "query" : "x" }`),
		call("c3", "search", `{"query":"y"}`),
	}})
	// The model's order: the external call comes first, so the run pauses
	// for it before the internal calls run.
	a = mustStep(t, cfg, st)
	ext, ok := a.(RequestExternalToolCalls)
	if !ok || len(ext.Calls) != 1 || ext.Calls[0].ID != "c1" {
		t.Fatalf("want external c1 first, got %s", DescribeAction(a))
	}
	st = mustResume(t, cfg, a.Next(), ToolResults{Results: []ToolResult{{CallID: "c1", Output: "approved"}}})
	a = mustStep(t, cfg, st)
	tc, ok := a.(RequestToolCalls)
	if !ok || len(tc.Calls) != 2 || tc.Calls[0].ID != "c2" || tc.Calls[1].ID != "c3" {
		t.Fatalf("want internal calls c2,c3 after the pause, got %s", DescribeAction(a))
	}
	if string(tc.Calls[0].Args) != `{"query":"x"}` {
		t.Fatalf("args not canonical: %s", tc.Calls[0].Args)
	}
	// Results in any order.
	st = mustResume(t, cfg, a.Next(), ToolResults{Results: []ToolResult{
		{CallID: "c3", Output: "y-result", Sources: []string{"https://y"}},
		{CallID: "c2", Error: "boom"},
	}})
	a = mustStep(t, cfg, st)
	m = a.(RequestModelCall)
	tail := m.Messages[len(m.Messages)-3:]
	// The tool's error text reaches the model verbatim, nothing put in front.
	for i, want := range []string{"c1:approved", "c2:boom", "c3:y-result"} {
		got := tail[i].CallID + ":" + tail[i].Content
		if tail[i].Role != RoleTool || got != want {
			t.Errorf("tool message %d = %s, want %s", i, DescribeMessage(tail[i]), want)
		}
	}
	st = mustResume(t, cfg, a.Next(), ModelReply{Text: "x is 42"})
	a = mustStep(t, cfg, st)
	c, ok := a.(Complete)
	if !ok || c.Answer != "x is 42" || strings.Join(c.ToolsUsed, ",") != "approve,search" || strings.Join(c.Sources, ",") != "https://y" {
		t.Fatalf("end = %s", DescribeAction(a))
	}
}

func TestResumeRefusesMismatchedResults(t *testing.T) {
	cfg := testConfig()
	st := mustStart(t, cfg, "q")
	a := mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ModelReply{Calls: []NativeCall{call("a", "search", `{"query":"1"}`), call("b", "search", `{"query":"2"}`)}})
	pending := mustStep(t, cfg, st).Next()
	before, _ := EncodeState(pending)
	cases := []struct {
		name string
		res  Result
		want error
	}{
		{"wrong kind", ModelReply{Text: "hi"}, ErrWrongResult},
		{"unknown id", ToolResults{Results: []ToolResult{{CallID: "a"}, {CallID: "b"}, {CallID: "zz"}}}, ErrUnknownCall},
		{"duplicate id", ToolResults{Results: []ToolResult{{CallID: "a"}, {CallID: "a"}, {CallID: "b"}}}, ErrDuplicateResult},
		{"missing id", ToolResults{Results: []ToolResult{{CallID: "a", Output: "ok"}}}, ErrMissingResults},
		{"memory for tools", MemoryHits{}, ErrWrongResult},
	}
	for _, tc := range cases {
		got, err := Resume(cfg, pending, tc.res)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
		after, _ := EncodeState(got)
		if string(after) != string(before) {
			t.Errorf("%s: state changed on refusal", tc.name)
		}
	}
	if _, err := Resume(cfg, st, ToolResults{}); !errors.Is(err, ErrNothingPending) {
		t.Errorf("resume without pending: %v", err)
	}
}

func TestStepIsIdempotentOnPendingState(t *testing.T) {
	cfg := testConfig()
	st := mustStart(t, cfg, "q")
	a1 := mustStep(t, cfg, st)
	a2 := mustStep(t, cfg, a1.Next())
	b1, _ := EncodeState(a1.Next())
	b2, _ := EncodeState(a2.Next())
	if string(b1) != string(b2) || DescribeAction(a1) != DescribeAction(a2) {
		t.Fatalf("Step on a pending state changed it:\n%s\n%s", DescribeAction(a1), DescribeAction(a2))
	}
}

func TestInvalidCallCorrectionThenFail(t *testing.T) {
	cfg := testConfig()
	st := mustStart(t, cfg, "q")
	a := mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ModelReply{Calls: []NativeCall{call("a", "nope", `{}`)}})
	a = mustStep(t, cfg, st)
	m := a.(RequestModelCall)
	last := m.Messages[len(m.Messages)-1]
	if last.Role != RoleTool || last.CallID != "a" || !strings.Contains(last.Content, `unknown tool "nope"`) || !strings.Contains(last.Content, "search, approve") {
		t.Fatalf("correction = %s", DescribeMessage(last))
	}
	st = mustResume(t, cfg, a.Next(), ModelReply{Calls: []NativeCall{call("b", "search", `[1]`)}})
	a = mustStep(t, cfg, st)
	f, ok := a.(Fail)
	if !ok || f.Code != FailInvalidOutput || !strings.Contains(f.Reason, "must be a JSON object") {
		t.Fatalf("want invalid_output failure, got %s", DescribeAction(a))
	}
}

func TestEscalationToHelper(t *testing.T) {
	cfg := testConfig()
	cfg.Models.Helper = "big"
	st := mustStart(t, cfg, "q")
	a := mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ModelReply{Text: "Sorry, I'm stuck."})
	a = mustStep(t, cfg, st)
	m, ok := a.(RequestModelCall)
	if !ok || m.Role != Helper || !strings.Contains(m.Messages[1].Content, "stuck") {
		t.Fatalf("want helper call, got %s", DescribeAction(a))
	}
	st = mustResume(t, cfg, a.Next(), ModelReply{Text: "1. search for q"})
	a = mustStep(t, cfg, st)
	m = a.(RequestModelCall)
	if m.Role != Primary || !strings.Contains(m.Messages[len(m.Messages)-1].Content, "1. search for q") {
		t.Fatalf("primary not re-prompted with the plan: %s", DescribeAction(a))
	}
	// Out of escalations: a stuck reply is now the answer.
	st = mustResume(t, cfg, a.Next(), ModelReply{Text: "I'm stuck again"})
	if c, ok := mustStep(t, cfg, st).(Complete); !ok || c.Answer != "I'm stuck again" {
		t.Fatalf("want complete after escalations are used up")
	}
}

func TestLoopDetection(t *testing.T) {
	cfg := testConfig()
	st := mustStart(t, cfg, "q")
	for i := 0; i < 3; i++ {
		a := mustStep(t, cfg, st)
		if _, ok := a.(RequestModelCall); !ok {
			if f, ok := a.(Fail); ok && f.Code == FailLoop && i == 2 {
				return
			}
			t.Fatalf("turn %d: %s", i, DescribeAction(a))
		}
		st = mustResume(t, cfg, a.Next(), ModelReply{Calls: []NativeCall{call("", "search", `{"query":"same"}`)}})
		if st.Phase == PhaseFailed {
			if st.Failure.Code != FailLoop || i != 2 {
				t.Fatalf("failed at turn %d with %s", i, st.Failure.Code)
			}
			return
		}
		a = mustStep(t, cfg, st)
		st = mustResume(t, cfg, a.Next(), ToolResults{Results: []ToolResult{{CallID: a.(RequestToolCalls).Calls[0].ID, Output: "nothing"}}})
	}
	t.Fatal("three identical calls in a row did not fail the run")
}

func TestMaxStepsAndStateCap(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.MaxSteps = 3
	st := mustStart(t, cfg, "q")
	for i := 0; ; i++ {
		a := mustStep(t, cfg, st)
		if f, ok := a.(Fail); ok {
			if f.Code != FailMaxSteps || i != 3 {
				t.Fatalf("step %d: %s", i, DescribeAction(a))
			}
			break
		}
		switch a := a.(type) {
		case RequestModelCall:
			st = mustResume(t, cfg, a.Next(), ModelReply{Calls: []NativeCall{call("", "search", `{"query":"`+string(rune('a'+i))+`"}`)}})
		case RequestToolCalls:
			st = mustResume(t, cfg, a.Next(), ToolResults{Results: []ToolResult{{CallID: a.Calls[0].ID, Output: "r"}}})
		}
	}

	cfg = testConfig()
	cfg.Limits.MaxStateBytes = 500
	st = mustStart(t, cfg, "q")
	a := mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ModelReply{Text: strings.Repeat("x", 600)})
	if st.Phase != PhaseFailed || st.Failure.Code != FailStateTooLarge {
		t.Fatalf("state cap not enforced: %s", DescribeState(st))
	}
}

func TestStopOnErrorSkipsRestOfTurn(t *testing.T) {
	cfg := testConfig()
	cfg.Policy.StopOnError = true
	st := mustStart(t, cfg, "q")
	a := mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ModelReply{Calls: []NativeCall{
		call("a", "search", `{"query":"1"}`), call("b", "search", `{"query":"2"}`), call("c", "approve", `{}`),
	}})
	a = mustStep(t, cfg, st)
	// The shell stopped after a failed: b is left out, which stop-on-error allows.
	st = mustResume(t, cfg, a.Next(), ToolResults{Results: []ToolResult{{CallID: "a", Error: "down"}}})
	m, ok := mustStep(t, cfg, st).(RequestModelCall)
	if !ok {
		t.Fatalf("external call should be skipped too")
	}
	msgs := m.Messages[len(m.Messages)-3:]
	if !strings.Contains(msgs[1].Content, "not run: call a failed") || !strings.Contains(msgs[2].Content, "not run") {
		t.Fatalf("skipped calls not reported: %s / %s", DescribeMessage(msgs[1]), DescribeMessage(msgs[2]))
	}
}

func TestResumeTwiceFromOneStateKeepsBothBranches(t *testing.T) {
	cfg := testConfig()
	st := mustStart(t, cfg, "q")
	pending := mustStep(t, cfg, st).Next()
	left := mustResume(t, cfg, pending, ModelReply{Text: "left"})
	right := mustResume(t, cfg, pending, ModelReply{Text: "right"})
	if left.Answer != "left" || left.Messages[len(left.Messages)-1].Content != "left" {
		t.Fatalf("first branch overwritten: %s", DescribeMessage(left.Messages[len(left.Messages)-1]))
	}
	if right.Messages[len(right.Messages)-1].Content != "right" {
		t.Fatalf("second branch wrong")
	}
}

func TestCancelledEndsRun(t *testing.T) {
	cfg := testConfig()
	st := mustStart(t, cfg, "q")
	st = mustResume(t, cfg, mustStep(t, cfg, st).Next(), Cancelled{Reason: "user"})
	if f, ok := mustStep(t, cfg, st).(Fail); !ok || f.Code != FailCancelled {
		t.Fatalf("want cancelled")
	}
}

func TestInvalidUTF8FromToolsIsCleaned(t *testing.T) {
	cfg := testConfig()
	st := mustStart(t, cfg, "q")
	st = mustResume(t, cfg, mustStep(t, cfg, st).Next(), ModelReply{Text: "bad \xff", Calls: []NativeCall{call("a", "search", "{\"query\":\"\xfe\"}")}})
	a := mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ToolResults{Results: []ToolResult{{CallID: "a", Output: "bin\x00\xc3\x28"}}})
	b, err := EncodeState(st)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeState(b)
	if err != nil {
		t.Fatalf("state with tool bytes does not decode: %v", err)
	}
	if got := back.Messages[len(back.Messages)-1].Content; got != "bin\x00\uFFFD(" {
		t.Fatalf("output = %q", got)
	}
}

// TestToolErrorReachesTheModelVerbatim: a failed call's error text is what
// the model reads, exactly; the state still records the failure (a tool
// message whose call failed, in the turn's results until the turn ends);
// Policy.ErrorPrefix puts a prefix in front when an agent wants one.
func TestToolErrorReachesTheModelVerbatim(t *testing.T) {
	for _, tc := range []struct {
		format Format
		prefix string
		want   string
	}{
		{FormatNative, "", "card declined"},
		{FormatNative, "error: ", "error: card declined"},
		{FormatXML, "", "<tool_result name=\"search\" tag=\"c1\" error=\"true\">\ncard declined\n</tool_result>"},
		{FormatXML, "ERROR ", "<tool_result name=\"search\" tag=\"c1\" error=\"true\">\nERROR card declined\n</tool_result>"},
		{FormatFenced, "", "```tool_result search c1 error\ncard declined\n```"},
	} {
		cfg := testConfig()
		cfg.Format, cfg.Policy.ErrorPrefix = tc.format, tc.prefix
		st := mustStart(t, cfg, "q")
		a := mustStep(t, cfg, st)
		reply := ModelReply{Calls: []NativeCall{{ID: "c1", Name: "search", Arguments: `{"query":"x"}`}}}
		switch tc.format {
		case FormatXML:
			reply = ModelReply{Text: `<tool name="search" tag="c1">{"query": "x"}</tool>`}
		case FormatFenced:
			reply = ModelReply{Text: RenderCall(FormatFenced, NativeCall{ID: "c1", Name: "search", Arguments: `{"query":"x"}`})}
		}
		st = mustResume(t, cfg, a.Next(), reply)
		a = mustStep(t, cfg, st)
		withErr := mustResume(t, cfg, a.Next(), ToolResults{Results: []ToolResult{{CallID: "c1", Error: "card declined"}}})
		last := withErr.Messages[len(withErr.Messages)-1]
		if last.Content != tc.want {
			t.Errorf("%s prefix %q: the model reads %q, want %q", tc.format, tc.prefix, last.Content, tc.want)
		}
		// The state records the failure: a native tool message is marked.
		if tc.format == FormatNative && (!last.IsError || last.Role != RoleTool) {
			t.Errorf("the tool message does not record the failure: %s", DescribeMessage(last))
		}
	}
}

// TestMemorySearchGlobal: memory_search with global: true searches every
// namespace (AllNamespaces); without, the agent's; a config whose own
// namespace is "*" is refused.
func TestMemorySearchGlobal(t *testing.T) {
	cfg := testConfig()
	cfg.Memory.Tools = true
	for _, tc := range []struct{ args, ns string }{{`{"query": "lamp", "global": true}`, AllNamespaces}, {`{"query": "lamp"}`, cfg.Name}} {
		st := mustStart(t, cfg, "q")
		a := mustStep(t, cfg, st)
		st = mustResume(t, cfg, a.Next(), ModelReply{Calls: []NativeCall{{ID: "m1", Name: ToolMemorySearch, Arguments: tc.args}}})
		got, ok := mustStep(t, cfg, st).(RequestMemorySearch)
		if !ok || got.Namespace != tc.ns || got.Query != "lamp" {
			t.Fatalf("%s: %#v", tc.args, got)
		}
	}
	cfg.Memory.Namespace = AllNamespaces
	if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("namespace *: %v", err)
	}
}

// TestToolsUsedListsWhatRan: tools_used lists exactly the tools whose calls
// ran, in every status: a run paused at an external call does not list the
// external tool until its result comes back, and cancelling the paused run
// lists only what ran.
func TestToolsUsedListsWhatRan(t *testing.T) {
	cfg := testConfig()
	cfg.Tools = append(cfg.Tools, Tool{Name: "weather", Mode: ModeExternal, Parameters: []byte(`{"type": "object"}`)})
	st := mustStart(t, cfg, "q")
	a := mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ModelReply{Calls: []NativeCall{
		{ID: "c1", Name: "search", Arguments: `{"query": "x"}`}, {ID: "c2", Name: "weather", Arguments: `{}`}}})
	if len(st.ToolsUsed) != 0 {
		t.Fatalf("accepted calls listed before they ran: %v", st.ToolsUsed)
	}
	a = mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ToolResults{Results: []ToolResult{{CallID: "c1", Output: "found"}}})
	paused := mustStep(t, cfg, st)
	if _, ok := paused.(RequestExternalToolCalls); !ok || strings.Join(paused.Next().ToolsUsed, ",") != "search" {
		t.Fatalf("paused at the external call: %T %v", paused, paused.Next().ToolsUsed)
	}
	cancelled := mustResume(t, cfg, paused.Next(), Cancelled{Reason: "stop"})
	if end, ok := mustStep(t, cfg, cancelled).(Fail); !ok || strings.Join(end.State.ToolsUsed, ",") != "search" {
		t.Fatalf("cancelled: %+v", end)
	}
	answered := mustResume(t, cfg, paused.Next(), ToolResults{Results: []ToolResult{{CallID: "c2", Output: "sunny"}}})
	if strings.Join(answered.ToolsUsed, ",") != "search,weather" {
		t.Fatalf("answered: %v", answered.ToolsUsed)
	}
}

// TestSourcesLeaveOutFailedTools: citing the tools used (no sources
// reported), a tool whose every call failed is left out: the edison
// design's "Sources:" names what the answer rests on.
func TestSourcesLeaveOutFailedTools(t *testing.T) {
	cfg := testConfig()
	cfg.Tools = append(cfg.Tools, Tool{Name: "fetch", Parameters: []byte(`{"type": "object"}`)})
	cfg.Policy.Citations = CiteBoth
	st := mustStart(t, cfg, "q")
	a := mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ModelReply{Calls: []NativeCall{
		{ID: "c1", Name: "search", Arguments: `{"query": "x"}`}, {ID: "c2", Name: "fetch", Arguments: `{}`}}})
	a = mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ToolResults{Results: []ToolResult{{CallID: "c1", Output: "found"}, {CallID: "c2", Error: "timeout"}}})
	a = mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ModelReply{Text: "the answer"})
	end, ok := mustStep(t, cfg, st).(Complete)
	if !ok || end.Answer != "the answer\n\n[source:search]\n\nSources: search" || strings.Join(end.ToolsUsed, ",") != "search,fetch" {
		t.Fatalf("%+v", end)
	}
}

// TestParseMetaRecordedWithTheStep: the turn a reply makes records what its
// parser noticed: the format auto chose, and where each call sat in the
// reply's text.
func TestParseMetaRecordedWithTheStep(t *testing.T) {
	reply := "Let me look.\n<tool name=\"search\" tag=\"a1\">{\"query\": \"x\"}</tool> and <tool name=\"search\" tag=\"a2\">{\"query\": \"y\"}</tool>"
	for _, f := range []Format{FormatAuto, FormatXML} {
		cfg := testConfig()
		cfg.Format = f
		st := mustStart(t, cfg, "q")
		st = mustResume(t, cfg, mustStep(t, cfg, st).Next(), ModelReply{Text: reply})
		m := st.Turn.Parse
		if m == nil || len(m.Spans) != 2 {
			t.Fatalf("%s: %+v", f, m)
		}
		for i, sp := range m.Spans {
			if got := reply[sp.Start:sp.End]; got != st.Turn.Calls[i].Raw || !strings.HasPrefix(got, "<tool") {
				t.Errorf("%s: span %d is %q, the call's raw %q", f, i, got, st.Turn.Calls[i].Raw)
			}
		}
		if want := map[Format]Format{FormatAuto: FormatXML, FormatXML: ""}[f]; m.Format != want {
			t.Errorf("%s: chose %q, want %q", f, m.Format, want)
		}
		b, err := EncodeState(st)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeState(b)
		if err != nil || back.Turn.Parse == nil || len(back.Turn.Parse.Spans) != 2 || back.Turn.Parse.Format != m.Format {
			t.Fatalf("%s: round trip %+v %v", f, back.Turn, err)
		}
	}
	// Native calls sit in no text: nothing to record.
	cfg := testConfig()
	st := mustStart(t, cfg, "q")
	st = mustResume(t, cfg, mustStep(t, cfg, st).Next(), ModelReply{Calls: []NativeCall{{ID: "c1", Name: "search", Arguments: `{"query": "x"}`}}})
	if st.Turn.Parse != nil {
		t.Fatalf("native: %+v", st.Turn.Parse)
	}
}
