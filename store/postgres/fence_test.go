package postgres

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// TestFencedBatchedCheckpoint: once another store took the run over, the
// old holder's checkpoint that changes the status, on the tail its store
// remembers (the batched path: the fenced insert and the run's update in
// one batch), is refused and writes no row. (storetest's Fencing case
// takes the remembered tail with a checkpoint that keeps the status.)
func TestFencedBatchedCheckpoint(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	s := openWith(t, &Options{Now: clock.now})
	ctx := context.Background()
	log := []core.Message{{Role: core.RoleSystem, Content: "s"}, {Role: core.RoleUser, Content: "q"}}
	old, err := s.CreateRun(ctx, store.NewRun{ID: "r", Agent: "x", Initial: baseState("q", log), Owner: "a/1/x", LeaseTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var cp store.Checkpoint
	cp, log = turnStep(log, 1, 10)
	if err := s.Checkpoint(ctx, old, cp); err != nil {
		t.Fatal(err)
	}
	if _, err := reopen(t, s, &Options{Now: clock.now}).Acquire(ctx, "r", store.LeaseRequest{Owner: "b/2/y", TTL: time.Second, TakeOver: &old, Forced: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.cache.Tail("r"); !ok {
		t.Fatal("s forgot the run's tail")
	}
	dump := Harness().Dump
	before := dump(t, s)
	cp2, _ := turnStep(log, 2, 10)
	closing := cp2
	closing.Action = withAction("external", cp2.Action.Next()) // a status change: the batched path
	if err := s.Checkpoint(ctx, old, closing); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a batched checkpoint with a lost lease: %v", err)
	}
	if after := dump(t, s); !bytes.Equal(before, after) {
		t.Fatalf("a batched checkpoint with a lost lease changed the database:\n%s\n---\n%s", before, after)
	}
}
