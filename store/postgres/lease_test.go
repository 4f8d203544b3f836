package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

func TestLeaseAcquireRenewReleaseTakeOver(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	s := openWith(t, &Options{Now: clock.now})
	ctx := context.Background()
	st := baseState("q", []core.Message{{Role: core.RoleUser, Content: "q"}})
	a, err := s.CreateRun(ctx, store.NewRun{ID: "r", Agent: "x", Initial: st, Owner: "hostA/1/aa", LeaseTTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if a.Token != 1 || a.Owner != "hostA/1/aa" || !a.Expires.Equal(clock.now().Add(10*time.Second)) {
		t.Fatalf("lease at creation: %+v", a)
	}
	info, _ := s.Run(ctx, "r")
	if info.Lease != a || info.Orphaned(clock.now()) {
		t.Fatalf("store.RunInfo.Lease %+v, want %+v (orphaned %v)", info.Lease, a, info.Orphaned(clock.now()))
	}
	// A live lease refuses everyone else, and is not re-entrant.
	for _, owner := range []string{"hostB/2/bb", "hostA/1/aa"} {
		_, err := s.Acquire(ctx, "r", store.LeaseRequest{Owner: owner, TTL: time.Second})
		busy, ok := errors.AsType[*store.BusyError](err)
		if !ok || !errors.Is(err, store.ErrBusy) || busy.Holder != a {
			t.Fatalf("%s acquiring a held run: %v", owner, err)
		}
	}
	// Renewal moves the expiry; the holder stays.
	clock.add(8 * time.Second)
	if a, err = s.Renew(ctx, a, 10*time.Second); err != nil || !a.Expires.Equal(clock.now().Add(10*time.Second)) {
		t.Fatalf("renew: %+v %v", a, err)
	}
	clock.add(9 * time.Second)
	if _, err := s.Acquire(ctx, "r", store.LeaseRequest{Owner: "hostB/2/bb", TTL: time.Second}); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("acquire before the renewed expiry: %v", err)
	}
	// A take-over of exactly the holder works before the expiry; one
	// naming another token does not.
	stale := a
	stale.Token = 7
	if _, err := s.Acquire(ctx, "r", store.LeaseRequest{Owner: "hostB/2/bb", TTL: time.Second, TakeOver: &stale}); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("take-over of a wrong token: %v", err)
	}
	b, err := s.Acquire(ctx, "r", store.LeaseRequest{Owner: "hostB/2/bb", TTL: 5 * time.Second, TakeOver: &a})
	if err != nil || b.Token != 2 {
		t.Fatalf("take-over: %+v %v", b, err)
	}
	// The old holder can no longer renew or release.
	if _, err := s.Renew(ctx, a, time.Second); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("renew of a lost lease: %v", err)
	}
	if err := s.Release(ctx, a); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("release of a lost lease: %v", err)
	}
	// An expired lease is free for the next driver; its holder, if no one
	// took it, may still renew it.
	clock.add(6 * time.Second)
	if b, err = s.Renew(ctx, b, 5*time.Second); err != nil {
		t.Fatalf("renew after expiry with no one else: %v", err)
	}
	if err := s.Release(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, b); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("release twice: %v", err)
	}
	info, _ = s.Run(ctx, "r")
	if info.Lease.Owner != "" || !info.Lease.Expires.IsZero() || !info.Orphaned(clock.now()) {
		t.Fatalf("after release: %+v", info.Lease)
	}
	c, err := s.Acquire(ctx, "r", store.LeaseRequest{Owner: "hostC/3/cc", TTL: time.Second})
	if err != nil || c.Token != 3 {
		t.Fatalf("acquire after release: %+v %v", c, err)
	}
	if _, err := s.Acquire(ctx, "nope", store.LeaseRequest{Owner: "x", TTL: time.Second}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("acquire of an unknown run: %v", err)
	}
	if _, err := s.Acquire(ctx, "r", store.LeaseRequest{TTL: time.Second}); err == nil {
		t.Fatal("acquire without an owner")
	}
	if _, err := s.Renew(ctx, store.Lease{RunID: "nope", Owner: "x", Token: 1}, time.Second); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("renew of an unknown run: %v", err)
	}
}

// TestFencedWritesRefuseALostLease: once another driver took the run over,
// every write of the old holder is refused and writes nothing:
// checkpoint, intent, outcome, status, agent change, intent retraction,
// renewal, release. The database is compared row by row before and after.
func TestFencedWritesRefuseALostLease(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	s := openWith(t, &Options{Now: clock.now})
	ctx := context.Background()
	log := []core.Message{{Role: core.RoleSystem, Content: "s"}, {Role: core.RoleUser, Content: "q"}}
	old, err := s.CreateRun(ctx, store.NewRun{ID: "r", Agent: "x", Initial: baseState("q", log), Owner: "a/1/x", LeaseTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var cp store.Checkpoint
	cp, log = turnStep(log, 1, 10)
	if err := s.Checkpoint(ctx, old, cp); err != nil {
		t.Fatal(err)
	}
	call := core.ToolCall{ID: "c1", Name: "search", Args: []byte(`{"q":"x"}`)}
	if err := s.RecordIntent(ctx, old, 1, call); err != nil {
		t.Fatal(err)
	}
	// The holder is stopped past its lease; another driver (another
	// process: another store on the schema) takes over. s still remembers
	// the run's tail, so its next checkpoint takes the common path.
	clock.add(2 * time.Second)
	b := reopen(t, s, &Options{Now: clock.now})
	next, err := b.Acquire(ctx, "r", store.LeaseRequest{Owner: "b/2/y", TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.cache.Tail("r"); !ok {
		t.Fatal("s forgot the run's tail")
	}
	before := dump(t, s)
	cp2, _ := turnStep(log, 2, 10)
	closing := cp2
	closing.Action = withAction("external", cp2.Action.Next()) // a status change: the batched path
	for _, w := range []struct {
		name  string
		write func() error
	}{
		{"checkpoint (remembered tail)", func() error { return s.Checkpoint(ctx, old, cp2) }},
		{"intent", func() error { return s.RecordIntent(ctx, old, 1, core.ToolCall{ID: "c2", Name: "charge"}) }},
		{"outcome", func() error { return s.RecordOutcome(ctx, old, 1, core.ToolResult{CallID: "c1", Output: "x"}) }},
		{"status", func() error { return s.SetStatus(ctx, old, store.StatusChange{Status: store.StatusInterrupted}) }},
		{"agent change", func() error { return s.ChangeAgent(ctx, old, []byte("other")) }},
		{"retract", func() error { return s.RetractIntent(ctx, old, 1, "c1") }},
		{"renew", func() error { _, err := s.Renew(ctx, old, time.Hour); return err }},
		{"release", func() error { return s.Release(ctx, old) }},
		{"checkpoint (read back)", func() error { return s.Checkpoint(ctx, old, cp2) }},
		{"checkpoint (status change, read back)", func() error { return s.Checkpoint(ctx, old, closing) }},
		{"checkpoint (stale seq)", func() error { return s.Checkpoint(ctx, old, cp) }},
	} {
		if err := w.write(); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("%s with a lost lease: %v, want store.ErrLeaseLost", w.name, err)
		}
	}
	if after := dump(t, s); !bytes.Equal(before, after) {
		t.Fatalf("a write with a lost lease changed the database:\n%s\n---\n%s", before, after)
	}
	// The old holder's status-changing checkpoint on its remembered tail
	// (the batched path) writes nothing either.
	s.cache.SetTail("r", codecTail(t, s, "r"))
	if err := s.Checkpoint(ctx, old, closing); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a batched checkpoint with a lost lease: %v", err)
	}
	if after := dump(t, s); !bytes.Equal(before, after) {
		t.Fatal("a batched checkpoint with a lost lease changed the database")
	}
	// The new holder writes.
	if err := b.Checkpoint(ctx, next, cp2); err != nil {
		t.Fatal(err)
	}
	if err := b.RecordOutcome(ctx, next, 1, core.ToolResult{CallID: "c1", Output: "done"}); err != nil {
		t.Fatal(err)
	}
	// A released lease fences nothing either, on the common path included.
	if err := b.Release(ctx, next); err != nil {
		t.Fatal(err)
	}
	cp3, _ := turnStep(cp2.Action.Next().Messages, 3, 10)
	if err := b.Checkpoint(ctx, next, cp3); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("checkpoint with a released lease: %v", err)
	}
}

// codecTail reads the run's tail as a checkpoint would.
func codecTail(t *testing.T, s *Postgres, id string) codec.Tail {
	t.Helper()
	tl, _, _, _, err := s.readTail(context.Background(), id, 1)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// dump is every row of the run tables, for comparing before and after.
func dump(t *testing.T, s *Postgres) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, q := range []string{
		`SELECT id, status, reason, lease_owner, lease_token, lease_expires_ns, updated_ns, retry_ns FROM runs ORDER BY rk`,
		`SELECT rk, seq, sum FROM steps ORDER BY rk, seq`,
		`SELECT rk, seq_from, sum FROM segments ORDER BY rk, seq_from`,
		`SELECT ord, call_id, coalesce(result, ''), sum FROM intents ORDER BY ord`,
		`SELECT ord, config FROM agent_changes ORDER BY ord`,
		`SELECT digest FROM tool_lists ORDER BY digest`,
	} {
		rows, err := s.pool.Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&b, vals...)
		}
		rows.Close()
	}
	return b.Bytes()
}

// TestRacingAcquirersOneWins: 8 drivers, each on its own store, race for
// one run, over and over; exactly one gets the lease each time, the others
// store.ErrBusy.
func TestRacingAcquirersOneWins(t *testing.T) {
	t.Parallel()
	s := openWith(t, nil) // the database's clock, as the other stores
	stores := []*Postgres{s}
	for range 7 {
		stores = append(stores, reopen(t, s, nil))
	}
	ctx := context.Background()
	for round := range 50 {
		id := fmt.Sprintf("run-%02d", round)
		if _, err := s.CreateRun(ctx, store.NewRun{ID: id, Agent: "x", Initial: baseState("q", nil)}); err != nil {
			t.Fatal(err)
		}
		var wins, busy atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, st := range stores {
			wg.Go(func() {
				<-start
				_, err := st.Acquire(ctx, id, store.LeaseRequest{Owner: fmt.Sprintf("host/%d/n", i), TTL: time.Minute})
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, store.ErrBusy):
					busy.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 || busy.Load() != 7 {
			t.Fatalf("round %d: %d won, %d busy", round, wins.Load(), busy.Load())
		}
	}
}

// TestFenceHoldsAgainstAcquire: a driver checkpoints as fast as it can
// while another takes the run over. Whatever the interleaving, once the
// take-over returns, the old driver commits no further step: the step the
// new holder reads back right after acquiring stays the last until it
// writes. (The fenced insert locks the run's row FOR SHARE; without that,
// an insert that checked the token just before the take-over committed
// could commit just after it.) Odd rounds change the status at every other
// step, so that the batched checkpoint races too.
func TestFenceHoldsAgainstAcquire(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	other := reopen(t, s, nil)
	ctx := context.Background()
	for round := range 20 {
		id := fmt.Sprintf("r%02d", round)
		old, err := s.CreateRun(ctx, store.NewRun{ID: id, Agent: "x", Initial: synthInitial(id), Owner: "old/1/x", LeaseTTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		g := newSynth(id)
		var wg sync.WaitGroup
		var lost atomic.Bool
		wg.Go(func() {
			for !lost.Load() {
				cp := g.next()
				if round%2 == 1 && cp.Seq%2 == 0 {
					// A pause and a resume at every other step: the
					// status changes, the checkpoint is a batch.
					cp.Action = withAction("external", cp.Action.Next())
				}
				err := s.Checkpoint(ctx, old, cp)
				if errors.Is(err, store.ErrLeaseLost) {
					lost.Store(true)
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
		time.Sleep(time.Duration(round%5) * time.Millisecond)
		if _, err := other.Acquire(ctx, id, store.LeaseRequest{Owner: "new/2/y", TTL: time.Hour, TakeOver: &old}); err != nil {
			t.Fatal(err)
		}
		seen, err := other.LoadLatest(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if !lost.Load() {
			t.Fatal("the old driver never lost its lease")
		}
		after, err := other.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if after.LastSeq != seen.Seq {
			t.Fatalf("round %d: the new holder read step %d after taking over, then the old one wrote up to %d", round, seen.Seq, after.LastSeq)
		}
	}
}

func TestStalledStatusAndAgentChanges(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	s := openWith(t, &Options{Now: clock.now})
	ctx := context.Background()
	l, err := s.CreateRun(ctx, store.NewRun{ID: "r", Agent: "x", Config: []byte("v1"), Initial: baseState("q", nil), Owner: "a/1/x", LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	retry := clock.now().Add(30 * time.Second)
	if err := s.SetStatus(ctx, l, store.StatusChange{Status: store.StatusStalled, Reason: "429 Too Many Requests", RetryAt: retry}); err != nil {
		t.Fatal(err)
	}
	info, _ := s.Run(ctx, "r")
	if info.Status != store.StatusStalled || info.Reason != "429 Too Many Requests" || !info.RetryAt.Equal(retry) || info.Orphaned(clock.now()) {
		t.Fatalf("stalled run: %+v", info)
	}
	if runs, _ := s.ListRuns(ctx, store.Filter{Statuses: []store.Status{store.StatusStalled, store.StatusInterrupted}}); len(runs) != 1 {
		t.Fatalf("filter by statuses: %d runs", len(runs))
	}
	if err := s.ChangeAgent(ctx, l, []byte("v2")); err != nil {
		t.Fatal(err)
	}
	cp, _ := turnStep(nil, 1, 10)
	if err := s.Checkpoint(ctx, l, cp); err != nil {
		t.Fatal(err)
	}
	if err := s.ChangeAgent(ctx, l, nil); err != nil { // an empty config is a config
		t.Fatal(err)
	}
	if err := s.ChangeAgent(ctx, l, []byte("v3")); err != nil {
		t.Fatal(err)
	}
	info, _ = s.Run(ctx, "r")
	changes, err := s.AgentChanges(ctx, "r")
	if err != nil || string(info.Config) != "v3" || string(info.StartConfig) != "v1" || len(changes) != 3 || changes[0].Seq != 0 ||
		string(changes[0].Config) != "v2" || changes[1].Seq != 1 || changes[1].Config == nil || len(changes[1].Config) != 0 {
		t.Fatalf("config %q, changes %+v, %v", info.Config, changes, err)
	}
	if info.Status != store.StatusRunning || !info.RetryAt.IsZero() {
		t.Fatalf("a checkpoint after a stall: %+v", info)
	}
	// Export and import carry the changes, byte for byte.
	var first, again bytes.Buffer
	if err := s.Export(ctx, "r", &first); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(first.Bytes(), []byte(`"agent_changes":[{"seq":0,`)) {
		t.Fatalf("export lacks the agent changes:\n%s", first.String()[:300])
	}
	other := openWith(t, &Options{Now: newManualClock().now})
	if _, err := other.Import(ctx, bytes.NewReader(first.Bytes())); err != nil {
		t.Fatal(err)
	}
	if err := other.Export(ctx, "r", &again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), again.Bytes()) {
		t.Fatal("export after import differs")
	}
	if got, _ := other.AgentChanges(ctx, "r"); len(got) != 3 || string(got[2].Config) != "v3" {
		t.Fatalf("imported changes: %+v", got)
	}
	if ri, _ := other.Run(ctx, "r"); ri.Lease.Owner != "" {
		t.Fatalf("an imported run carries a lease: %+v", ri.Lease)
	}
	// A corrupt change is caught.
	exec(t, s, `UPDATE agent_changes SET config = 'v9' WHERE seq = 1 AND config = 'v3'`)
	if _, err := s.AgentChanges(ctx, "r"); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("corrupt change: %v", err)
	}
}
