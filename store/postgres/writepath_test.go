package postgres

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// The write path: how many round trips a checkpoint takes, and what fences
// it (see doc.go).

// countTracer counts the statements and batches a store sends.
type countTracer struct {
	mu      sync.Mutex
	queries []string
	batches int
}

func (c *countTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queries = append(c.queries, d.SQL)
	return ctx
}
func (c *countTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *countTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batches++
	return ctx
}
func (c *countTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *countTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// reset returns the statements and batches since the last reset.
func (c *countTracer) reset() ([]string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	q, b := c.queries, c.batches
	c.queries, c.batches = nil, 0
	return q, b
}

// TestCheckpointRoundTrips: the common checkpoint is one statement (the
// fenced insert, in autocommit); one that changes the status, closes a
// segment or stores a new tool list is one batch; one whose tail this
// store does not know reads it first, in one more.
func TestCheckpointRoundTrips(t *testing.T) {
	t.Parallel()
	tr := &countTracer{}
	s := openWith(t, &Options{Now: fakeClock(), MaxConns: 1, tracer: tr})
	ctx := context.Background()
	l, err := s.CreateRun(ctx, store.NewRun{ID: "r", Agent: "x", Initial: synthInitial("r"), Owner: "h/1/x", LeaseTTL: 3600e9})
	if err != nil {
		t.Fatal(err)
	}
	g := newSynth("r")
	tools := []core.Tool{{Name: "search", Description: "searches"}}
	step := func() (store.Checkpoint, []string, int) {
		t.Helper()
		cp := g.next()
		if m, ok := cp.Action.(core.RequestModelCall); ok {
			m.Tools = tools
			cp.Action = m
		}
		tr.reset()
		if err := s.Checkpoint(ctx, l, cp); err != nil {
			t.Fatal(err)
		}
		q, b := tr.reset()
		return cp, q, b
	}
	for seq := 1; seq < codec.SegmentSteps-1; seq++ {
		_, q, b := step()
		switch {
		case seq == 2: // the first model call stores its tool list
			if len(q) != 0 || b != 1 {
				t.Fatalf("step %d (a new tool list): %d statements %v, %d batches; want one batch", seq, len(q), q, b)
			}
		case len(q) != 1 || b != 0 || !strings.Contains(q[0], "INSERT INTO steps"):
			t.Fatalf("step %d: %d statements %v, %d batches; want the fenced insert alone", seq, len(q), q, b)
		}
	}
	if _, q, b := step(); len(q) != 0 || b != 1 { // step 63 closes the first segment
		t.Fatalf("closing a segment: %d statements %v, %d batches; want one batch", len(q), q, b)
	}
	// A status change.
	pause := withAction("external", g.next().Action.Next())
	tr.reset()
	if err := s.Checkpoint(ctx, l, store.Checkpoint{Seq: g.seq, Action: pause}); err != nil {
		t.Fatal(err)
	}
	if q, b := tr.reset(); len(q) != 0 || b != 1 {
		t.Fatalf("a status change: %d statements %v, %d batches; want one batch", len(q), q, b)
	}
	// A tail this store does not know: one read, then the write.
	s.cache.ForgetTail("r")
	g.log = pause.Next().Messages
	if _, q, b := step(); len(q) != 0 || b != 2 {
		t.Fatalf("a checkpoint that reads its tail: %d statements %v, %d batches; want two batches", len(q), q, b)
	}
}

// TestCommonCheckpointLostLease: the fenced insert in autocommit either
// writes its step under the lease or nothing; a store that remembers the
// tail but lost the lease writes nothing through the common path.
func TestCommonCheckpointLostLease(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	l, err := s.CreateRun(ctx, store.NewRun{ID: "r", Agent: "x", Initial: synthInitial("r"), Owner: "h/1/x", LeaseTTL: 3600e9})
	if err != nil {
		t.Fatal(err)
	}
	g := newSynth("r")
	if err := s.Checkpoint(ctx, l, g.next()); err != nil {
		t.Fatal(err)
	}
	// Another holder with the same token (impossible through Acquire,
	// which increments it; the insert checks the holder too).
	exec(t, s, `UPDATE runs SET lease_owner = 'other/2/y' WHERE id = 'r'`)
	if err := s.Checkpoint(ctx, l, g.next()); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a checkpoint under another holder of the same token: %v", err)
	}
	if info, _ := s.Run(ctx, "r"); info.LastSeq != 1 {
		t.Fatalf("a fenced-out checkpoint wrote step %d", info.LastSeq)
	}
}

// TestCreateRunRoundTrips: a run's creation is one statement, in one
// round trip, under a key taken from the runs' sequence beforehand (one
// more round trip per rkBlock creates). A create that stores a config's
// body for the first time, or a fork, whose parent is checked, is a
// transaction of three: its BEGIN with the run's insert (the body, the
// parent's check), the step 0 insert, and the commit.
func TestCreateRunRoundTrips(t *testing.T) {
	t.Parallel()
	tr := &countTracer{}
	s := openWith(t, &Options{Now: fakeClock(), MaxConns: 1, tracer: tr})
	ctx := context.Background()
	config := []byte(strings.Repeat("a config large enough to be stored once; ", 64))
	for _, c := range []struct {
		r   store.NewRun
		one bool
	}{
		{store.NewRun{ID: "first", Agent: "x", Config: config, Initial: synthInitial("first"), Owner: "h/1/x", LeaseTTL: 3600e9}, false},
		{store.NewRun{ID: "second", Agent: "x", Config: config, Initial: synthInitial("second"), Owner: "h/1/x", LeaseTTL: 3600e9}, true},
		{store.NewRun{ID: "third", Agent: "x", Config: []byte("small"), Initial: synthInitial("third")}, true},
		{store.NewRun{ID: "fork", Agent: "x", Initial: synthInitial("fork"), ParentID: "first", ParentStep: 0}, false},
	} {
		tr.reset()
		l, err := s.CreateRun(ctx, c.r)
		if err != nil {
			t.Fatal(err)
		}
		q, b := tr.reset()
		switch {
		case c.one:
			if len(q) > 0 && strings.Contains(q[0], "nextval") {
				q = q[1:] // the store's first keys
			}
			if b != 0 || len(q) != 1 || !strings.Contains(q[0], "OVERRIDING SYSTEM VALUE") {
				t.Fatalf("create %s: %d batches and the statements %q; want the one statement", c.r.ID, b, q)
			}
		case b != 1 || len(q) != 2 || !strings.Contains(q[0], "INSERT INTO steps") || !strings.EqualFold(q[1], "commit"):
			t.Fatalf("create %s: %d batches and the statements %q; want one batch, then the step's insert and the commit", c.r.ID, b, q)
		}
		info, err := s.Run(ctx, c.r.ID)
		if err != nil || info.LastSeq != 0 || info.Status != store.StatusRunning || info.Lease.Owner != c.r.Owner {
			t.Fatalf("create %s: %+v %v", c.r.ID, info, err)
		}
		if c.r.Owner != "" && (info.Lease != l || l.Token != 1 || l.Expires.IsZero()) {
			t.Fatalf("create %s: lease %+v, the run's %+v", c.r.ID, l, info.Lease)
		}
		// Its first checkpoint need not read step 0 back.
		if _, ok := s.cache.Tail(c.r.ID); !ok {
			t.Fatalf("create %s: the store does not remember the run's tail", c.r.ID)
		}
	}
	// A run whose id is taken is refused, in one statement or in the
	// transaction.
	if _, err := s.CreateRun(ctx, store.NewRun{ID: "second", Agent: "x", Initial: synthInitial("second")}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("a second run with the id (one statement): %v", err)
	}
	if _, err := s.CreateRun(ctx, store.NewRun{ID: "first", Agent: "x", Initial: synthInitial("first")}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("a second run with the id: %v", err)
	}
	if _, err := s.CreateRun(ctx, store.NewRun{ID: "orphan", Agent: "x", Initial: synthInitial("orphan"), ParentID: "nobody"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a fork of no run: %v", err)
	}
	if _, err := s.Run(ctx, "orphan"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused fork was stored: %v", err)
	}
	if info, err := s.Run(ctx, "fork"); err != nil || info.ParentID != "first" || string(info.Config) != "" {
		t.Fatalf("the fork: %+v %v", info, err)
	}
	if info, err := s.Run(ctx, "second"); err != nil || string(info.Config) != string(config) {
		t.Fatalf("the second run's config: %v", err)
	}
}
