package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// testIntentsReopened: intents of a step of three calls (one completed,
// one in flight, one never started) read back, from another store as after
// a crash, in the order recorded, classified; Intents of an unknown step
// or run is ErrNotFound; an intent retracted and recorded again comes
// last.
func testIntentsReopened(t *testing.T, h Harness) {
	s := open(t, h, nil)
	ctx := context.Background()
	st := newRun(t, s, "r")
	calls := []core.ToolCall{
		{ID: "a", Name: "fetch", Args: []byte(`{"url":"x"}`)},
		{ID: "b", Name: "write", Args: []byte(`{"path":"y"}`)},
		{ID: "c", Name: "exec", Args: []byte(`{}`)},
	}
	if err := s.RecordIntent(ctx, leaseOf(t, s, "r"), 1, calls[0]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("intent for a step not stored yet: %v", err)
	}
	must(t, s.Checkpoint(ctx, leaseOf(t, s, "r"), store.Checkpoint{Seq: 1, Action: core.RequestToolCalls{Calls: calls, State: st}}))
	// a completed, b in flight, c never started.
	for _, c := range calls[:2] {
		must(t, s.RecordIntent(ctx, leaseOf(t, s, "r"), 1, c))
	}
	if err := s.RecordIntent(ctx, leaseOf(t, s, "r"), 1, calls[0]); err != nil {
		t.Errorf("recording the same intent again: %v", err)
	}
	changed := calls[0]
	changed.Args = []byte(`{"url":"z"}`)
	if err := s.RecordIntent(ctx, leaseOf(t, s, "r"), 1, changed); !errors.Is(err, store.ErrConflict) {
		t.Errorf("same call id, other args: %v", err)
	}
	out := core.ToolResult{CallID: "a", Output: "page", Sources: []string{"x"}}
	must(t, s.RecordOutcome(ctx, leaseOf(t, s, "r"), 1, out))
	if err := s.RecordOutcome(ctx, leaseOf(t, s, "r"), 1, out); err != nil {
		t.Errorf("same outcome again: %v", err)
	}
	if err := s.RecordOutcome(ctx, leaseOf(t, s, "r"), 1, core.ToolResult{CallID: "a", Error: "no"}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("other outcome: %v", err)
	}
	if err := s.RecordOutcome(ctx, leaseOf(t, s, "r"), 1, core.ToolResult{CallID: "c", Output: "?"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("outcome without intent: %v", err)
	}
	if err := s.RecordIntent(ctx, leaseOf(t, s, "r"), 1, core.ToolCall{Name: "x"}); err == nil {
		t.Error("intent without call id accepted")
	}

	// Another store, as after a crash, classifies them.
	s2 := reopen(t, h, s, nil)
	got, err := s2.Intents(ctx, "r", 1)
	must(t, err)
	state := map[string]store.IntentState{}
	for _, in := range got {
		state[in.CallID] = in.State
	}
	if len(got) != 2 || got[0].CallID != "a" || got[1].CallID != "b" {
		t.Fatalf("intents in recorded order: %+v", got)
	}
	if state["a"] != store.IntentCompleted || state["b"] != store.IntentStarted {
		t.Fatalf("classification: %v", state)
	}
	if _, ok := state["c"]; ok {
		t.Fatal("c never started")
	}
	a := got[0]
	if a.Tool != "fetch" || string(a.Args) != `{"url":"x"}` || a.Result == nil || a.Result.Output != "page" || a.Result.Sources[0] != "x" ||
		a.Completed.IsZero() || a.Started.IsZero() {
		t.Fatalf("completed intent: %+v", a)
	}
	if got[1].Result != nil || !got[1].Completed.IsZero() {
		t.Fatalf("started intent: %+v", got[1])
	}
	if none, err := s2.Intents(ctx, "r", 0); err != nil || len(none) != 0 {
		t.Fatalf("step 0: %v, %v", none, err)
	}
	if _, err := s2.Intents(ctx, "r", 9); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown step: %v", err)
	}
	if _, err := s2.Intents(ctx, "nope", 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown run: %v", err)
	}
	// Retraction: only an intent without an outcome.
	if err := s.RetractIntent(ctx, leaseOf(t, s, "r"), 1, "a"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("retract a completed intent: %v", err)
	}
	must(t, s.RetractIntent(ctx, leaseOf(t, s, "r"), 1, "b"))
	if err := s.RetractIntent(ctx, leaseOf(t, s, "r"), 1, "b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("retract twice: %v", err)
	}
	// Recorded again after the retraction, it comes last.
	must(t, s.RecordIntent(ctx, leaseOf(t, s, "r"), 1, calls[1]))
	must(t, s.RecordIntent(ctx, leaseOf(t, s, "r"), 1, calls[2]))
	if got, _ := s.Intents(ctx, "r", 1); len(got) != 3 || got[0].CallID != "a" || got[1].CallID != "b" || got[2].CallID != "c" {
		t.Fatalf("after retraction and again: %+v", got)
	}
}

// testFreeText: text some databases cannot hold as text (NUL, invalid
// UTF-8) comes back as it was given, in a run's input, answer and reason,
// in intents' call ids and tools, and in memory.
func testFreeText(t *testing.T, h Harness) {
	s := open(t, h, nil)
	ctx := context.Background()
	odd := "nul \x00 and \xff\xfe bytes"
	l, err := s.CreateRun(ctx, store.NewRun{ID: "r", Agent: "x", Input: odd, Initial: initial("r"), Owner: "a/1/x", LeaseTTL: 3600e9})
	must(t, err)
	g := newSynth("r", nil)
	must(t, s.Checkpoint(ctx, l, g.next()))
	must(t, s.RecordIntent(ctx, l, 1, core.ToolCall{ID: odd, Name: odd, Args: []byte{0}}))
	must(t, s.SetStatus(ctx, l, store.StatusChange{Status: store.StatusInterrupted, Reason: odd}))
	info, err := s.Run(ctx, "r")
	if err != nil || info.Input != odd || info.Reason != odd {
		t.Fatalf("run: %q %q %v", info.Input, info.Reason, err)
	}
	in, err := s.Intents(ctx, "r", 1)
	if err != nil || len(in) != 1 || in[0].CallID != odd || in[0].Tool != odd {
		t.Fatalf("intents: %+v %v", in, err)
	}
	st := g.next().Action.Next()
	st.Answer = "an answer with a NUL \x00 in it"
	must(t, s.Checkpoint(ctx, l, store.Checkpoint{Seq: 2, Action: core.Complete{Answer: st.Answer, State: st}}))
	if info, _ := s.Run(ctx, "r"); info.Answer != st.Answer || info.Status != store.StatusCompleted {
		t.Fatalf("answer %q, status %s", info.Answer, info.Status)
	}
	if _, err := s.MemoryCreate(ctx, "ns", []core.Entity{{Name: odd, Type: odd, Observations: []string{odd, "nul \x00 and"}}}, nil); err != nil {
		t.Fatal(err)
	}
	tr, err := s.MemoryTraverse(ctx, "ns", odd, "", 1)
	if err != nil || len(tr.Entities) != 1 || tr.Entities[0].Type != odd || len(tr.Entities[0].Observations) != 2 || tr.Entities[0].Observations[0] != odd {
		t.Fatalf("memory: %+v %v", tr, err)
	}
	if hits, err := s.MemorySearch(ctx, "ns", "bytes", 5); err != nil || len(hits) != 1 || hits[0].Entity.Name != odd {
		t.Fatalf("search: %+v %v", hits, err)
	}
}
