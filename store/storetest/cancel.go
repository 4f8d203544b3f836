package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/stepwise-agent/stepwise/store"
)

// testCancelRequests: a cancellation is requested without the lease, is
// seen in the run's info (and survives a reopen), changes nothing else;
// an ended run or a missing one is refused, and an empty reason too.
func testCancelRequests(t *testing.T, h Harness) {
	ctx := context.Background()
	clock := NewClock()
	s := open(t, h, clock.Now)
	l, g := create(t, s, "r", nil)
	must(t, s.Checkpoint(ctx, l, g.next()))
	before, err := s.Run(ctx, "r")
	must(t, err)
	if before.CancelReason != "" {
		t.Fatalf("a new run has a cancel request: %q", before.CancelReason)
	}
	must(t, s.RequestCancel(ctx, "r", "changed my mind"))
	after, err := s.Run(ctx, "r")
	must(t, err)
	if after.CancelReason != "changed my mind" || after.Status != before.Status || after.Lease != before.Lease || after.LastSeq != before.LastSeq {
		t.Fatalf("after the request: %+v (before %+v)", after, before)
	}
	// The holder still writes: acting on the request is its job.
	must(t, s.Checkpoint(ctx, l, g.next()))
	s = h.Reopen(t, s, clock.Now)
	if ri, err := s.Run(ctx, "r"); err != nil || ri.CancelReason != "changed my mind" {
		t.Fatalf("after a reopen: %+v %v", ri, err)
	}
	if err := s.RequestCancel(ctx, "nope", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a missing run: %v", err)
	}
	if err := s.RequestCancel(ctx, "r", ""); err == nil {
		t.Fatal("an empty reason was accepted")
	}
	l2, g2 := create(t, s, "done", nil)
	must(t, s.Checkpoint(ctx, l2, g2.ending("complete")))
	if err := s.RequestCancel(ctx, "done", "too late"); !errors.Is(err, store.ErrEnded) {
		t.Fatalf("an ended run: %v", err)
	}
	if ri, _ := s.Run(ctx, "done"); ri.CancelReason != "" {
		t.Fatalf("the ended run recorded %q", ri.CancelReason)
	}
}
