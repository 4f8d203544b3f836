package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// queued is the request a common checkpoint cp of the run l holds would
// put in a batch, built on the tail s remembers.
func queued(t *testing.T, s *Postgres, l store.Lease, cp store.Checkpoint) *stepReq {
	t.Helper()
	tl, ok := s.cache.Tail(l.RunID)
	if !ok {
		t.Fatalf("run %s: no tail remembered", l.RunID)
	}
	row, _, err := codec.Build(nil, nil, tl, cp, s.now().UnixNano(), &s.tools)
	if err != nil {
		t.Fatal(err)
	}
	q := &stepReq{lead: make(chan bool, 1)}
	q.set(&row, tl.RK, l)
	return q
}

// heldRun creates run id held by owner and returns its lease.
func heldRun(t *testing.T, s *Postgres, id, owner string) store.Lease {
	t.Helper()
	l, err := s.CreateRun(context.Background(), store.NewRun{ID: id, Agent: "x", Initial: synthInitial(id), Owner: owner, LeaseTTL: 3600e9})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestStepBatch (ADR 0038): one batch inserts the steps whose leases hold
// and whose seqs are free, each by itself, and leaves the others to the
// single fenced insert, which gives each its own outcome: a lost lease, a
// seq taken. A batch that fails as a whole leaves every step unsent.
func TestStepBatch(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	leases := map[string]store.Lease{}
	synths := map[string]*synth{}
	for _, id := range []string{"a", "b", "lost", "taken"} {
		l := heldRun(t, s, id, "h/1/x")
		leases[id], synths[id] = l, newSynth(id)
	}
	reqs := map[string]*stepReq{}
	for _, id := range []string{"a", "b", "lost", "taken"} {
		reqs[id] = queued(t, s, leases[id], synths[id].next())
	}
	exec(t, s, `UPDATE runs SET lease_owner = 'other/2/y' WHERE id = 'lost'`)
	// The run "taken" gets its step 1 elsewhere (from this store, by the
	// single path) before the batch carries it.
	if _, err := s.pool.Exec(ctx, fencedInsertStepSQL, reqs["taken"].args()...); err != nil {
		t.Fatal(err)
	}
	s.sendSteps(ctx, []*stepReq{reqs["a"], reqs["lost"], reqs["b"], reqs["taken"]})
	for id, want := range map[string]bool{"a": true, "b": true, "lost": false, "taken": false} {
		if q := reqs[id]; q.sent != want || want && (q.n != 1 || q.err != nil) {
			t.Errorf("run %s: sent %v (%d rows, %v), want sent %v", id, q.sent, q.n, q.err, want)
		}
	}
	for id, want := range map[string]int{"a": 1, "b": 1, "lost": 0, "taken": 1} {
		if info, err := s.Run(ctx, id); err != nil || info.LastSeq != want {
			t.Errorf("run %s: last step %d (%v), want %d", id, info.LastSeq, err, want)
		}
	}
	// A batch that fails as a whole (here, its context ended) marks none
	// sent: each is sent again alone.
	var failed []*stepReq
	for _, id := range []string{"c", "d"} {
		l := heldRun(t, s, id, "h/1/x")
		failed = append(failed, queued(t, s, l, newSynth(id).next()))
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	s.sendSteps(ended, failed)
	for i, q := range failed {
		if q.sent {
			t.Errorf("step %d of a failed batch: sent (%d rows, %v)", i, q.n, q.err)
		}
	}
	for _, id := range []string{"c", "d"} {
		if info, err := s.Run(ctx, id); err != nil || info.LastSeq != 0 {
			t.Errorf("run %s after a failed batch: last step %d (%v), want 0", id, info.LastSeq, err)
		}
	}

	// Sent again alone, each learns its own fate.
	for id, want := range map[string]error{"lost": store.ErrLeaseLost, "taken": errStaleTail} {
		ct, err := s.pool.Exec(ctx, fencedInsertStepSQL, reqs[id].args()...)
		if err := s.inserted(ctx, leases[id], ct.RowsAffected(), err, false); !errors.Is(err, want) {
			t.Errorf("run %s alone: %v, want %v", id, err, want)
		}
	}
}

// TestStepsBatchedUnderLoad: the common checkpoints of many runs written
// at once go in batches of several steps, and every step is stored once,
// in order.
func TestStepsBatchedUnderLoad(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	const runs, steps = 48, 12
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for i := range runs {
		id := fmt.Sprintf("run-%02d", i)
		l := heldRun(t, s, id, "h/1/x")
		wg.Go(func() {
			g := newSynth(id)
			for range steps {
				if err := s.Checkpoint(ctx, l, g.next()); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range runs {
		id := fmt.Sprintf("run-%02d", i)
		var seqs []int
		if err := s.StepsFrom(ctx, id, 0, func(r store.StepRecord) error { seqs = append(seqs, r.Seq); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(seqs) != steps+1 || seqs[steps] != steps {
			t.Fatalf("run %s: steps %v", id, seqs)
		}
	}
	b := &s.steps
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.largest < 2 || b.batches >= runs*steps {
		t.Fatalf("%d checkpoints went in %d batches, the largest of %d steps: not batched", runs*steps, b.batches, b.largest)
	}
	t.Logf("%d checkpoints in %d batches, the largest of %d steps", runs*steps, b.batches, b.largest)
}

// TestStepBatchTwoWritersOfOneStep: a driver that lost its run and the
// run's new holder, in one process, write the same step at once. In
// whichever order they reach a batch, the batch credits the holder's
// insert to the holder, never to the driver that lost the run: that one
// is sent again alone, and learns it lost the lease.
func TestStepBatchTwoWritersOfOneStep(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	for _, holderFirst := range []bool{true, false} {
		id := fmt.Sprintf("run-%v", holderFirst)
		old := heldRun(t, s, id, "old/1/x")
		cp := newSynth(id).next()
		lost := queued(t, s, old, cp)
		// Another worker of this process took the run over.
		exec(t, s, `UPDATE runs SET lease_owner = 'new/2/y', lease_token = 2 WHERE id = $1`, id)
		holder := old
		holder.Owner, holder.Token = "new/2/y", 2
		held := queued(t, s, holder, cp)
		batch := []*stepReq{held, lost}
		if !holderFirst {
			batch = []*stepReq{lost, held}
		}
		s.sendSteps(ctx, batch)
		if lost.sent {
			t.Errorf("holder first %v: the lost driver's step: sent (%d rows, %v), want left to the single insert", holderFirst, lost.n, lost.err)
		}
		if holderFirst && (!held.sent || held.n != 1 || held.err != nil) {
			t.Errorf("the holder's step, first in the batch: sent %v (%d rows, %v), want inserted", held.sent, held.n, held.err)
		}
		if !holderFirst && held.sent {
			t.Errorf("the holder's step, second in the batch: sent (%d rows, %v), want left to the single insert", held.n, held.err)
		}
		// What the batch left is sent alone, as insertStep does.
		for _, w := range []struct {
			q    *stepReq
			l    store.Lease
			want error
		}{{held, holder, nil}, {lost, old, store.ErrLeaseLost}} {
			if w.q.sent {
				continue
			}
			ct, err := s.pool.Exec(ctx, fencedInsertStepSQL, w.q.args()...)
			if err := s.inserted(ctx, w.l, ct.RowsAffected(), err, false); !errors.Is(err, w.want) {
				t.Errorf("holder first %v: %s's step alone: %v, want %v", holderFirst, w.l.Owner, err, w.want)
			}
		}
		if info, err := s.Run(ctx, id); err != nil || info.LastSeq != 1 {
			t.Errorf("holder first %v: last step %d (%v), want 1", holderFirst, info.LastSeq, err)
		}
	}
}

// TestStepBatchConnectionLost: a batch whose connection is lost (its
// server process ended while it waited for a run's row) does not know
// whether it committed. Its steps get that error, which says the store is
// unavailable (store.Unavailable), so that the caller's retry finds out;
// none is sent again alone (which would take a step the batch did commit
// for a stale tail, ErrSeq).
func TestStepBatchConnectionLost(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	var batch []*stepReq
	for _, id := range []string{"e", "f"} {
		l := heldRun(t, s, id, "h/1/x")
		batch = append(batch, queued(t, s, l, newSynth(id).next()))
	}
	// Hold run f's row, so that the batch waits for it.
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var locker int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid() FROM runs WHERE id = 'f' FOR UPDATE`).Scan(&locker); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.sendSteps(ctx, batch)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var ended bool
		err := s.pool.QueryRow(ctx, `SELECT coalesce(bool_or(pg_terminate_backend(pid)), false) FROM pg_stat_activity
			WHERE $1 = ANY(pg_blocking_pids(pid))`, locker).Scan(&ended)
		if err != nil {
			t.Fatal(err)
		}
		if ended {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the batch never waited for the run's row")
		}
		time.Sleep(5 * time.Millisecond)
	}
	<-done
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for i, q := range batch {
		if !q.sent || q.n != 0 || !store.Unavailable(q.err) {
			t.Errorf("step %d of a batch whose connection was lost: sent %v (%d rows, %v), want sent with an unavailable store's error", i, q.sent, q.n, q.err)
		}
	}
	for _, id := range []string{"e", "f"} {
		if info, err := s.Run(ctx, id); err != nil || info.LastSeq != 0 {
			t.Errorf("run %s: last step %d (%v), want 0 (the batch was rolled back)", id, info.LastSeq, err)
		}
	}
}
