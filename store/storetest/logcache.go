package storetest

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// CacheStats is what Harness.LogCache reports of a store's log cache.
type CacheStats struct {
	Runs                 int   // runs whose log it holds
	Bytes, Budget        int64 // what it holds, and may
	Hits, Misses, Evicts int64 // loads it served, loads that read everything, runs evicted
}

// logCacheStore opens, through h.LogCache, a store on s's database whose
// log cache holds at most budget bytes (negative: none).
func logCacheStore(t *testing.T, h Harness, s store.Store, budget int64) (store.Store, func() CacheStats) {
	t.Helper()
	if h.LogCache == nil {
		t.Skip("storetest: Harness.LogCache is nil")
	}
	o, stats := h.LogCache(t, s, budget)
	t.Cleanup(func() { o.Close() })
	return o, stats
}

// cacheRun writes run id through s: steps of TurnStep, and from step
// quiet on, for quietSteps steps, steps that add no message (so that a
// stretch of segments is stored as no segment at all). It calls each with
// every step after its checkpoint, and returns the state of every step.
func cacheRun(t *testing.T, s store.Store, id string, steps, quiet, quietSteps int, each func(seq int, st core.State)) []core.State {
	t.Helper()
	ctx := context.Background()
	st0 := initial(id)
	l, err := s.CreateRun(ctx, store.NewRun{ID: id, Agent: "agent", Input: "question " + id, Initial: st0, Owner: "test/1/" + id, LeaseTTL: time.Hour})
	must(t, err)
	states := []core.State{st0}
	log := st0.Messages
	for seq := 1; seq <= steps; seq++ {
		var cp store.Checkpoint
		if seq >= quiet && seq < quiet+quietSteps {
			st := BaseState("question", log[:len(log):len(log)])
			st.Counters = core.Counters{Steps: seq}
			cp = store.Checkpoint{Seq: seq, Action: WithAction("model", st)}
		} else {
			cp, log = TurnStep(log, seq, 150+seq%7*40)
		}
		must(t, s.Checkpoint(ctx, l, cp))
		states = append(states, cp.Action.Next())
		if each != nil {
			each(seq, states[seq])
		}
	}
	return states
}

// sameState fails unless rec is step seq holding st, byte for byte.
func sameState(t fataler, what string, rec store.StepRecord, seq int, st core.State) {
	t.Helper()
	if rec.Seq != seq {
		t.Fatal(fmt.Sprintf("%s: step %d, want %d", what, rec.Seq, seq))
	}
	if got, want := encState(t, rec.State), encState(t, st); !bytes.Equal(got, want) {
		t.Fatal(fmt.Sprintf("%s: step %d: the state differs (%d messages, want %d)", what, seq, len(rec.State.Messages), len(st.Messages)))
	}
}

// testLogCacheSameBytes: loads served by a store's log cache return, byte
// for byte, what a store without one returns and what was saved: the
// latest state after every step of a run of several segments with a
// stretch stored as no segment, every step in a scrambled order (earlier
// ones, which read everything, between later ones), and StepsFrom.
func testLogCacheSameBytes(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	cached, stats := logCacheStore(t, h, s, 0)
	plain, _ := logCacheStore(t, h, s, -1)
	steps := 5*64 + 23
	states := cacheRun(t, s, "r", steps, 100, 140, func(seq int, st core.State) {
		rec, err := cached.LoadLatest(ctx, "r")
		must(t, err)
		sameState(t, "cached LoadLatest", rec, seq, st)
		if seq%9 == 0 {
			rec, err := plain.LoadLatest(ctx, "r")
			must(t, err)
			sameState(t, "uncached LoadLatest", rec, seq, st)
		}
	})
	if st := stats(); st.Hits < int64(steps)/2 || st.Runs != 1 {
		t.Fatalf("the cache served %d loads of %d and holds %d runs, want most and 1", st.Hits, steps, st.Runs)
	}
	for i := range steps + 1 {
		seq := i * 37 % (steps + 1) // every step once, out of order
		rec, err := cached.LoadStep(ctx, "r", seq)
		must(t, err)
		sameState(t, "cached LoadStep", rec, seq, states[seq])
	}
	for _, from := range []int{0, 63, 64, 65, 200, 250, steps - 2} {
		seq := from
		must(t, cached.StepsFrom(ctx, "r", from, func(rec store.StepRecord) error {
			sameState(t, fmt.Sprintf("StepsFrom(%d)", from), rec, seq, states[seq])
			seq++
			return nil
		}))
		if seq != steps+1 {
			t.Fatalf("StepsFrom(%d) ended at %d", from, seq)
		}
	}
	rec, err := cached.LoadLatest(ctx, "r")
	must(t, err)
	sameState(t, "cached LoadLatest at the end", rec, steps, states[steps])
}

// testLogCacheAppend: appending to a loaded state's messages, as the core
// does, copies them: it changes neither what later loads return nor the
// state loaded earlier, while the cache extends the log it shares.
func testLogCacheAppend(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	cached, _ := logCacheStore(t, h, s, 0)
	l, g := create(t, s, "r", nil)
	for range 70 {
		must(t, s.Checkpoint(ctx, l, g.next()))
	}
	first, err := cached.LoadLatest(ctx, "r")
	must(t, err)
	want := encState(t, first.State)
	a := append(first.State.Messages, core.Message{Role: core.RoleUser, Content: "appended once"})
	b := append(first.State.Messages, core.Message{Role: core.RoleUser, Content: "appended twice"}, core.Message{Role: core.RoleUser, Content: "and more"})
	if a[len(a)-1].Content != "appended once" || len(b) != len(a)+1 {
		t.Fatal("the two appends share their slots")
	}
	// A step before the latest: its messages are a prefix of the latest's.
	early, err := cached.LoadStep(ctx, "r", 66)
	must(t, err)
	_ = append(early.State.Messages, core.Message{Role: core.RoleUser, Content: "appended early"})
	again, err := cached.LoadLatest(ctx, "r")
	must(t, err)
	if !bytes.Equal(encState(t, again.State), want) {
		t.Fatal("an append to a loaded state changed the next load")
	}
	for range 80 { // past the next segment
		must(t, s.Checkpoint(ctx, l, g.next()))
		rec, err := cached.LoadLatest(ctx, "r")
		must(t, err)
		rec.State.Messages = append(rec.State.Messages, core.Message{Role: core.RoleUser, Content: "x"})
	}
	if !bytes.Equal(encState(t, first.State), want) {
		t.Fatal("later loads changed a state loaded earlier")
	}
	last := g.next()
	must(t, s.Checkpoint(ctx, l, last))
	plain, _ := logCacheStore(t, h, s, -1)
	for _, st := range []store.Store{plain, cached} {
		rec, err := st.LoadLatest(ctx, "r")
		must(t, err)
		sameState(t, "after appends", rec, last.Seq, last.Action.Next())
	}
}

// testLogCacheBudget: the cache holds no more than its budget, evicting
// the runs least recently loaded, and keeps no run whose log alone passes
// it; loads return the same bytes whatever it holds.
func testLogCacheBudget(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	runs := map[string][]core.State{}
	for i := range 6 {
		id := fmt.Sprintf("r%d", i)
		runs[id] = cacheRun(t, s, id, 150, 0, 0, nil)
	}
	for _, budget := range []int64{160 << 10, 24 << 10} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			cached, stats := logCacheStore(t, h, s, budget)
			for round := range 3 {
				for i := range 6 {
					for _, id := range []string{fmt.Sprintf("r%d", i), "r0"} { // r0 the most used
						rec, err := cached.LoadLatest(ctx, id)
						must(t, err)
						sameState(t, fmt.Sprintf("round %d %s", round, id), rec, 150, runs[id][150])
						if st := stats(); st.Bytes > st.Budget || st.Budget != budget {
							t.Fatalf("the cache holds %d bytes, budget %d (want %d)", st.Bytes, st.Budget, budget)
						}
					}
				}
			}
			st := stats()
			if st.Evicts == 0 || st.Runs >= 6 {
				t.Fatalf("a budget of %d for 6 runs: %d evicted, %d held", budget, st.Evicts, st.Runs)
			}
			if budget == 160<<10 && (st.Runs == 0 || st.Hits == 0) {
				t.Fatalf("a budget of %d holds %d runs, served %d loads: want some", budget, st.Runs, st.Hits)
			}
			if budget == 24<<10 && st.Runs != 0 {
				t.Fatalf("a budget of %d holds %d runs larger than it", budget, st.Runs)
			}
		})
	}
}

// testLogCacheConcurrent: while a writer checkpoints a run through a
// store, several goroutines load it from the same store (the latest step
// and earlier ones) and each gets exactly the state saved at the step it
// got. Run it with -race.
func testLogCacheConcurrent(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	cached, _ := logCacheStore(t, h, s, 0)
	l, g := create(t, cached, "r", nil)
	steps := 3*64 + 10
	if testing.Short() {
		steps = 64 + 10
	}
	var mu sync.Mutex
	want := map[int][]byte{0: encState(t, initial("r"))}
	var done atomic.Bool
	var readers sync.WaitGroup
	for i := range 4 {
		readers.Go(func() {
			for n := 0; !done.Load(); n++ {
				rec, err := cached.LoadLatest(ctx, "r")
				if i%2 == 1 && n%3 == 0 && err == nil && rec.Seq > 0 {
					rec, err = cached.LoadStep(ctx, "r", rec.Seq*n%rec.Seq)
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				w, ok := want[rec.Seq]
				mu.Unlock()
				got, err := core.EncodeState(rec.State)
				if !ok || err != nil || !bytes.Equal(got, w) {
					t.Errorf("reader %d: step %d differs from what was saved", i, rec.Seq)
					return
				}
			}
		})
	}
	for range steps {
		cp := g.next()
		mu.Lock()
		want[cp.Seq] = encState(t, cp.Action.Next())
		mu.Unlock()
		if err := cached.Checkpoint(ctx, l, cp); err != nil {
			t.Error(err)
			break
		}
	}
	done.Store(true)
	readers.Wait()
}
