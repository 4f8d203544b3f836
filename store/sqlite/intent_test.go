package sqlite

import (
	"context"
	"errors"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

func TestIntents(t *testing.T) {
	s := openTest(t)
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
	if err := s.Checkpoint(ctx, leaseOf(t, s, "r"), store.Checkpoint{Seq: 1, Action: core.RequestToolCalls{Calls: calls, State: st}}); err != nil {
		t.Fatal(err)
	}
	// a completed, b in flight, c never started.
	for _, c := range calls[:2] {
		if err := s.RecordIntent(ctx, leaseOf(t, s, "r"), 1, c); err != nil {
			t.Fatal(err)
		}
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
	if err := s.RecordOutcome(ctx, leaseOf(t, s, "r"), 1, out); err != nil {
		t.Fatal(err)
	}
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

	// Reopen, as after a crash, and classify.
	s2, err := Open(s.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, err := s2.Intents(ctx, "r", 1)
	if err != nil {
		t.Fatal(err)
	}
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
}
