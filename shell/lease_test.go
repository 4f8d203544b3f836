package shell_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// hungStore is a store whose lease renewals hang, as on a PostgreSQL
// connection that no longer answers: until their context ends, or, with
// ignoreCtx, until the test ends, whatever the context does. With
// hangFrom, checkpoints of that step and later hang too, until their
// context ends.
type hungStore struct {
	shell.Store
	ignoreCtx bool
	hangFrom  int
	unblock   chan struct{}
	renewals  atomic.Int32
}

func (s *hungStore) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	s.renewals.Add(1)
	if s.ignoreCtx {
		<-s.unblock
		return store.Lease{}, errors.New("unblocked at the end of the test")
	}
	<-ctx.Done()
	return store.Lease{}, ctx.Err()
}

func (s *hungStore) Checkpoint(ctx context.Context, l store.Lease, cp store.Checkpoint) error {
	if s.hangFrom > 0 && cp.Seq >= s.hangFrom {
		<-ctx.Done()
		return context.Cause(ctx)
	}
	return s.Store.Checkpoint(ctx, l, cp)
}

// TestHeartbeatGivesUpOnAHungStore: when the store stops answering
// renewals, each renewal returns at its deadline, whether or not the
// store honours its context; once the lease has expired unrenewed the
// drive is cut short (the tool in flight, or the checkpoint in flight,
// sees its context end) and Start returns ErrLeaseLost at about the
// lease's expiry, instead of hanging, having written nothing more.
func TestHeartbeatGivesUpOnAHungStore(t *testing.T) {
	for _, c := range []struct {
		name      string
		ignoreCtx bool
		hangFrom  int // 0: the tool waits to be cut short
	}{
		{"honours-context", false, 0},
		{"ignores-context", true, 0},
		{"checkpoint-hangs", false, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := openStore(t)
			hung := &hungStore{Store: db, ignoreCtx: c.ignoreCtx, hangFrom: c.hangFrom, unblock: make(chan struct{})}
			t.Cleanup(func() { close(hung.unblock) })
			cut := make(chan error, 1)
			wait := fnTool{spec: core.Tool{Name: "wait", Parameters: []byte(anyArgs)}, run: func(ctx context.Context, call core.ToolCall) core.ToolResult {
				if c.hangFrom > 0 {
					return core.ToolResult{CallID: call.ID, Output: "at once"}
				}
				select {
				case <-ctx.Done():
					cut <- context.Cause(ctx)
					return core.ToolResult{CallID: call.ID, Error: "cut short"}
				case <-time.After(30 * time.Second):
					cut <- nil
					return core.ToolResult{CallID: call.ID, Output: "waited"}
				}
			}}
			ag := newAgent(t, scripted(t, `{"tool_calls":[{"id":"w1","name":"wait","arguments":{}}]}`, `{"text":"done"}`), wait)
			const ttl = 300 * time.Millisecond
			r := shell.NewRunner(hung, &shell.Options{LeaseTTL: ttl})

			start := time.Now()
			out, err := r.Start(context.Background(), ag, "go")
			took := time.Since(start)
			if !errors.Is(err, shell.ErrLeaseLost) {
				t.Fatalf("Start on a store whose renewals hang: %+v, %v; want ErrLeaseLost", out, err)
			}
			if took < ttl || took > 10*ttl {
				t.Fatalf("Start returned after %s, with a lease TTL of %s: want at the lease's expiry", took, ttl)
			}
			if c.hangFrom == 0 {
				if cause := <-cut; !errors.Is(cause, shell.ErrLeaseLost) {
					t.Fatalf("the tool in flight was not cut short by the lost lease: %v", cause)
				}
			}
			if n := hung.renewals.Load(); n < 2 {
				t.Fatalf("%d renewals tried; want the heartbeat to go on after one timed out", n)
			}
			runs, err := db.ListRuns(context.Background(), store.Filter{})
			if err != nil || len(runs) != 1 {
				t.Fatalf("runs: %v %v", runs, err)
			}
			if info := runs[0]; info.Status != store.StatusRunning || info.LastSeq != 2 {
				// Step 1 is the model call, step 2 the tool call.
				t.Fatalf("the run after the lease was lost: %s at step %d; want running at step 2 (nothing written after)", info.Status, info.LastSeq)
			}
		})
	}
}
