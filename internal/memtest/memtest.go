// Package memtest measures what a test's code allocates, for the tests
// that bound memory (issue 24: sizes checked before reading): the bytes a
// call allocates, the most heap it holds, and a bound that widens under
// the race detector, whose bookkeeping allocates beside the code.
package memtest

import (
	"runtime"
	"runtime/debug"
	"time"
)

// Allocated is how many bytes fn allocates in this process
// (runtime.MemStats.TotalAlloc): everything it read or decoded, kept or
// not, and what other goroutines allocate meanwhile.
func Allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// PeakHeap is the most heap fn held at once above what was live before,
// sampled every millisecond with the collector at GOGC=10 (so the heap
// stays close to what is live).
func PeakHeap(fn func()) uint64 {
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	stop, peak := make(chan struct{}), make(chan uint64)
	go func() {
		var m runtime.MemStats
		var most uint64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&m)
			most = max(most, m.HeapAlloc)
			select {
			case <-stop:
				peak <- most
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(stop)
	return max(<-peak, base.HeapAlloc) - base.HeapAlloc
}

// Under reports whether n bytes fit bound, widened by half under the race
// detector (its bookkeeping allocated 10-20% past the bounds, measured).
func Under(n, bound uint64) bool { return float64(n) <= raceSlack*float64(bound) }
