package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store"
)

// testConcurrentRuns: 50 runs driven at once through three stores on one
// database (as three processes would), each run by its own goroutine
// checkpointing as fast as it can, while a reader lists and loads: nothing
// fails, nothing is lost, and every run holds exactly its steps, each as
// it was saved. (-short: 40 steps a run instead of 150.)
func testConcurrentRuns(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	stores := []store.Store{s, reopen(t, h, s, nil), reopen(t, h, s, nil)}
	runs, steps := 50, 150
	if testing.Short() {
		steps = 40
	}
	var wg sync.WaitGroup
	errs := make([]error, runs)
	for i := range runs {
		wg.Go(func() {
			st := stores[i%len(stores)]
			id := fmt.Sprintf("run-%02d", i)
			l, err := st.CreateRun(ctx, store.NewRun{ID: id, Agent: "concurrent", Initial: initial(id), Owner: "t/1/" + id, LeaseTTL: time.Hour})
			if errs[i] = err; err != nil {
				return
			}
			g := newSynth(id, tools(1))
			for range steps {
				if errs[i] = st.Checkpoint(ctx, l, g.next()); errs[i] != nil {
					return
				}
			}
		})
	}
	done := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := s.ListRuns(ctx, store.Filter{Agent: "concurrent", Limit: 10}); err != nil {
				t.Error(err)
				return
			}
			if _, err := s.LoadLatest(ctx, "run-07"); err != nil && !errors.Is(err, store.ErrNotFound) {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	close(done)
	readers.Wait()
	must(t, errors.Join(errs...))
	for i := range runs {
		id := fmt.Sprintf("run-%02d", i)
		g := newSynth(id, tools(1))
		n := 0
		must(t, stores[(i+1)%len(stores)].Steps(ctx, id, func(rec store.StepRecord) error {
			if rec.Seq != n {
				return fmt.Errorf("run %s: step %d out of order", id, rec.Seq)
			}
			if n > 0 {
				want := g.next()
				if encoded(t, rec.Action, rec.State, rec.Result) != encoded(t, want.Action, want.Action.Next(), want.Result) {
					return fmt.Errorf("run %s: step %d differs from what was saved", id, n)
				}
			}
			n++
			return nil
		}))
		if n != steps+1 {
			t.Fatalf("run %s has %d steps", id, n)
		}
	}
}

// testRacingAcquirers: 8 drivers, each on its own store, race for one run,
// released at once, over and over: exactly one gets the lease each time,
// the others ErrBusy; the winner alone can then write.
func testRacingAcquirers(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	stores := []store.Store{s}
	for range 7 {
		stores = append(stores, reopen(t, h, s, nil))
	}
	for round := range 50 {
		id := fmt.Sprintf("race-%02d", round)
		if _, err := s.CreateRun(ctx, store.NewRun{ID: id, Agent: "agent", Initial: initial(id)}); err != nil {
			t.Fatal(err)
		}
		var wins, busy atomic.Int32
		leases := make([]store.Lease, len(stores))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, st := range stores {
			wg.Go(func() {
				<-start
				l, err := st.Acquire(ctx, id, store.LeaseRequest{Owner: fmt.Sprintf("host/%d/n", i), TTL: time.Minute})
				switch {
				case err == nil:
					wins.Add(1)
					leases[i] = l
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
		g := newSynth(id, nil)
		cp := g.next()
		written := 0
		for i, st := range stores {
			l := leases[i]
			if l.Owner == "" {
				l = store.Lease{RunID: id, Owner: fmt.Sprintf("host/%d/n", i), Token: 1}
			}
			if err := st.Checkpoint(ctx, l, cp); err == nil {
				written++
			} else if !errors.Is(err, store.ErrLeaseLost) {
				t.Fatalf("round %d: a loser's checkpoint: %v", round, err)
			}
		}
		if written != 1 {
			t.Fatalf("round %d: %d stores wrote the step", round, written)
		}
	}
}

// testWriteSize: what a step writes does not grow with the run (the bytes
// of steps 9,900-10,000 within 1.5x of steps 0-100), nor with the agent's
// tool list (16 tools within 1.3x of one: a list is stored once, not with
// every model call).
func testWriteSize(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	grow := func(id string, tl int, from, to int) float64 {
		t.Helper()
		l, g := create(t, s, id, tools(tl))
		var before int64
		for seq := 1; seq <= to; seq++ {
			if seq == from+1 {
				before = h.Size(t, s, id)
			}
			must(t, s.Checkpoint(ctx, l, g.next()))
		}
		return float64(h.Size(t, s, id)-before) / float64(to-from)
	}
	early := grow("early", 1, 0, 128)
	late := grow("late", 1, 9984, 10112)
	if late > 1.5*early {
		t.Errorf("bytes per step grow with the run: %.0f at step 10,000, %.0f at step 0", late, early)
	}
	one := grow("one-tool", 1, 0, 2048)
	sixteen := grow("sixteen-tools", 16, 0, 2048)
	if sixteen > 1.3*one {
		t.Errorf("bytes per step grow with the tool list: %.0f with 16 tools, %.0f with one", sixteen, one)
	}
	t.Logf("bytes per step: %.0f at step 0, %.0f at step 10,000; %.0f with one tool, %.0f with 16", early, late, one, sixteen)
}

// testClaim: a worker claims the oldest runnable run: running with no live
// lease (new, or its driver's lease expired) or stalled with its retry time
// come; never a held, paused, interrupted, waiting or ended one. Workers
// racing, each on its own store, claim every runnable run exactly once.
func testClaim(t *testing.T, h Harness) {
	ctx := context.Background()
	clock := NewClock()
	s := open(t, h, clock.Now)
	req := store.LeaseRequest{Owner: "worker/1/w", TTL: time.Hour}
	if _, err := s.Claim(ctx, req); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a claim with nothing runnable: %v", err)
	}
	// "held" and "expired" are held for lapse, real time: leases lapse on
	// a clock the test's clock does not move (see clock.go).
	const lapse = 2 * time.Second
	created := time.Now()
	mk := func(id string, held bool) (store.Lease, *synth) {
		clock.Add(time.Second)
		owner := ""
		if held {
			owner = "t/1/" + id
		}
		l, err := s.CreateRun(ctx, store.NewRun{ID: id, Agent: "agent", Initial: initial(id), Owner: owner, LeaseTTL: lapse})
		must(t, err)
		return l, newSynth(id, nil)
	}
	mk("new", false)
	mk("held", true)
	l, g := mk("paused", true)
	must(t, s.Checkpoint(ctx, l, g.pause()))
	must(t, s.Release(ctx, l))
	l, _ = mk("interrupted", true)
	must(t, s.SetStatus(ctx, l, store.StatusChange{Status: store.StatusInterrupted}))
	must(t, s.Release(ctx, l))
	l, _ = mk("stalled-later", true)
	must(t, s.SetStatus(ctx, l, store.StatusChange{Status: store.StatusStalled, RetryAt: clock.Now().Add(time.Hour)}))
	must(t, s.Release(ctx, l))
	l, _ = mk("stalled-now", true)
	must(t, s.SetStatus(ctx, l, store.StatusChange{Status: store.StatusStalled, RetryAt: clock.Now()}))
	must(t, s.Release(ctx, l))
	l, g = mk("done", true)
	must(t, s.Checkpoint(ctx, l, g.ending("complete")))
	must(t, s.Release(ctx, l))
	mk("expired", true) // its driver's lease expires below
	made := time.Now()
	var got []string
	claimAll := func() {
		for {
			l, err := s.Claim(ctx, req)
			if errors.Is(err, store.ErrNotFound) {
				break
			}
			must(t, err)
			if l.Owner != req.Owner || l.Token < 1 {
				t.Fatalf("claimed lease %+v", l)
			}
			got = append(got, l.RunID)
			if len(got) > 10 {
				t.Fatalf("claims never end: %v", got)
			}
		}
	}
	clock.Add(2 * time.Minute) // "stalled-now" is due
	claimAll()
	if time.Since(created) < lapse && fmt.Sprint(got) != "[new stalled-now]" {
		t.Fatalf("claimed %v while two runs were held", got)
	}
	time.Sleep(time.Until(made.Add(lapse + 10*time.Millisecond)))
	clock.Add(2 * time.Minute)
	claimAll() // "held" and "expired" lapsed
	if fmt.Sprint(got) != "[new stalled-now held expired]" {
		t.Fatalf("claimed %v", got)
	}
	// A claimed run is held: its new holder writes, another claim skips it.
	if ri, _ := s.Run(ctx, "new"); ri.Lease.Owner != req.Owner {
		t.Fatalf("the claimed run's lease: %+v", ri.Lease)
	}

	// Racing workers.
	const runs, workers = 40, 6
	for i := range runs {
		mk(fmt.Sprintf("race-%02d", i), false)
	}
	stores := []store.Store{s}
	for range workers - 1 {
		stores = append(stores, reopen(t, h, s, clock.Now))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for i, st := range stores {
		wg.Go(func() {
			for {
				l, err := st.Claim(ctx, store.LeaseRequest{Owner: fmt.Sprintf("worker/%d/w", i), TTL: time.Hour})
				if errors.Is(err, store.ErrNotFound) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[l.RunID]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for i := range runs {
		if id := fmt.Sprintf("race-%02d", i); seen[id] != 1 {
			t.Fatalf("%s claimed %d times", id, seen[id])
		}
	}
}
