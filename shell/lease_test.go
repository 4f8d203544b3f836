package shell_test

import (
	"context"
	"errors"
	"maps"
	"runtime/pprof"
	"strings"
	"sync"
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

func (s *hungStore) CheckpointStatus(ctx context.Context, l store.Lease, cp store.Checkpoint) (store.Status, error) {
	if s.hangFrom > 0 && cp.Seq >= s.hangFrom {
		<-ctx.Done()
		return "", context.Cause(ctx)
	}
	return s.Store.CheckpointStatus(ctx, l, cp)
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

// renewCounter counts renewals by run; the renewals of run hang stay
// unanswered until their context ends.
type renewCounter struct {
	shell.Store
	hang string
	mu   sync.Mutex
	n    map[string]int
}

func (s *renewCounter) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	s.mu.Lock()
	s.n[l.RunID]++
	s.mu.Unlock()
	if l.RunID == s.hang {
		<-ctx.Done()
		return store.Lease{}, ctx.Err()
	}
	return s.Store.Renew(ctx, l, ttl)
}

func (s *renewCounter) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.n)
}

// TestHeartbeatsOfManyRuns: the leases of many runs one runner drives at
// once are each renewed every third of the TTL (one goroutine renews them
// all, each renewal on its own), a renewal that hangs for one run holds up
// no other's, and a run's renewals stop once its drive gave the lease up.
func TestHeartbeatsOfManyRuns(t *testing.T) {
	db := openStore(t)
	const ttl = 600 * time.Millisecond
	counter := &renewCounter{Store: db, n: map[string]int{}}
	r := shell.NewRunner(counter, &shell.Options{LeaseTTL: ttl})
	ctx := context.Background()
	hold := make(chan struct{})
	wait := fnTool{spec: core.Tool{Name: "wait", Parameters: []byte(anyArgs), Idempotent: true}, run: func(ctx context.Context, call core.ToolCall) core.ToolResult {
		select {
		case <-hold:
			return core.ToolResult{CallID: call.ID, Output: "held"}
		case <-ctx.Done():
			return core.ToolResult{CallID: call.ID, Error: "cut short"}
		}
	}}
	const runs = 12
	ids := make([]string, runs)
	for i := range runs {
		ag := newAgent(t, scripted(t, `{"tool_calls":[{"id":"w1","name":"wait","arguments":{}}]}`, `{"text":"done"}`), wait)
		id, err := r.Pool().Create(ctx, ag, "go")
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	counter.hang = ids[0]
	var wg sync.WaitGroup
	outs := make([]shell.Outcome, runs)
	errs := make([]error, runs)
	for i := range runs {
		ag := newAgent(t, scripted(t, `{"tool_calls":[{"id":"w1","name":"wait","arguments":{}}]}`, `{"text":"done"}`), wait)
		l, err := db.Acquire(ctx, ids[i], store.LeaseRequest{Owner: "w/1/" + ids[i], TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { outs[i], errs[i] = r.Pool().Drive(ctx, ag, l, time.Now(), nil) })
	}
	time.Sleep(ttl * 2) // about six renewals each (a third of the TTL apart)
	// A held run has no goroutine of its own to renew its lease: one
	// goroutine of the runner's waits for the beats of all of them.
	var stacks strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&stacks, 2); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(stacks.String(), "created by github.com/stepwise-agent/stepwise/shell.(*Runner).hold"); n > 0 {
		t.Errorf("%d goroutines started to hold a lease, with %d runs held; want none", n, runs)
	}
	if !strings.Contains(stacks.String(), "shell.(*beats).loop(0x") {
		t.Error("no goroutine waits for the runs' beats")
	}
	close(hold)
	wg.Wait()
	for i, id := range ids {
		if i == 0 {
			if !errors.Is(errs[0], shell.ErrLeaseLost) {
				t.Errorf("the run whose renewals hang: %+v %v; want its lease lost", outs[0], errs[0])
			}
			continue
		}
		if errs[i] != nil || outs[i].Status != store.StatusCompleted {
			t.Errorf("run %s: %+v %v", id, outs[i], errs[i])
		}
	}
	after := counter.counts()
	for _, id := range ids[1:] {
		if after[id] < 3 {
			t.Errorf("run %s renewed %d times in two TTLs; want one every third of the TTL", id, after[id])
		}
	}
	if after[ids[0]] < 2 {
		t.Errorf("the hung run's renewals: %d; want them tried again after one timed out", after[ids[0]])
	}
	time.Sleep(ttl)
	if later := counter.counts(); !maps.Equal(later, after) {
		t.Errorf("renewals went on after the drives gave their leases up: %v, then %v", after, later)
	}
}
