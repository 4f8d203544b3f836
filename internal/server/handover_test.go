package server

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// leaseCounter counts the leases its store gives out by Acquire and Claim
// (not those CreateRun gives with a run created held).
type leaseCounter struct {
	*sqlite.SQLite
	taken atomic.Int32
}

func (c *leaseCounter) Acquire(ctx context.Context, runID string, req store.LeaseRequest) (store.Lease, error) {
	l, err := c.SQLite.Acquire(ctx, runID, req)
	if err == nil {
		c.taken.Add(1)
	}
	return l, err
}

func (c *leaseCounter) Claim(ctx context.Context, req store.LeaseRequest) (store.Lease, error) {
	l, err := c.SQLite.Claim(ctx, req)
	if err == nil {
		c.taken.Add(1)
	}
	return l, err
}

// TestCreatedRunIsHandedOver (ADR 0037): a run created while a worker
// waits is stored held by the server and driven by that worker, no lease
// taken for it afterwards; a run created while the one worker is busy
// waits for it and is driven then.
func TestCreatedRunIsHandedOver(t *testing.T) {
	dir := agentsDir(t)
	write(t, dir, "slow.jsonl", `{"text": "slowly done", "delay_ms": 300}`+"\n")
	write(t, dir, "slow.toml", "name = \"slow\"\n[models.primary]\nprovider = \"script\"\nscript = \"slow.jsonl\"\n")
	st := &leaseCounter{SQLite: openSQLite(t)}
	f := newFixture(t, Config{Store: st, AgentsDir: dir, Workers: 1})

	var run apiRun
	f.do("POST", "/v1/runs", map[string]any{"agent": "shopper", "input": "buy a lamp"}).json(t, &run)
	f.waitFor(run.ID, "awaiting_tool_results")
	if n := st.taken.Load(); n != 0 {
		t.Fatalf("a run handed over at its creation had its lease taken %d times", n)
	}

	var slow, queued apiRun
	f.do("POST", "/v1/runs", map[string]any{"agent": "slow", "input": "take your time"}).json(t, &slow)
	f.do("POST", "/v1/runs", map[string]any{"agent": "slow", "input": "and me"}).json(t, &queued)
	f.waitFor(slow.ID, "completed")
	f.waitFor(queued.ID, "completed")
	if n := st.taken.Load(); n != 1 {
		t.Fatalf("leases taken: %d, want one, for the run created while the worker was busy", n)
	}
}

// TestHandOverWithNoWorkerWaiting: a run created held that no worker
// takes (they took other runs meanwhile, or the server stops) has its
// lease given back and is dispatched as any other: runnable, and driven
// once a worker is free.
func TestHandOverWithNoWorkerWaiting(t *testing.T) {
	st := &leaseCounter{SQLite: openSQLite(t)}
	s, err := New(Config{Store: st, AgentsDir: agentsDir(t), Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ag, _, err := s.agents.byName("shopper")
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.runner.Pool().CreateHeld(ctx, ag, core.Request{Input: "buy a lamp"})
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := st.Run(ctx, c.ID); info.Lease.Owner != s.owner {
		t.Fatalf("created held: %+v", info.Lease)
	}
	s.handOver(heldRun{ag: ag, c: c}) // no worker runs yet
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
	if n := st.taken.Load(); n == 0 {
		t.Fatal("the run given back was driven with no lease taken")
	}
}
