// Command wake measures how long a goroutine parked on a channel takes to
// run once another sends to it, while the sender keeps its processor and
// the others idle: the latency of waking an idle thread (in a VM, maybe a
// halted virtual CPU) to take the goroutine. run.sh runs it at GOMAXPROCS
// 2 and all cores (docs/performance.md, "The sixth round").
package main

import (
	"fmt"
	"slices"
	"time"
)

func main() {
	const n = 2000
	ch := make(chan time.Time)
	got := make(chan time.Duration, n)
	go func() {
		for t0 := range ch {
			got <- time.Since(t0)
		}
	}()
	var lat []time.Duration
	for range n {
		time.Sleep(500 * time.Microsecond)
		// Stay busy a little, so that another thread must take the
		// receiver.
		ch <- time.Now()
		for end := time.Now().Add(20 * time.Microsecond); time.Now().Before(end); {
		}
		lat = append(lat, <-got)
	}
	slices.Sort(lat)
	fmt.Printf("wake latency over %d wakes: p50 %v p90 %v p99 %v max %v\n", n, lat[n/2], lat[n*9/10], lat[n*99/100], lat[n-1])
}
