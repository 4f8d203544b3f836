package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/store"
)

// TestListRunsCursor: runs created at the same moment are ordered by id,
// byte by byte (as SQLite orders them, whatever the database's collation),
// and the cursor selects exactly the runs after it.
func TestListRunsCursor(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	s := openWith(t, &Options{Now: clock.now})
	ctx := context.Background()
	ids := []string{"b", "B", "a", "_x", "é", "Z", "a0", "a-"}
	for _, id := range ids {
		newRun(t, s, id) // the clock does not move: one creation time
	}
	clock.add(1)
	newRun(t, s, "later")
	all, err := s.ListRuns(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range all {
		got = append(got, r.ID)
	}
	// "later" first (newest), then byte order: B Z _x a a- a0 b é.
	if want := "later,B,Z,_x,a,a-,a0,b,é"; strings.Join(got, ",") != want {
		t.Fatalf("order %s, want %s", strings.Join(got, ","), want)
	}
	for i := range all {
		page, err := s.ListRuns(ctx, store.Filter{Before: store.CursorOf(all[i]), Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		for j, r := range page {
			if r.ID != got[i+1+j] {
				t.Fatalf("after %s: %s at %d, want %s", got[i], r.ID, j, got[i+1+j])
			}
		}
		if want := min(3, len(all)-i-1); len(page) != want {
			t.Fatalf("after %s: %d runs, want %d", got[i], len(page), want)
		}
	}
}

func TestCheckpointCancelled(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	st := newRun(t, s, "r1")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cp, _ := turnStep(st.Messages, 1, 10)
	if err := s.Checkpoint(ctx, leaseOf(t, s, "r1"), cp); !errors.Is(err, context.Canceled) {
		t.Fatalf("checkpoint under a cancelled context: %v", err)
	}
	if info, err := s.Run(context.Background(), "r1"); err != nil || info.LastSeq != 0 {
		t.Fatalf("after a cancelled checkpoint: %+v, %v", info, err)
	}
}

// The common checkpoint runs on the run's remembered tail. When another
// writer (here a second store on the same schema, as another process would
// be) appended in between, that checkpoint fails whole, and the next one
// reads the truth back.
func TestCheckpointAfterAnotherWriter(t *testing.T) {
	t.Parallel()
	a := openTest(t)
	b := reopen(t, a, nil)
	ctx := context.Background()
	log := newRun(t, a, "r").Messages
	var cp1, cp2, cp3 store.Checkpoint
	cp1, log = turnStep(log, 1, 10)
	if err := a.Checkpoint(ctx, leaseOf(t, a, "r"), cp1); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.cache.Tail("r"); !ok {
		t.Fatal("a does not remember the run's tail")
	}
	cp2, log = turnStep(log, 2, 10)
	if err := b.Checkpoint(ctx, leaseOf(t, b, "r"), cp2); err != nil {
		t.Fatal(err)
	}
	// a's own step 2, with other messages: its tail says step 1 is the
	// last, and b took the run over, so a's lease no longer fences.
	mine, _ := turnStep(cp1.Action.Next().Messages, 2, 99)
	if err := a.Checkpoint(ctx, leaseOf(t, a, "r"), mine); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a appended over b's step 2, or failed otherwise: %v", err)
	}
	if _, ok := a.cache.Tail("r"); ok {
		t.Fatal("a still trusts its stale tail")
	}
	// a takes the run back: its step 2 is now out of order.
	forgetLease(a, "r")
	if err := a.Checkpoint(ctx, leaseOf(t, a, "r"), mine); !errors.Is(err, store.ErrSeq) {
		t.Fatalf("a's step 2 again: %v, want store.ErrSeq", err)
	}
	cp3, log = turnStep(log, 3, 10)
	if err := a.Checkpoint(ctx, leaseOf(t, a, "r"), cp3); err != nil {
		t.Fatalf("a's step 3 after b's step 2: %v", err)
	}
	rec, err := b.LoadLatest(ctx, "r")
	if err != nil || rec.Seq != 3 || len(rec.State.Messages) != len(log) || rec.State.Messages[len(log)-2].Content != cp2.Action.Next().Messages[len(log)-2].Content {
		t.Fatalf("latest: step %d, %d messages (want 3, %d): %v", rec.Seq, len(rec.State.Messages), len(log), err)
	}
}
