package server

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// leaseCounter records, for each run, whether it was created held and how
// many times its lease was taken afterwards (Acquire, Claim).
type leaseCounter struct {
	*sqlite.SQLite
	mu    sync.Mutex
	held  map[string]bool
	taken map[string]int
}

func newLeaseCounter(t *testing.T) *leaseCounter {
	return &leaseCounter{SQLite: openSQLite(t), held: map[string]bool{}, taken: map[string]int{}}
}

func (c *leaseCounter) CreateRun(ctx context.Context, r store.NewRun) (store.Lease, error) {
	l, err := c.SQLite.CreateRun(ctx, r)
	if err == nil {
		c.mu.Lock()
		c.held[r.ID] = r.Owner != ""
		c.mu.Unlock()
	}
	return l, err
}

func (c *leaseCounter) took(l store.Lease, err error) (store.Lease, error) {
	if err == nil {
		c.mu.Lock()
		c.taken[l.RunID]++
		c.mu.Unlock()
	}
	return l, err
}

func (c *leaseCounter) Acquire(ctx context.Context, runID string, req store.LeaseRequest) (store.Lease, error) {
	return c.took(c.SQLite.Acquire(ctx, runID, req))
}

func (c *leaseCounter) Claim(ctx context.Context, req store.LeaseRequest) (store.Lease, error) {
	return c.took(c.SQLite.Claim(ctx, req))
}

// of reports whether run id was created held, and how many times its lease
// was taken.
func (c *leaseCounter) of(id string) (held bool, taken int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held[id], c.taken[id]
}

// waitIdle waits until n of the server's workers wait for work.
func (f *fixture) waitIdle(n int64) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f.srv.idle.Load() != n {
		if time.Now().After(deadline) {
			f.t.Fatalf("%d workers waiting, not %d", f.srv.idle.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCreatedRunIsHandedOver (ADR 0037): a run created while a worker
// waits is stored held by the server and driven by that worker, no lease
// taken for it afterwards; a run created while the one worker is busy
// waits for it and is driven then, its lease taken; of many creates at
// once, one reserves the waiting worker.
func TestCreatedRunIsHandedOver(t *testing.T) {
	dir := agentsDir(t)
	write(t, dir, "slow.jsonl", `{"text": "slowly done", "delay_ms": 300}`+"\n")
	write(t, dir, "slow.toml", "name = \"slow\"\n[models.primary]\nprovider = \"script\"\nscript = \"slow.jsonl\"\n")
	st := newLeaseCounter(t)
	f := newFixture(t, Config{Store: st, AgentsDir: dir, Workers: 1})
	create := func(agent, input string) string {
		var run apiRun
		f.do("POST", "/v1/runs", map[string]any{"agent": agent, "input": input}).json(t, &run)
		return run.ID
	}

	f.waitIdle(1)
	id := create("shopper", "buy a lamp")
	f.waitFor(id, "awaiting_tool_results")
	if held, taken := st.of(id); !held || taken != 0 {
		t.Fatalf("a run created while the worker waited: created held %v, its lease taken %d times; want held, never taken", held, taken)
	}

	f.waitIdle(1)
	slow := create("slow", "take your time")
	queued := create("slow", "and me")
	f.waitFor(slow, "completed")
	f.waitFor(queued, "completed")
	if held, taken := st.of(slow); !held || taken != 0 {
		t.Fatalf("the slow run: created held %v, its lease taken %d times; want held, never taken", held, taken)
	}
	if held, taken := st.of(queued); held || taken == 0 {
		t.Fatalf("a run created while the worker was busy: created held %v, its lease taken %d times; want runnable, then taken", held, taken)
	}

	// Sixteen creates at once with one worker waiting: one reserves it,
	// and the others create their runs runnable (a hint, not a
	// reservation, would have several create runs held for it).
	f.waitIdle(1)
	var reserved atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if f.srv.reserve() {
				reserved.Add(1)
			}
		})
	}
	wg.Wait()
	if n := reserved.Load(); n != 1 {
		t.Fatalf("16 creates reserved the one waiting worker %d times", n)
	}
	f.srv.unreserve()
}

// TestHandOverWithNoWorkerWaiting: a run created held that no worker
// takes (they took other runs meanwhile, or the server stops) has its
// lease given back and is dispatched as any other: runnable, and driven
// once a worker is free.
func TestHandOverWithNoWorkerWaiting(t *testing.T) {
	st := newLeaseCounter(t)
	s, err := New(Config{Store: st, AgentsDir: agentsDir(t), Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ag, _, err := s.agents.byName("shopper")
	if err != nil {
		t.Fatal(err)
	}
	s.idle.Add(1) // a worker waits (none runs yet: its part is played here)
	if !s.reserve() {
		t.Fatal("no reservation with a worker waiting")
	}
	s.idle.Add(-1) // it takes other work before the hand-over
	c, err := s.runner.Pool().CreateHeld(ctx, ag, core.Request{Input: "buy a lamp"})
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := st.Run(ctx, c.ID); info.Lease.Owner != s.owner {
		t.Fatalf("created held: %+v", info.Lease)
	}
	s.handOver(heldRun{ag: ag, c: c})
	if n := s.idle.Load(); n != 0 {
		t.Fatalf("after the hand-over no worker took: %d workers waiting, want 0 (the reservation given back, the worker away)", n)
	}
	if info, _ := st.Run(ctx, c.ID); info.Status != store.StatusRunning || info.Lease.Owner != "" {
		t.Fatalf("not taken: %s, held by %q; want running and free", info.Status, info.Lease.Owner)
	}
	s.Start()
	defer s.Shutdown()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := st.Run(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if info.Status == store.StatusAwaitingToolResults {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run given back is %s after 10 s", info.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if held, taken := st.of(c.ID); !held || taken == 0 {
		t.Fatalf("the run given back: created held %v, its lease taken %d times", held, taken)
	}
}
