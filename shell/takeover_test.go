package shell_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// kindEvents collects the events of the kinds asked for.
type kindEvents struct {
	mu    sync.Mutex
	kinds map[string]bool
	got   []shell.Event
}

func (e *kindEvents) Event(ev shell.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.kinds[ev.Kind] {
		e.got = append(e.got, ev)
	}
}

// TestAForcedTakeOverFencesTheLiveHolder: with Options.TakeOver, Resume
// takes a run a live driver holds (mid model call), says whom it took it
// from, records the take-over with the run, and finishes the run; the
// former driver, its call answered after that, writes nothing and ends
// with ErrLeaseLost.
func TestAForcedTakeOverFencesTheLiveHolder(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	g := newGate(core.ModelReply{Text: "the first driver's answer"}, core.ModelReply{Text: "the operator's answer"})
	ag := newAgent(t, g)
	first := shell.NewRunner(db, &shell.Options{Owner: "first/1/a", NewID: func() string { return "r" }})
	firstErr := make(chan error, 1)
	go func() {
		_, err := first.Start(ctx, ag, "go")
		firstErr <- err
	}()
	<-g.entered
	// Without TakeOver the live holder refuses the resumer.
	if _, err := shell.NewRunner(db, &shell.Options{Owner: "op/2/b", LeaseTTL: time.Second}).Resume(ctx, ag, "r"); !errors.Is(err, shell.ErrBusy) {
		t.Fatalf("resume of a driven run: %v", err)
	}
	seen := &kindEvents{kinds: map[string]bool{"takeover": true}}
	op := shell.NewRunner(db, &shell.Options{Owner: "op/2/b", TakeOver: "stepwise resume --take-over", Observer: seen})
	out, err := op.Resume(ctx, ag, "r")
	if err != nil || out.Status != store.StatusCompleted || out.Answer != "the operator's answer" {
		t.Fatalf("forced resume: %+v %v", out, err)
	}
	if len(seen.got) != 1 || seen.got[0].RunID != "r" || !strings.Contains(seen.got[0].Text, "pid 1 on first") {
		t.Fatalf("take-over events: %+v", seen.got)
	}
	info, err := db.Run(ctx, "r")
	if err != nil || len(info.TakeOvers) != 1 || !strings.Contains(info.TakeOvers[0], "op/2/b took the run over from first/1/a") ||
		!strings.HasSuffix(info.TakeOvers[0], "stepwise resume --take-over") {
		t.Fatalf("recorded take-overs: %q %v", info.TakeOvers, err)
	}
	var before bytes.Buffer
	if err := db.Export(ctx, "r", &before); err != nil {
		t.Fatal(err)
	}
	close(g.release) // the first driver's call returns now
	select {
	case err := <-firstErr:
		if !errors.Is(err, shell.ErrLeaseLost) {
			t.Fatalf("the former driver: %v, want ErrLeaseLost", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the former driver never stopped")
	}
	var after bytes.Buffer
	if err := db.Export(ctx, "r", &after); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before.Bytes(), after.Bytes()) {
		t.Fatal("the former driver wrote to the run after the take-over")
	}
	if g.calls.Load() != 2 {
		t.Fatalf("%d model calls, want the first driver's and the operator's", g.calls.Load())
	}
}

// TestADeadHolderOnAnotherHostIsTakenOverWithinItsTTL: a holder this host
// cannot check (another host's), which stopped renewing, is taken over by
// a plain Resume about its TTL later, even when its lease's expiry, by its
// own clock, lies an hour ahead.
func TestADeadHolderOnAnotherHostIsTakenOverWithinItsTTL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	db := openAt(t, path, nil)
	// The holder's clock is an hour ahead: the expiry it writes looks
	// live for an hour to everyone else.
	ahead := openAt(t, path, &sqlite.Options{Now: func() time.Time { return time.Now().Add(time.Hour) }})
	ctx := context.Background()
	ag := newAgent(t, scripted(t, `{"text":"finished"}`))
	st, _ := core.Start(ag.Config, core.Request{Input: "go"})
	const ttl = 500 * time.Millisecond
	start := time.Now()
	if _, err := ahead.CreateRun(ctx, store.NewRun{ID: "r", Agent: "a", Initial: st, Owner: "otherhost/1/x", LeaseTTL: ttl}); err != nil {
		t.Fatal(err)
	}
	if info, _ := db.Run(ctx, "r"); !shell.Driven(info.Lease, time.Now().Add(50*time.Minute)) {
		t.Fatalf("the lease does not look live for the hour: %+v", info.Lease)
	}
	out, err := shell.NewRunner(db, nil).Resume(ctx, ag, "r")
	took := time.Since(start)
	if err != nil || out.Status != store.StatusCompleted {
		t.Fatalf("resume: %+v %v", out, err)
	}
	if took < ttl || took > ttl+2*time.Second {
		t.Fatalf("taken over after %v, want about the TTL %v", took, ttl)
	}
}

func openAt(t *testing.T, path string, opts *sqlite.Options) *sqlite.SQLite {
	t.Helper()
	db, err := sqlite.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
