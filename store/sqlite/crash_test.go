package sqlite

import (
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestCrashSafety kills a child process that appends steps with SIGKILL at
// random moments, many times. After each kill the store reopens with a
// consistent prefix of the run: every step the child reported committed is
// there, the steps are contiguous, and each loads and equals what was saved.
// Every other child is killed at a random moment after it started (while it
// opens the store, migrates it, creates or takes over the run, or appends);
// the others at a random moment after they hold the run and reach its
// first new step, so that the children append steps however long a loaded
// machine takes to start them.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	rng := rand.New(rand.NewPCG(1, 2))
	const kills = 20
	prev := -1
	for i := 0; i < kills; i++ {
		cmd, out := helperProcess(t, "append-forever", "STORE_PATH="+path, "STORE_RUN=crash")
		var mu sync.Mutex
		var committed []int
		done, ready := make(chan struct{}), make(chan struct{})
		go func() { readLines(out, &committed, &mu, ready); close(done) }()
		if i%2 == 1 {
			select {
			case <-ready:
			case <-done:
				t.Fatalf("kill %d: the child ended before it held the run", i)
			case <-time.After(time.Minute):
				t.Fatalf("kill %d: the child did not hold the run within a minute", i)
			}
		}
		time.Sleep(time.Duration(20+rng.IntN(200)) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-done
		cmd.Wait()

		s, err := Open(path, nil)
		if err != nil {
			t.Fatalf("kill %d: reopen: %v", i, err)
		}
		last := -1
		if _, err := s.Run(t.Context(), "crash"); err == nil {
			last = verifyRun(t, s, "crash")
		}
		s.Close()
		mu.Lock()
		for _, seq := range committed {
			if seq > last {
				t.Fatalf("kill %d: step %d was committed but the store ends at %d", i, seq, last)
			}
		}
		mu.Unlock()
		if last < prev {
			t.Fatalf("kill %d: the run went back from step %d to %d", i, prev, last)
		}
		t.Logf("kill %d: %d steps committed by this child, run at step %d", i, len(committed), last)
		prev = last
	}
	if prev < 10 {
		t.Fatalf("the children appended only %d steps in all; the test did not exercise much", prev)
	}
}
