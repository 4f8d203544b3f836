package server

import (
	"fmt"
	"testing"
)

// TestWaitingRunsHoldNothing (issue 29): a run paused for an external tool
// holds no goroutine and no SQLite connection on the server, so what
// waiting costs in goroutines does not grow with the runs waiting (50 and
// 200 here; BenchmarkWaitingRuns measures 10,000); every run completes
// once answered, with its own result (waitingRuns checks).
func TestWaitingRunsHoldNothing(t *testing.T) {
	extra := map[int]int{}
	for _, n := range []int{50, 200} {
		t.Run(fmt.Sprintf("runs=%d", n), func(t *testing.T) {
			w := waitingRuns(t, n)
			extra[n] = w.goroutinesWaiting - w.goroutinesBefore
			t.Logf("%d runs waiting: %+d goroutines, %.0f B of heap per run, %d SQLite connections open (%d read in use)",
				n, extra[n], w.heapPerRun(), w.readConns+w.writeConns, w.readInUse)
			if extra[n] > 8 {
				t.Errorf("%d runs waiting: %d goroutines more than before them", n, extra[n])
			}
			if w.readInUse != 0 {
				t.Errorf("%d runs waiting: %d read connections in use", n, w.readInUse)
			}
			if w.completed != n || w.errors != 0 {
				t.Errorf("%d runs: %d completed, %d errors", n, w.completed, w.errors)
			}
		})
	}
	if extra[200]-extra[50] > 4 {
		t.Errorf("goroutines while waiting grow with the runs: %+d for 50, %+d for 200", extra[50], extra[200])
	}
}
