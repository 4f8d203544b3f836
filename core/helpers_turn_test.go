package core

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// programConfig is an agent of the helpers format with an internal lookup,
// an external approval and an internal note.
func programConfig() Config {
	cfg := DefaultConfig()
	cfg.Name, cfg.Format = "p", FormatHelpers
	cfg.Tools = []Tool{
		{Name: "lookup", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{}},"required":["q"]}`)},
		{Name: "approve", Mode: ModeExternal, Parameters: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`)},
		{Name: "note", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","minLength":1}},"required":["text"]}`)},
	}
	return cfg
}

// replyWith starts a run and resumes it with the reply text.
func replyWith(t *testing.T, cfg Config, text string) State {
	t.Helper()
	st := mustStart(t, cfg, "go")
	return mustResume(t, cfg, mustStep(t, cfg, st).Next(), ModelReply{Text: text})
}

// answerAll answers every call of the pending request with outputs, in order.
func answerAll(t *testing.T, cfg Config, st State, outputs ...string) (Action, State) {
	t.Helper()
	a := mustStep(t, cfg, st)
	calls := a.Next().PendingCalls()
	if len(calls) != len(outputs) {
		t.Fatalf("%s: %d calls pending, %d outputs", DescribeAction(a), len(calls), len(outputs))
	}
	res := make([]ToolResult, len(calls))
	for i, c := range calls {
		res[i] = ToolResult{CallID: c.ID, Output: outputs[i]}
		if e, ok := strings.CutPrefix(outputs[i], "ERROR "); ok {
			res[i] = ToolResult{CallID: c.ID, Error: e}
		}
	}
	return a, mustResume(t, cfg, a.Next(), ToolResults{Results: res})
}

func lastContent(st State) string { return st.Messages[len(st.Messages)-1].Content }

// The values a program computes: the rules of "The helpers format" (doc.go).
func TestProgramValues(t *testing.T) {
	cfg := programConfig()
	result := `{"id": 12345678901234567890, "price": 1.50, "tags": ["a", "b"], "ok": true, "none": null, "nested": {"k": [1, {"z": 2, "a": 1}]}}`
	for _, c := range []struct{ expr, want string }{
		{`r["id"]`, `12345678901234567890`},
		{`r["id"] + 1`, `12345678901234567891`},
		{`r["price"] + 1`, `2.5`},
		{`r["price"] + 0.25`, `1.75`},
		{`1 + r["price"] + 0.125`, `2.625`},
		{`r["id"] + -0.5`, `12345678901234567889.5`},
		{`0.1 + r["nested"]["k"][0] + 0.2`, `1.3`},
		{`r["tags"][-1] + r["tags"][0]`, `"ba"`},
		{`f"{r['price']}|{r['id']}|{r['ok']}|{r['none']}|{r['tags']}|{r['nested']['k'][1]}"`, `"1.50|12345678901234567890|True|None|[\"a\",\"b\"]|{\"a\":1,\"z\":2}"`},
		{`f"{r}"`, `"` + strings.ReplaceAll(result, `"`, `\"`) + `"`},
		{`r + "!"`, `"` + strings.ReplaceAll(result, `"`, `\"`) + `!"`},
		{`[r["id"], {"t": r["tags"]}]`, `[12345678901234567890,{"t":["a","b"]}]`},
		{`r["nested"]`, `{"k":[1,{"a":1,"z":2}]}`},
	} {
		st := replyWith(t, cfg, "<helpers>\nr = lookup(q=1)\nv = "+c.expr+"\nlookup(q=v)\n</helpers>")
		_, st = answerAll(t, cfg, st, result)
		next := mustStep(t, cfg, st)
		calls := next.Next().PendingCalls()
		if len(calls) != 1 || string(calls[0].Args) != `{"q":`+c.want+`}` {
			t.Errorf("%s: %s, want q=%s", c.expr, DescribeAction(next), c.want)
		}
	}
}

// A statement that cannot be computed stops the block; its error names the
// statement and its line, and nothing after it runs.
func TestProgramRuntimeErrors(t *testing.T) {
	cfg := programConfig()
	for _, c := range []struct{ output, expr, want string }{
		{`plain text`, `r["id"]`, `r is not JSON, so it has no keys or items: the result of lookup (call_1_1) is the text "plain text"`},
		{`{"a": 1}`, `r["b"]`, `the key "b" is not in r (its keys: "a")`},
		{`[1, 2]`, `r[2]`, `the index 2 is out of range: r has 2 item(s)`},
		{`[1, 2]`, `r["a"]`, `r is a list: its indexes are integers, not a str`},
		{`{"a": 1}`, `r[0]`, `r is a dict: its keys are strings, not a number`},
		{`{"a": "x"}`, `r["a"][0]`, `r["a"] is a str: subscripts read dicts and lists`},
		{`{"a": 1}`, `r["a"] + "s"`, `+ joins two strings or adds two numbers; here it has a number and a str`},
		{`{"a": 1e2000}`, `r["a"] + 1`, `the number 1e2000 is too large or too small to add`},
		{"{\"a\": 1}\n[truncated: showing 9 of 40000 bytes]", `r["a"]`, `(it was cut to the tool's max_result_bytes)`},
		{`ERROR no such user`, `r["a"]`, `r holds no value: the call lookup (call_1_1) failed: no such user`},
		{`{"n": "12"}`, `approve(amount=r["n"])`, `invalid tool call: approve (call call_1_3): argument "amount": expected a number, found the string "12"`},
		{`{"q": 2}`, `lookup(**r, q=3)`, `lookup(...) got two values for the argument "q"`},
		{`[1]`, `lookup(**r)`, `** needs a dict, and r is a list`},
	} {
		stmt := "v = " + c.expr
		if strings.HasPrefix(c.expr, "approve(") {
			stmt = c.expr
		}
		st := replyWith(t, cfg, "<helpers>\nr = lookup(q=1)\nnote(text=\"before\")\n"+stmt+"\nnote(text=\"after\")\n</helpers>")
		_, st = answerAll(t, cfg, st, c.output, "noted")
		m, ok := mustStep(t, cfg, st).(RequestModelCall)
		got := lastContent(st)
		if !ok || !strings.Contains(got, "<helpers_error>\nError at line 4: "+stmt+"\n") || !strings.Contains(got, c.want) ||
			!strings.Contains(got, "The block stopped there: this statement and the ones after it did not run.") {
			t.Errorf("%s:\n%s\nwant %q", c.expr, got, c.want)
		}
		if strings.Count(got, "<helpers_result") != 2 || m.Messages == nil || st.Counters.Corrections != 0 {
			t.Errorf("%s: want the two results before the error and no correction:\n%s", c.expr, got)
		}
	}
}

// Errors that do not depend on a result are found before anything runs,
// all of them, as a correction.
func TestProgramStaticErrorsAreCorrections(t *testing.T) {
	cfg := programConfig()
	st := replyWith(t, cfg, "<helpers>\nn = \"x\"\nr = lookup(q=n)\nv = n[\"a\"]\napprove(amount=n)\nw = v + 1\nnope(q=r)\n</helpers>")
	got := lastContent(st)
	for _, want := range []string{
		"Your last reply could not be used:\n",
		`- line 4 (v = n["a"]): n is a str: subscripts read dicts and lists`,
		`- line 5: invalid tool call: approve (call call_1_2): argument "amount": expected a number, found the string "x"`,
		`- line 7: invalid tool call: unknown tool "nope"; the tools are: lookup, approve, note`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("correction lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "w = v + 1") || st.Phase != PhaseModel || st.Turn != nil || st.Counters.Corrections != 1 {
		t.Errorf("want one correction and no turn (v's error not repeated for w): %s\n%s", DescribeState(st), got)
	}
	st = replyWith(t, cfg, "<helpers>\nr = lookup(q=1); lookup(q=r); lookup(q=r); lookup(q=r)\n</helpers>")
	cfg.Limits.MaxCallsPerTurn = 3
	st = replyWith(t, cfg, "<helpers>\nr = lookup(q=1); lookup(q=r); lookup(q=r); lookup(q=r)\n</helpers>")
	if !strings.Contains(lastContent(st), "you made 4 tool calls in one reply; at most 3 are allowed per turn") {
		t.Errorf("max calls per turn: %s", lastContent(st))
	}
}

// With stop-on-error a failed call ends the turn: the statements after it
// do not run, and the model is told.
func TestProgramStopOnError(t *testing.T) {
	cfg := programConfig()
	cfg.Policy.StopOnError = true
	st := replyWith(t, cfg, "<helpers>\nr = lookup(q=1)\nnote(text=\"x\"); note(text=\"y\")\nlookup(q=r)\n</helpers>")
	a := mustStep(t, cfg, st)
	if DescribeAction(a) != `tools stop_on_error call_1_1 lookup {"q":1}; call_1_2 note {"text":"x"}; call_1_3 note {"text":"y"}` {
		t.Fatalf("first batch: %s", DescribeAction(a))
	}
	st = mustResume(t, cfg, a.Next(), ToolResults{Results: []ToolResult{{CallID: "call_1_1", Output: "1"}, {CallID: "call_1_2", Error: "down"}}})
	got := lastContent(st)
	if st.Phase != PhaseModel || !strings.Contains(got, "not run: call call_1_2 failed") ||
		!strings.Contains(got, "The block stopped at the call that failed (this agent stops a turn at the first error): the statements after it did not run.") {
		t.Fatalf("%s\n%s", DescribeState(st), got)
	}
}

// The loop policy sees a program's calls as it makes them.
func TestProgramCallsCountForTheLoopPolicy(t *testing.T) {
	cfg := programConfig()
	cfg.Limits.MaxRepeats = 2
	st := replyWith(t, cfg, "<helpers>\nr = lookup(q=1)\nlookup(q=r[\"q\"])\n</helpers>")
	_, st = answerAll(t, cfg, st, `{"q": 1}`)
	if st.Phase != PhaseFailed || st.Failure.Code != FailLoop {
		t.Fatalf("want a loop failure, got %s", DescribeState(st))
	}
}

// A program's state is its message and its calls so far: a state decoded
// without its messages (as a store keeps a step's head) is fine, and a turn
// whose program is not in an assistant message is refused as a bad state,
// leaving the state as it was.
func TestProgramStateLocatesItsMessage(t *testing.T) {
	cfg := programConfig()
	st := replyWith(t, cfg, "<helpers>\nr = lookup(q=1)\nlookup(q=r)\n</helpers>")
	pending := mustStep(t, cfg, st).Next()
	head := pending
	head.Messages = nil
	b, _ := EncodeState(head)
	if _, err := DecodeState(b); err != nil {
		t.Fatalf("a head without messages: %v", err)
	}
	bad := pending
	turn := *bad.Turn
	turn.Program = &Program{Message: 1, Step: 1} // the user's message
	bad.Turn = &turn
	res := ToolResults{Results: []ToolResult{{CallID: "call_1_1", Output: "x"}}}
	before, _ := EncodeState(bad)
	got, err := Resume(cfg, bad, res)
	after, _ := EncodeState(got)
	if !errors.Is(err, ErrBadState) || string(before) != string(after) {
		t.Fatalf("Resume: %v", err)
	}
	turn.Program = &Program{Message: -1}
	if _, err := Step(cfg, bad); !errors.Is(err, ErrBadState) {
		t.Fatalf("Step with a negative message index: %v", err)
	}
}

// A program in the auto format, and memory calls in a program, run like
// any call of a turn.
func TestProgramInAutoFormatWithMemory(t *testing.T) {
	cfg := programConfig()
	cfg.Format = FormatAuto
	cfg.Memory.Tools = true
	st := replyWith(t, cfg, "Let me see.\n<helpers>\nhits = memory_search(query=\"ada\")\nlookup(q=hits[0][\"entity\"][\"name\"])\n</helpers>")
	a := mustStep(t, cfg, st)
	if _, ok := a.(RequestMemorySearch); !ok {
		t.Fatalf("want a memory search, got %s", DescribeAction(a))
	}
	st = mustResume(t, cfg, a.Next(), MemoryHits{Hits: []MemoryHit{{Entity: Entity{Name: "Ada"}}}})
	if a = mustStep(t, cfg, st); DescribeAction(a) != `tools call_1_2 lookup {"q":"Ada"}` {
		t.Fatalf("got %s", DescribeAction(a))
	}
	st = mustResume(t, cfg, a.Next(), ToolResults{Results: []ToolResult{{CallID: "call_1_2", Output: "found"}}})
	if got := lastContent(st); !strings.HasPrefix(got, "Result of memory_search (call call_1_1):") || !strings.Contains(got, "Result of lookup (call call_1_2):\nfound") {
		t.Fatalf("results in the auto format:\n%s", got)
	}
}

// A program whose agent changed so that it no longer parses (a positional
// argument of a tool that lost its parameters) stops with a message.
func TestProgramAgentChangedMidBlock(t *testing.T) {
	cfg := programConfig()
	st := replyWith(t, cfg, "<helpers>\nr = lookup(1)\nlookup(q=r)\n</helpers>")
	a := mustStep(t, cfg, st)
	changed := programConfig()
	changed.Tools[0].Parameters = json.RawMessage(`{"type":"object"}`)
	st = mustResume(t, changed, a.Next(), ToolResults{Results: []ToolResult{{CallID: "call_1_1", Output: "x"}}})
	if got := lastContent(st); st.Phase != PhaseModel || !strings.Contains(got, "the block can no longer be read with the agent's tools: helpers format, line 2 column 12: lookup takes no positional arguments") {
		t.Fatalf("%s\n%s", DescribeState(st), got)
	}
}

// Resuming one paused program state twice (a fork) gives two independent
// branches: neither writes into the other's turn.
func TestProgramForksDoNotShareTheirTurns(t *testing.T) {
	cfg := programConfig()
	// Three batches before the pause: the turn's call list has grown by
	// appending, so it has room that two branches could both write into.
	st := replyWith(t, cfg, "<helpers>\nr = lookup(q=1)\ns = lookup(q=r)\na = approve(amount=s[\"n\"])\nnote(text=f\"{a}\")\n</helpers>")
	_, st = answerAll(t, cfg, st, `1`)
	_, st = answerAll(t, cfg, st, `{"n": 5}`)
	paused := mustStep(t, cfg, st).Next()
	_, one := answerAll(t, cfg, paused, "yes")
	_, two := answerAll(t, cfg, paused, "no")
	c1, c2 := mustStep(t, cfg, one).Next().PendingCalls(), mustStep(t, cfg, two).Next().PendingCalls()
	if len(c1) != 1 || len(c2) != 1 || string(c1[0].Args) != `{"text":"yes"}` || string(c2[0].Args) != `{"text":"no"}` {
		t.Fatalf("branches: %+v / %+v", c1, c2)
	}
	if p := paused.Turn; len(p.Calls) != 3 || p.Results[2].CallID != "" {
		t.Fatalf("the paused state changed: %+v", p)
	}
}
