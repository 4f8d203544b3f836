package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store"
)

// testCheckpointCancelled: a checkpoint under a cancelled context fails
// with context.Canceled and writes nothing.
func testCheckpointCancelled(t *testing.T, h Harness) {
	s := open(t, h, nil)
	st := newRun(t, s, "r1")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cp, _ := turnStep(st.Messages, 1, 10)
	if err := s.Checkpoint(ctx, leaseOf(t, s, "r1"), cp); !errors.Is(err, context.Canceled) {
		t.Fatalf("checkpoint under a cancelled context: %v", err)
	}
	idle(t, h, s)
	if info, err := s.Run(context.Background(), "r1"); err != nil || info.LastSeq != 0 {
		t.Fatalf("after a cancelled checkpoint: %+v, %v", info, err)
	}
}

// testFenceHoldsAgainstAcquire: a driver checkpoints as fast as it can
// while another, on another store, takes the run over. Whatever the
// interleaving, once the take-over returns, the old driver commits no
// further step: the step the new holder reads back right after acquiring
// stays the last. Odd rounds change the status at every other step, so
// that checkpoints that change the status race too.
func testFenceHoldsAgainstAcquire(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	other := reopen(t, h, s, nil)
	for round := range 20 {
		id := fmt.Sprintf("r%02d", round)
		old, err := s.CreateRun(ctx, store.NewRun{ID: id, Agent: "x", Initial: initial(id), Owner: "old/1/x", LeaseTTL: time.Hour})
		must(t, err)
		g := newSynth(id, nil)
		var wg sync.WaitGroup
		var lost atomic.Bool
		wg.Go(func() {
			for !lost.Load() {
				cp := g.next()
				if round%2 == 1 && cp.Seq%2 == 0 {
					// A pause and a resume at every other step.
					cp.Action = withAction("external", cp.Action.Next())
				}
				err := s.Checkpoint(ctx, old, cp)
				for tries := 0; store.Unavailable(err) && tries < 100; tries++ {
					// A busy database (two stores writing at once, on a
					// loaded machine): a driver tries the same step again.
					time.Sleep(time.Millisecond)
					err = s.Checkpoint(ctx, old, cp)
				}
				if errors.Is(err, store.ErrLeaseLost) {
					lost.Store(true)
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				// As fast as it can, short of holding SQLite's one write
				// lock without a gap: a writer that commits back to back
				// leaves another process's busy handler, which looks at
				// the lock every few milliseconds, no moment to take it.
				time.Sleep(50 * time.Microsecond)
			}
		})
		time.Sleep(time.Duration(round%5) * time.Millisecond)
		_, err = other.Acquire(ctx, id, store.LeaseRequest{Owner: "new/2/y", TTL: time.Hour, TakeOver: &old})
		for tries := 0; store.Unavailable(err) && tries < 100; tries++ {
			// A busy database: a contender tries again, as a driver does.
			time.Sleep(time.Millisecond)
			_, err = other.Acquire(ctx, id, store.LeaseRequest{Owner: "new/2/y", TTL: time.Hour, TakeOver: &old})
		}
		if err != nil {
			lost.Store(true) // the old driver stops before the test ends
			wg.Wait()
			t.Fatal(err)
		}
		seen, err := other.LoadLatest(ctx, id)
		must(t, err)
		wg.Wait()
		if !lost.Load() {
			t.Fatal("the old driver never lost its lease")
		}
		after, err := other.Run(ctx, id)
		must(t, err)
		if after.LastSeq != seen.Seq {
			t.Fatalf("round %d: the new holder read step %d after taking over, then the old one wrote up to %d", round, seen.Seq, after.LastSeq)
		}
	}
}

// testAnotherWriter: a store checkpoints on the run's tail it remembers.
// When another writer (a second store on the database, as another process
// would be) took the run over and appended in between, that checkpoint
// fails whole with ErrLeaseLost, leaves nothing half done, and the next one
// reads the truth back.
func testAnotherWriter(t *testing.T, h Harness) {
	ctx := context.Background()
	a := open(t, h, nil)
	b := reopen(t, h, a, nil)
	log := newRun(t, a, "r").Messages
	var cp1, cp2, cp3 store.Checkpoint
	cp1, log = turnStep(log, 1, 10)
	must(t, a.Checkpoint(ctx, leaseOf(t, a, "r"), cp1))
	remembers(t, h, a, "r", true)
	cp2, log = turnStep(log, 2, 10)
	must(t, b.Checkpoint(ctx, leaseOf(t, b, "r"), cp2))
	// a's own step 2, with other messages: its tail says step 1 is the
	// last, and b took the run over, so a's lease no longer fences.
	mine, _ := turnStep(cp1.Action.Next().Messages, 2, 99)
	if err := a.Checkpoint(ctx, leaseOf(t, a, "r"), mine); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a appended over b's step 2, or failed otherwise: %v", err)
	}
	idle(t, h, a)
	remembers(t, h, a, "r", false)
	// a takes the run back: its step 2 is now out of order.
	forgetLease(a, "r")
	if err := a.Checkpoint(ctx, leaseOf(t, a, "r"), mine); !errors.Is(err, store.ErrSeq) {
		t.Fatalf("a's step 2 again: %v, want store.ErrSeq", err)
	}
	cp3, log = turnStep(log, 3, 10)
	if err := a.Checkpoint(ctx, leaseOf(t, a, "r"), cp3); err != nil {
		t.Fatalf("a's step 3 after b's step 2: %v", err)
	}
	rec, err := b.LoadLatest(ctx, "r")
	if err != nil || rec.Seq != 3 || len(rec.State.Messages) != len(log) || rec.State.Messages[len(log)-2].Content != cp2.Action.Next().Messages[len(log)-2].Content {
		t.Fatalf("latest: step %d, %d messages (want 3, %d): %v", rec.Seq, len(rec.State.Messages), len(log), err)
	}
}

// testStaleTailSameLease: the run's (run, seq) key is the last fence. A
// store whose remembered tail is stale while its lease is still the run's
// (a second store of the same holder appended) gets ErrSeq, writing
// nothing, and its next checkpoint reads back.
func testStaleTailSameLease(t *testing.T, h Harness) {
	ctx := context.Background()
	a := open(t, h, nil)
	b := reopen(t, h, a, nil)
	l, g := create(t, a, "r", nil)
	must(t, a.Checkpoint(ctx, l, g.next()))
	cp2 := g.next()
	must(t, b.Checkpoint(ctx, l, cp2)) // the same lease, through another store
	if err := a.Checkpoint(ctx, l, cp2); !errors.Is(err, store.ErrSeq) {
		t.Fatalf("a stale tail's step: %v, want ErrSeq", err)
	}
	idle(t, h, a)
	if err := a.Checkpoint(ctx, l, g.next()); err != nil {
		t.Fatalf("the next step, read back: %v", err)
	}
	if rec, err := b.LoadLatest(ctx, "r"); err != nil || rec.Seq != 3 {
		t.Fatalf("latest: %d %v", rec.Seq, err)
	}
}

// testStalledAndAgentChanges: a stalled run says why and when to retry and
// is listed by status; agent changes (an empty config is a config) are
// recorded at the run's last step and drive it; a checkpoint after a stall
// runs again; export and import carry the changes byte for byte, without
// the lease; with Harness.Damage, a damaged change is ErrCorrupt.
func testStalledAndAgentChanges(t *testing.T, h Harness) {
	ctx := context.Background()
	clock := newStillClock()
	s := open(t, h, clock.now)
	l, err := s.CreateRun(ctx, store.NewRun{ID: "r", Agent: "x", Config: []byte("v1"), Initial: baseState("q", nil), Owner: "a/1/x", LeaseTTL: time.Minute})
	must(t, err)
	retry := clock.now().Add(30 * time.Second)
	must(t, s.SetStatus(ctx, l, store.StatusChange{Status: store.StatusStalled, Reason: "429 Too Many Requests", RetryAt: retry}))
	info, _ := s.Run(ctx, "r")
	if info.Status != store.StatusStalled || info.Reason != "429 Too Many Requests" || !info.RetryAt.Equal(retry) || info.Orphaned(clock.now()) {
		t.Fatalf("stalled run: %+v", info)
	}
	if runs, _ := s.ListRuns(ctx, store.Filter{Statuses: []store.Status{store.StatusStalled, store.StatusInterrupted}}); len(runs) != 1 {
		t.Fatalf("filter by statuses: %d runs", len(runs))
	}
	must(t, s.ChangeAgent(ctx, l, []byte("v2")))
	cp, _ := turnStep(nil, 1, 10)
	must(t, s.Checkpoint(ctx, l, cp))
	must(t, s.ChangeAgent(ctx, l, nil)) // an empty config is a config
	must(t, s.ChangeAgent(ctx, l, []byte("v3")))
	info, _ = s.Run(ctx, "r")
	changes, err := s.AgentChanges(ctx, "r")
	if err != nil || string(info.Config) != "v3" || string(info.StartConfig) != "v1" || len(changes) != 3 || changes[0].Seq != 0 ||
		string(changes[0].Config) != "v2" || changes[1].Seq != 1 || changes[1].Config == nil || len(changes[1].Config) != 0 || changes[2].Seq != 1 {
		t.Fatalf("config %q, changes %+v, %v", info.Config, changes, err)
	}
	if info.Status != store.StatusRunning || !info.RetryAt.IsZero() {
		t.Fatalf("a checkpoint after a stall: %+v", info)
	}
	// Export and import carry the changes, byte for byte.
	var first, again bytes.Buffer
	must(t, s.Export(ctx, "r", &first))
	if !bytes.Contains(first.Bytes(), []byte(`"agent_changes":[{"seq":0,`)) {
		t.Fatalf("export lacks the agent changes:\n%.300s", first.String())
	}
	other := open(t, h, newStillClock().now)
	if _, err := other.Import(ctx, bytes.NewReader(first.Bytes())); err != nil {
		t.Fatal(err)
	}
	must(t, other.Export(ctx, "r", &again))
	if !bytes.Equal(first.Bytes(), again.Bytes()) {
		t.Fatal("export after import differs")
	}
	if got, _ := other.AgentChanges(ctx, "r"); len(got) != 3 || string(got[2].Config) != "v3" {
		t.Fatalf("imported changes: %+v", got)
	}
	if ri, _ := other.Run(ctx, "r"); ri.Lease.Owner != "" {
		t.Fatalf("an imported run carries a lease: %+v", ri.Lease)
	}
	if h.Damage == nil {
		return
	}
	h.Damage(t, s, Damage{Kind: DamageAgentChange, RunID: "r", Seq: 1, At: 1})
	if _, err := s.AgentChanges(ctx, "r"); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("corrupt change: %v", err)
	}
}
