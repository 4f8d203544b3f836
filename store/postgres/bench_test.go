package postgres

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// Benchmarks. A turn is two steps, as in a real run (see store/sqlite's
// benchmarks): a tools step that adds the model's assistant message and a
// model step that adds the tool's ~200-byte result.
//
// BenchmarkCheckpoint times, interleaved on the store's one connection
// (MaxConns 1; docs/adr/0009-bench-floor-interleaved.md), a checkpoint and
// a bare INSERT in autocommit of the same row bytes into a table shaped
// like steps: ckpt-us and insert-us are their medians, x-insert their
// ratio. Each size's run is prefilled once (outside the timings) and
// grows as the benchmark runs.
//
//	go test -run '^$' -bench . -benchtime 2000x ./store/postgres/

var (
	benchMu       sync.Mutex
	benchFixtures = map[int]*benchFixture{}
)

// benchFixture is a store holding one run prefilled to some number of
// turns, and the generator of its next steps.
type benchFixture struct {
	s    *Postgres
	l    store.Lease
	g    *synth
	tail codec.Tail // as the bare inserts' rows are built
}

func getBenchFixture(b *testing.B, turns int) *benchFixture {
	b.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	if f := benchFixtures[turns]; f != nil {
		return f
	}
	ctx := context.Background()
	s, cleanup, err := OpenTestSchemaOptions(ctx, serverURL(b), fmt.Sprintf("bench_%d", turns), &Options{MaxConns: 1})
	if err != nil {
		b.Fatal(err)
	}
	// The schemas outlive the sub-benchmark (a fixture serves every b.N).
	benchCleanups = append(benchCleanups, cleanup)
	exec(b, s, `CREATE TABLE steps_bare (LIKE steps INCLUDING ALL)`)
	l, err := s.CreateRun(ctx, store.NewRun{ID: "r", Agent: "bench", Initial: synthInitial("r"), Owner: "bench/1/x", LeaseTTL: 24 * time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	f := &benchFixture{s: s, l: l, g: newSynth("r")}
	for range 2 * turns {
		if err := s.Checkpoint(ctx, l, f.g.next()); err != nil {
			b.Fatal(err)
		}
	}
	if f.tail, _, _, _, err = s.readTail(ctx, "r", f.g.seq+1); err != nil {
		b.Fatal(err)
	}
	benchFixtures[turns] = f
	return f
}

// benchCleanups drop the fixtures' schemas once every benchmark ran
// (TestMain).
var benchCleanups []func() error

func BenchmarkCheckpoint(b *testing.B) {
	for _, turns := range []int{10, 10000} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			ctx := context.Background()
			f := getBenchFixture(b, turns)
			// The checkpoints, and the rows of the same bytes for the
			// bare inserts, are built before the timings.
			cps := make([]store.Checkpoint, b.N)
			bare := make([][]any, b.N)
			var bytes int64
			for i := range b.N {
				cps[i] = f.g.next()
				row, _, err := codec.Build(nil, nil, f.tail, cps[i], time.Now().UnixNano(), nil)
				if err != nil {
					b.Fatal(err)
				}
				bare[i] = stepArgs(&row, f.tail.RK)
				bytes += int64(len(row.Body))
				f.tail = row.Tail(f.tail.RK, store.StatusOf(cps[i].Action))
			}
			ckpt := make([]time.Duration, b.N)
			ins := make([]time.Duration, b.N)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				if err := f.s.Checkpoint(ctx, f.l, cps[i]); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, err := f.s.pool.Exec(ctx, `INSERT INTO steps_bare (rk, seq, created_ns, msg_count, msg_sum, body, sum)
					VALUES ($1, $2, $3, $4, $5, $6, $7)`, bare[i]...); err != nil {
					b.Fatal(err)
				}
				ckpt[i], ins[i] = t1.Sub(t0), time.Since(t1)
			}
			b.StopTimer()
			c, n := median(ckpt), median(ins)
			b.ReportMetric(float64(c.Nanoseconds())/1e3, "ckpt-us")
			b.ReportMetric(float64(n.Nanoseconds())/1e3, "insert-us")
			b.ReportMetric(float64(c)/float64(n), "x-insert")
			b.ReportMetric(float64(bytes)/float64(b.N), "body-B/step")
		})
	}
}

// BenchmarkLoadLatest loads the latest state of a run of 10,000 turns
// (20,000 steps): 312 segments and fewer than 64 step rows.
func BenchmarkLoadLatest(b *testing.B) {
	ctx := context.Background()
	f := getBenchFixture(b, 10000)
	b.ResetTimer()
	for range b.N {
		if _, err := f.s.LoadLatest(ctx, "r"); err != nil {
			b.Fatal(err)
		}
	}
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
