package shell_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// blocking is a model whose calls block until their context ends; each
// call's start is sent on started.
func blocking(started chan<- struct{}) shell.ModelProvider {
	return modelFunc(func(ctx context.Context, req shell.ModelRequest) (core.ModelReply, error) {
		started <- struct{}{}
		<-ctx.Done()
		return core.ModelReply{}, ctx.Err()
	})
}

// TestCancelReachesADriveInThisProcessAtOnce: Cancel of a run another
// Runner of this process drives ends it at once, its model call cut
// short, though that driver's heartbeat would not look for a minute.
func TestCancelReachesADriveInThisProcessAtOnce(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	for i := range 5 {
		started := make(chan struct{}, 1)
		ag := newAgent(t, blocking(started))
		driver := shell.NewRunner(db, &shell.Options{LeaseTTL: 3 * time.Minute})
		done := make(chan shell.Outcome, 1)
		go func() {
			out, _ := driver.Start(ctx, ag, "go")
			done <- out
		}()
		<-started
		runs, _ := db.ListRuns(ctx, store.Filter{Status: store.StatusRunning})
		t0 := time.Now()
		out, err := shell.NewRunner(db, nil).Cancel(ctx, ag, runs[0].ID, "now")
		if err != nil || out.Status != store.StatusCancelled || time.Since(t0) > time.Second {
			t.Fatalf("#%d: cancel: %+v %v after %s", i, out, err, time.Since(t0))
		}
		if first := <-done; first.Status != store.StatusCancelled {
			t.Fatalf("#%d: the driver's outcome: %+v", i, first)
		}
	}
}

// TestInterruptYieldsToARequestedCancel: a drive cut short (a signal)
// after a cancellation was requested, which its heartbeat had not seen
// yet, ends the run cancelled, not interrupted.
func TestInterruptYieldsToARequestedCancel(t *testing.T) {
	db := openStore(t)
	started := make(chan struct{}, 1)
	ag := newAgent(t, blocking(started))
	ctx, interrupt := context.WithCancel(context.Background())
	driver := shell.NewRunner(db, &shell.Options{LeaseTTL: 3 * time.Minute})
	done := make(chan shell.Outcome, 1)
	go func() {
		out, _ := driver.Start(ctx, ag, "go")
		done <- out
	}()
	<-started
	runs, _ := db.ListRuns(context.Background(), store.Filter{})
	// Recorded as another process's Cancel records it: no one tells
	// this process's drive.
	if err := db.RequestCancel(context.Background(), runs[0].ID, "from afar"); err != nil {
		t.Fatal(err)
	}
	interrupt()
	out := <-done
	if out.Status != store.StatusCancelled || out.Failure == nil || !strings.Contains(out.Failure.Reason, "from afar") {
		t.Fatalf("the driver's outcome: %+v", out)
	}
	if info, _ := db.Run(context.Background(), runs[0].ID); info.Status != store.StatusCancelled {
		t.Fatalf("the run is %s", info.Status)
	}
}

// TestCancelTakesARunLetGoUnended: a run held by this process but not
// driven (as a worker holds it between its claim and its drive), then let
// go interrupted, is taken by the Cancel that waited for its holder, and
// ended cancelled.
func TestCancelTakesARunLetGoUnended(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	ag := newAgent(t, scripted(t, `{"text":"hi"}`))
	r := shell.NewRunner(db, nil)
	id, err := r.Pool().Create(ctx, ag, "go")
	if err != nil {
		t.Fatal(err)
	}
	l, err := db.Acquire(ctx, id, store.LeaseRequest{Owner: shell.NewOwner(), TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = db.SetStatus(ctx, l, store.StatusChange{Status: store.StatusInterrupted, Reason: "interrupted"})
		_ = db.Release(ctx, l)
	}()
	// Options.Wait is 0: a holder in this process is waited for anyway.
	out, err := r.Cancel(ctx, ag, id, "stop")
	if err != nil || out.Status != store.StatusCancelled {
		t.Fatalf("cancel: %+v %v", out, err)
	}
	if info, _ := db.Run(ctx, id); info.Status != store.StatusCancelled || info.Lease.Owner != "" {
		t.Fatalf("the run: %+v", info)
	}
}
