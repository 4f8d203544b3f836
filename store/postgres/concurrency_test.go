package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store"
)

// TestConcurrentWriters: 50 runs appended at once through three stores on
// one schema (as three processes would), each run by its own goroutine,
// while readers list and load: nothing fails and nothing is lost; every
// run holds exactly its steps, each as it was saved.
func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("50 runs of 150 steps")
	}
	const runs, steps = 50, 150
	s := openWith(t, &Options{MaxConns: 8})
	stores := []*Postgres{s, reopen(t, s, &Options{MaxConns: 8}), reopen(t, s, &Options{MaxConns: 8})}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, runs)
	done := make(chan struct{})
	for i := range runs {
		wg.Go(func() {
			st := stores[i%len(stores)]
			id := fmt.Sprintf("run-%02d", i)
			l, err := st.CreateRun(ctx, store.NewRun{ID: id, Agent: "concurrent", Initial: synthInitial(id), Owner: "c/1/" + id, LeaseTTL: time.Hour})
			if errs[i] = err; err != nil {
				return
			}
			g := newSynth(id)
			for range steps {
				if errs[i] = st.Checkpoint(ctx, l, g.next()); errs[i] != nil {
					return
				}
			}
		})
	}
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
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for i := range runs {
		id := fmt.Sprintf("run-%02d", i)
		g := newSynth(id)
		n := 0
		err := stores[(i+1)%len(stores)].Steps(ctx, id, func(rec store.StepRecord) error {
			if rec.Seq != n {
				return fmt.Errorf("step %d, want %d", rec.Seq, n)
			}
			if n > 0 {
				want := g.next()
				if !bytes.Equal(encAction(t, rec.Action), encAction(t, want.Action)) || !bytes.Equal(encResult(t, rec.Result), encResult(t, want.Result)) {
					return fmt.Errorf("step %d differs from what was saved", n)
				}
				if len(rec.State.Messages) != len(want.Action.Next().Messages) {
					return fmt.Errorf("step %d: %d messages", n, len(rec.State.Messages))
				}
			}
			n++
			return nil
		})
		if err != nil || n != steps+1 {
			t.Fatalf("run %s: %d steps, %v", id, n, err)
		}
	}
}
