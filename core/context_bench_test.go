package core_test

import (
	"fmt"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
)

// BenchmarkTurnUnderABound is BenchmarkTurn for an agent whose requests are
// bounded ([context]) and which never needs compacting: what deciding
// whether to compact adds to a turn. It counts what was appended, not the
// history, so the figure is flat from 10 to 10,000 messages.
func BenchmarkTurnUnderABound(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10_000} {
		for _, bounded := range []bool{false, true} {
			b.Run(fmt.Sprintf("messages=%d/bounded=%v", n, bounded), func(b *testing.B) {
				cfg := benchConfig()
				if bounded {
					cfg.Context = &core.ContextPolicy{MaxTokens: 1 << 30}
				}
				base := historyState(b, cfg, n)
				st := base
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if i%256 == 255 {
						b.StopTimer()
						st = base
						b.StartTimer()
					}
					st = turn(b, cfg, st, i)
				}
			})
		}
	}
}
