package shell_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// TestCancelARunAnotherDriverDrives: Cancel of a run another runner drives
// (busy) records a request; that driver sees it at its next renewal, cuts
// its model call short, and ends the run cancelled with the reason; the
// canceller gets the outcome. The model call is not made again.
func TestCancelARunAnotherDriverDrives(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	started := make(chan struct{})
	calls := 0
	slow := modelFunc(func(ctx context.Context, req shell.ModelRequest) (core.ModelReply, error) {
		calls++
		close(started)
		<-ctx.Done() // a model that takes forever, unless cut short
		return core.ModelReply{}, ctx.Err()
	})
	ag := newAgent(t, slow)
	driver := shell.NewRunner(db, &shell.Options{LeaseTTL: 300 * time.Millisecond})
	done := make(chan shell.Outcome, 1)
	errc := make(chan error, 1)
	go func() {
		out, err := driver.Start(ctx, ag, "go")
		done <- out
		errc <- err
	}()
	<-started
	runs, _ := db.ListRuns(ctx, store.Filter{})
	id := runs[0].ID
	other := shell.NewRunner(db, &shell.Options{Wait: 10 * time.Second})
	out, err := other.Cancel(ctx, ag, id, "the user changed their mind")
	if err != nil || out.Status != store.StatusCancelled {
		t.Fatalf("cancel: %+v %v", out, err)
	}
	first := <-done
	if err := <-errc; err != nil || first.Status != store.StatusCancelled || first.Failure == nil ||
		first.Failure.Code != core.FailCancelled || !strings.Contains(first.Failure.Reason, "changed their mind") {
		t.Fatalf("the driver's outcome: %+v %v", first, err)
	}
	if calls != 1 {
		t.Fatalf("the model was called %d times", calls)
	}
	if info, _ := db.Run(ctx, id); info.Status != store.StatusCancelled || info.Lease.Owner != "" {
		t.Fatalf("the run: %+v", info)
	}
	// Cancelling an ended run: nothing to cancel.
	if _, err := other.Cancel(ctx, ag, id, "again"); !errors.Is(err, shell.ErrNotCancellable) {
		t.Fatalf("cancel again: %v", err)
	}
}

// TestCancelRequestSeenOnLoad: a request recorded while no one drove the
// run (its driver gone, its lease not yet expired) is acted on by whoever
// drives it next, before any request.
func TestCancelRequestSeenOnLoad(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	calls := 0
	counting := modelFunc(func(ctx context.Context, req shell.ModelRequest) (core.ModelReply, error) {
		calls++
		return core.ModelReply{Text: "hi"}, nil
	})
	ag := newAgent(t, counting)
	r := shell.NewRunner(db, nil)
	id, err := r.Pool().Create(ctx, ag, "go")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.RequestCancel(ctx, id, "stop it"); err != nil {
		t.Fatal(err)
	}
	l, err := db.Claim(ctx, store.LeaseRequest{Owner: shell.NewOwner(), TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Pool().Drive(ctx, ag, l, time.Now(), nil)
	if err != nil || out.Status != store.StatusCancelled || calls != 0 {
		t.Fatalf("drive: %+v %v (model calls %d)", out, err, calls)
	}
}

// TestCancelWaitsNoLongerThanAsked: a driver that does not act (a lease
// that outlives the wait) leaves the request recorded, and Cancel says so.
func TestCancelWaitsNoLongerThanAsked(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	ag := newAgent(t, scripted(t, `{"text":"hi"}`))
	r := shell.NewRunner(db, nil)
	id, err := r.Pool().Create(ctx, ag, "go")
	if err != nil {
		t.Fatal(err)
	}
	// Someone else (a live process of another host) holds the run.
	if _, err := db.Acquire(ctx, id, store.LeaseRequest{Owner: "elsewhere/1/x", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	w := shell.NewRunner(db, &shell.Options{Wait: 200 * time.Millisecond})
	if _, err := w.Cancel(ctx, ag, id, "later"); !errors.Is(err, shell.ErrCancelRequested) {
		t.Fatalf("cancel: %v", err)
	}
	if info, _ := db.Run(ctx, id); info.CancelReason != "later" || info.Status != store.StatusRunning {
		t.Fatalf("the request: %+v", info)
	}
}
