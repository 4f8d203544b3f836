package storetest

import (
	"context"
	"testing"

	"github.com/stepwise-agent/stepwise/store"
)

// testStallAttempts: a stall records its count in a row (given, or one
// more than stored); running with the count keeps it, interrupted keeps
// it, running with 0 resets it, and a checkpoint that changes the status
// (progress) resets it.
func testStallAttempts(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	attempts := func() int {
		t.Helper()
		ri, err := s.Run(ctx, "r")
		must(t, err)
		return ri.StallAttempts
	}
	l, g := create(t, s, "r", nil)
	must(t, s.Checkpoint(ctx, l, g.next()))
	if n := attempts(); n != 0 {
		t.Fatalf("a new run has %d stall attempts", n)
	}
	steps := []struct {
		ch   store.StatusChange
		want int
	}{
		{store.StatusChange{Status: store.StatusStalled, Reason: "outage"}, 1},
		{store.StatusChange{Status: store.StatusStalled, Reason: "outage"}, 2},
		{store.StatusChange{Status: store.StatusRunning, StallAttempts: 2}, 2},
		{store.StatusChange{Status: store.StatusStalled, Reason: "outage", StallAttempts: 7}, 7},
		{store.StatusChange{Status: store.StatusInterrupted, Reason: "SIGINT"}, 7},
		{store.StatusChange{Status: store.StatusRunning}, 0},
		{store.StatusChange{Status: store.StatusStalled, Reason: "outage"}, 1},
	}
	for i, st := range steps {
		must(t, s.SetStatus(ctx, l, st.ch))
		if n := attempts(); n != st.want {
			t.Fatalf("step %d (%s, %d): %d stall attempts, want %d", i, st.ch.Status, st.ch.StallAttempts, n, st.want)
		}
	}
	// The stall left the run stalled: a checkpoint sets it running, and
	// with it the count back to 0.
	must(t, s.Checkpoint(ctx, l, g.next()))
	if ri, err := s.Run(ctx, "r"); err != nil || ri.Status != store.StatusRunning || ri.StallAttempts != 0 {
		t.Fatalf("after a checkpoint: %s, %d stall attempts (%v)", ri.Status, ri.StallAttempts, err)
	}
	runs, err := s.ListRuns(ctx, store.Filter{})
	must(t, err)
	if len(runs) != 1 || runs[0].StallAttempts != 0 {
		t.Fatalf("listed: %+v", runs)
	}
}
