package shell_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// TestStallBackoffSchedule: the stall waits double from 5 s up to 10 min,
// each within ±20% of its nominal value, whatever the draw.
func TestStallBackoffSchedule(t *testing.T) {
	p := shell.DefaultStallBackoff
	nominal := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 320 * time.Second, 10 * time.Minute, 10 * time.Minute}
	for i, d := range nominal {
		n := i + 1
		if got := p.Wait(n, nil); got != d {
			t.Errorf("stall %d: wait %s, want %s", n, got, d)
		}
		lo, hi := p.Wait(n, func() float64 { return 0 }), p.Wait(n, func() float64 { return 0.999999 })
		if lo != time.Duration(float64(d)*0.8) || hi > time.Duration(float64(d)*1.2) || hi < time.Duration(float64(d)*1.19) {
			t.Errorf("stall %d: jitter bounds [%s, %s] for %s", n, lo, hi, d)
		}
	}
	if got := p.Wait(1000, func() float64 { return 0.999999 }); got > 12*time.Minute {
		t.Errorf("stall 1000 waits %s, past the cap", got)
	}
}

// TestStallsBackOffAndProgressResets: a run that stalls again and again
// counts its stalls and waits longer each time (retry_at grows by the
// schedule, within the jitter); the count is stored with the run, and a
// step of progress resets it.
func TestStallsBackOffAndProgressResets(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	down := modelFunc(func(context.Context, shell.ModelRequest) (core.ModelReply, error) {
		return core.ModelReply{}, &shell.TransientError{Err: errors.New("status 503"), Attempts: 5}
	})
	ag := newAgent(t, down, fnTool{spec: core.Tool{Name: "f", Parameters: []byte(anyArgs)}, run: func(_ context.Context, c core.ToolCall) core.ToolResult {
		return core.ToolResult{CallID: c.ID, Output: "ok"}
	}})
	r := shell.NewRunner(db, nil)
	check := func(out shell.Outcome, err error, n int, nominal time.Duration) {
		t.Helper()
		start := time.Now()
		if err != nil || out.Status != store.StatusStalled || out.StallAttempts != n {
			t.Fatalf("stall %d: %+v, %v", n, out, err)
		}
		wait := out.RetryAt.Sub(start)
		if wait < time.Duration(float64(nominal)*0.8)-time.Second || wait > time.Duration(float64(nominal)*1.2) {
			t.Fatalf("stall %d: retry in %s, want %s ±20%%", n, wait, nominal)
		}
		info, err := db.Run(ctx, out.RunID)
		if err != nil || info.Status != store.StatusStalled || info.StallAttempts != n || !info.RetryAt.Equal(out.RetryAt) || info.Reason == "" {
			t.Fatalf("stall %d stored: %+v, %v", n, info, err)
		}
	}
	out, err := r.Start(ctx, ag, "go")
	check(out, err, 1, 5*time.Second)
	id := out.RunID
	for _, c := range []struct {
		n       int
		nominal time.Duration
	}{{2, 10 * time.Second}, {3, 20 * time.Second}, {4, 40 * time.Second}} {
		out, err = r.Resume(ctx, ag, id)
		check(out, err, c.n, c.nominal)
	}
	// The model answers once with a tool call (progress: the count resets),
	// then is down again: the next stall is the first in a row.
	calls := 0
	ag.Models[core.Primary] = modelFunc(func(ctx context.Context, req shell.ModelRequest) (core.ModelReply, error) {
		calls++
		if calls == 1 {
			return core.ModelReply{Calls: []core.NativeCall{{ID: "c1", Name: "f", Arguments: `{}`}}}, nil
		}
		return down(ctx, req)
	})
	out, err = r.Resume(ctx, ag, id)
	check(out, err, 1, 5*time.Second)
	// Completing resets it too.
	ag.Models[core.Primary] = modelFunc(func(context.Context, shell.ModelRequest) (core.ModelReply, error) {
		return core.ModelReply{Text: "done"}, nil
	})
	if out, err = r.Resume(ctx, ag, id); err != nil || out.Status != store.StatusCompleted {
		t.Fatalf("completed: %+v, %v", out, err)
	}
	if info, _ := db.Run(ctx, id); info.StallAttempts != 0 {
		t.Fatalf("a completed run keeps %d stall attempts", info.StallAttempts)
	}
}
