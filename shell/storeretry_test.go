package shell_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// flakyStore fails RecordOutcome and CheckpointStatus (the runner's
// checkpoint) with a reset connection while down is set, as a store behind
// a blip does.
type flakyStore struct {
	store.Store
	down     atomic.Bool
	refusals atomic.Int32
}

func (f *flakyStore) RecordOutcome(ctx context.Context, l store.Lease, seq int, res core.ToolResult) error {
	if f.down.Load() {
		f.refusals.Add(1)
		return fmt.Errorf("record outcome: %w", syscall.ECONNRESET)
	}
	return f.Store.RecordOutcome(ctx, l, seq, res)
}

func (f *flakyStore) CheckpointStatus(ctx context.Context, l store.Lease, cp store.Checkpoint) (store.Status, error) {
	if f.down.Load() {
		f.refusals.Add(1)
		return "", fmt.Errorf("checkpoint: %w", syscall.ECONNRESET)
	}
	return f.Store.CheckpointStatus(ctx, l, cp)
}

// TestUnwrittenOutcomeIsKeptAndWritten: a non-idempotent call finishes
// while the store refuses writes past the store retry policy: the run
// stalls (not fails) with the store's reason; the outcome stays in the
// process, and resuming in it writes the outcome instead of calling the
// tool again or telling the model "outcome unknown". A shorter blip is
// ridden out by the retries.
func TestUnwrittenOutcomeIsKeptAndWritten(t *testing.T) {
	ctx := context.Background()
	fs := &flakyStore{Store: openStore(t)}
	var effects atomic.Int32
	charge := fnTool{spec: core.Tool{Name: "charge", Parameters: []byte(anyArgs)}, run: func(_ context.Context, c core.ToolCall) core.ToolResult {
		effects.Add(1)
		fs.down.Store(true) // the store goes away while the call runs
		return core.ToolResult{CallID: c.ID, Output: "charged"}
	}}
	var sawUnknown atomic.Bool
	model := modelFunc(func(_ context.Context, req shell.ModelRequest) (core.ModelReply, error) {
		for _, m := range req.Messages {
			if strings.Contains(m.Content, "outcome unknown") {
				sawUnknown.Store(true)
			}
		}
		if !hasToolResult(req.Messages) {
			return core.ModelReply{Calls: []core.NativeCall{{ID: "c1", Name: "charge", Arguments: `{}`}}}, nil
		}
		return core.ModelReply{Text: "done"}, nil
	})
	ag := newAgent(t, model, charge)
	ag.Config.Tools[0].Idempotent = false
	r := shell.NewRunner(fs, &shell.Options{StoreRetry: shell.RetryPolicy{Backoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, MaxElapsed: 150 * time.Millisecond}})
	out, err := r.Start(ctx, ag, "charge it")
	if err != nil || out.Status != store.StatusStalled || !strings.Contains(out.Reason, "store is unavailable") || out.StallAttempts != 1 {
		t.Fatalf("past the retries: %+v, %v", out, err)
	}
	if fs.refusals.Load() < 3 {
		t.Fatalf("the outcome write was tried %d time(s)", fs.refusals.Load())
	}
	fs.down.Store(false)
	out, err = r.Resume(ctx, ag, out.RunID)
	if err != nil || out.Status != store.StatusCompleted || out.Answer != "done" || len(out.InDoubt) != 0 {
		t.Fatalf("resumed: %+v, %v", out, err)
	}
	if effects.Load() != 1 || sawUnknown.Load() {
		t.Fatalf("%d effects; the model saw outcome unknown: %v", effects.Load(), sawUnknown.Load())
	}

	// A blip within the retry policy: the run completes in one go.
	effects.Store(0)
	fs.refusals.Store(0)
	charge.run = func(_ context.Context, c core.ToolCall) core.ToolResult {
		effects.Add(1)
		fs.down.Store(true)
		time.AfterFunc(40*time.Millisecond, func() { fs.down.Store(false) })
		return core.ToolResult{CallID: c.ID, Output: "charged"}
	}
	ag = newAgent(t, model, charge)
	ag.Config.Tools[0].Idempotent = false
	out, err = r.Start(ctx, ag, "charge it")
	if err != nil || out.Status != store.StatusCompleted || effects.Load() != 1 || fs.refusals.Load() == 0 || sawUnknown.Load() {
		t.Fatalf("a short blip: %+v, %v; %d effects, %d refusals", out, err, effects.Load(), fs.refusals.Load())
	}
}

func hasToolResult(ms []core.Message) bool {
	for _, m := range ms {
		if m.Role == core.RoleTool {
			return true
		}
	}
	return false
}

// lostAckStore commits the checkpoint of the first step whose action is
// like trip's, then reports a reset connection: its acknowledgement lost,
// as behind a blip.
type lostAckStore struct {
	store.Store
	trip    core.Action
	tripped atomic.Bool
}

func (s *lostAckStore) CheckpointStatus(ctx context.Context, l store.Lease, cp store.Checkpoint) (store.Status, error) {
	left, err := s.Store.CheckpointStatus(ctx, l, cp)
	if err == nil && reflect.TypeOf(cp.Action) == reflect.TypeOf(s.trip) && s.tripped.CompareAndSwap(false, true) {
		return "", fmt.Errorf("checkpoint: %w", syscall.ECONNRESET)
	}
	return left, err
}

// TestLostAcknowledgement: a checkpoint that was committed though its
// caller saw the connection reset is found written when retried, whether
// the retry is refused for its seq (a step in the middle of the run) or
// for the lease the step gave up with the run's end (store.Checkpoint.
// Release): the drive goes on, or ends, as if the first attempt had
// answered, and the run is stored once, completed, its lease free.
func TestLostAcknowledgement(t *testing.T) {
	for _, trip := range []core.Action{core.RequestModelCall{}, core.Complete{}} {
		t.Run(fmt.Sprintf("%T", trip), func(t *testing.T) {
			ctx := context.Background()
			fs := &lostAckStore{Store: openStore(t), trip: trip}
			calls := 0
			ag := newAgent(t, modelFunc(func(context.Context, shell.ModelRequest) (core.ModelReply, error) {
				calls++
				return core.ModelReply{Text: "done"}, nil
			}))
			out, err := shell.NewRunner(fs, nil).Start(ctx, ag, "go")
			if err != nil || out.Status != store.StatusCompleted || out.Answer != "done" {
				t.Fatalf("the drive: %+v %v", out, err)
			}
			if !fs.tripped.Load() || calls != 1 {
				t.Fatalf("tripped %v, %d model calls; want the acknowledgement lost once and one call", fs.tripped.Load(), calls)
			}
			info, err := fs.Run(ctx, out.RunID)
			if err != nil || info.Status != store.StatusCompleted || info.LastSeq != 2 || info.Lease.Owner != "" {
				t.Fatalf("the run: %+v %v", info, err)
			}
		})
	}
}
