package sqlite

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWriters: 16 goroutines here and 3 child processes of 4
// goroutines each append to their own runs of one database file at once.
// Nothing fails (no SQLITE_BUSY) and nothing is lost.
func TestConcurrentWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	const (
		goroutines = 16
		processes  = 3
		perProcess = 4
		steps      = 150
	)
	path := filepath.Join(t.TempDir(), "concurrent.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	var all []string
	var wg sync.WaitGroup
	for p := 0; p < processes; p++ {
		var ids []string
		for g := 0; g < perProcess; g++ {
			ids = append(ids, fmt.Sprintf("proc%d-run%d", p, g))
		}
		all = append(all, ids...)
		cmd, out := helperProcess(t, "append", "STORE_PATH="+path, "STORE_RUNS="+strings.Join(ids, ","), fmt.Sprintf("STORE_STEPS=%d", steps))
		out.Close()
		wg.Go(func() {
			if err := cmd.Wait(); err != nil {
				t.Errorf("process %d: %v", p, err)
			}
		})
	}
	var ids []string
	for g := 0; g < goroutines; g++ {
		ids = append(ids, fmt.Sprintf("local-run%d", g))
	}
	all = append(all, ids...)
	if err := appendRuns(path, ids, steps); err != nil {
		t.Error(err)
	}
	// And through the same store as readers use, while the others write.
	wg.Wait()
	for _, id := range all {
		if last := verifyRun(t, s, id); last != steps {
			t.Errorf("run %s ends at step %d, want %d", id, last, steps)
		}
	}
}
