package sqlite

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// TestGroupCommitKeepsWritesApart: many writers at once share
// transactions (batches of more than one write form), yet each write
// succeeds or fails alone: checkpoints with a lost lease write nothing and
// say so, a general write that fails is rolled back while the others of
// its batch commit, and every good checkpoint is there, in order.
func TestGroupCommitKeepsWritesApart(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	const runs, steps = 12, 40
	logs, leases := leasedRuns(t, s, runs)
	// Run 0's lease is taken over: its holder's checkpoints must fail.
	stolen := leases[0]
	if _, err := s.Acquire(ctx, "r0", store.LeaseRequest{Owner: "thief/2/y", TTL: 1e12, TakeOver: &stolen}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	var wg sync.WaitGroup
	errs := make([][]error, runs)
	var failed []error
	var mu sync.Mutex
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			log := logs[i]
			for seq := 1; seq <= steps; seq++ {
				var cp store.Checkpoint
				cp, log = turnStep(log, seq, 40)
				err := s.Checkpoint(ctx, leases[i], cp)
				errs[i] = append(errs[i], err)
				if i == 0 && seq == 1 {
					break // a lost lease: the holder stops
				}
				// A general write that fails, among the checkpoints.
				if seq%10 == 0 {
					err := s.write(ctx, "", func(tx *wtx) error {
						if _, err := tx.ExecContext(ctx, `UPDATE runs SET reason = 'must not stay' WHERE id = ?`, fmt.Sprintf("r%d", i)); err != nil {
							return err
						}
						return boom
					})
					mu.Lock()
					failed = append(failed, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if s.batch.largest < 2 {
		t.Fatalf("no batch of more than one write formed (largest %d)", s.batch.largest)
	}
	if err := errs[0][0]; !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a checkpoint with a lost lease: %v", err)
	}
	for _, err := range failed {
		if !errors.Is(err, boom) {
			t.Fatalf("the failing write: %v", err)
		}
	}
	for i := 1; i < runs; i++ {
		for seq, err := range errs[i] {
			if err != nil {
				t.Fatalf("run %d step %d: %v", i, seq+1, err)
			}
		}
	}
	for i := range runs {
		id := fmt.Sprintf("r%d", i)
		info, err := s.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want := steps
		if i == 0 {
			want = 0
		}
		if info.LastSeq != want || info.Reason != "" {
			t.Fatalf("run %s: last step %d (want %d), reason %q", id, info.LastSeq, want, info.Reason)
		}
		n := 0
		if err := s.Steps(ctx, id, func(rec store.StepRecord) error {
			if rec.Seq != n {
				return fmt.Errorf("step %d where %d was due", rec.Seq, n)
			}
			n++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGroupCommitOnOneProcessor: on one processor (GOMAXPROCS 1), writers
// that run at once still share commits: the leader lets the goroutines
// ready to run queue their writes before it takes the batch.
func TestGroupCommitOnOneProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s := openTest(t)
	ctx := context.Background()
	const runs, steps = 20, 20
	logs, leases := leasedRuns(t, s, runs)
	s.batch.mu.Lock()
	before := s.batch.batches
	s.batch.mu.Unlock()
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			log := logs[i]
			for seq := 1; seq <= steps; seq++ {
				var cp store.Checkpoint
				cp, log = turnStep(log, seq, 40)
				if err := s.Checkpoint(ctx, leases[i], cp); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	s.batch.mu.Lock()
	batches := s.batch.batches - before
	s.batch.mu.Unlock()
	if writes := runs * steps; batches*4 > writes {
		t.Fatalf("%d writes took %d commits on one processor; want them shared, at least 4 to a commit on average", writes, batches)
	}
}

// leasedRuns creates runs r0..r(n-1), each leased, and returns their
// message logs and leases.
func leasedRuns(t *testing.T, s *SQLite, n int) ([][]core.Message, []store.Lease) {
	t.Helper()
	logs := make([][]core.Message, n)
	leases := make([]store.Lease, n)
	for i := range n {
		id := fmt.Sprintf("r%d", i)
		logs[i] = newRun(t, s, id).Messages
		leases[i] = leaseOf(t, s, id)
	}
	return logs, leases
}
