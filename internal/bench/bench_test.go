package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stepwise-agent/stepwise/internal/pgtest"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// TestSmallWorkload runs the whole workload at a small size, to keep it
// working; no timing is asserted.
func TestSmallWorkload(t *testing.T) {
	rep, err := Run(Options{Ns: []int{10, 30}, FullNs: []int{10}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// NORMAL and none for each N, CRITICAL and FULL for the FullNs.
	if len(rep.Rows) != 6 {
		t.Fatalf("%d rows", len(rep.Rows))
	}
	modes := map[string]int{}
	for _, r := range rep.Rows {
		modes[r.Sync]++
	}
	if modes["NORMAL"] != 2 || modes["CRITICAL"] != 1 || modes["FULL"] != 1 {
		t.Errorf("rows by durability: %v", modes)
	}
	for _, r := range rep.Rows {
		if r.Steps != 2*r.N+2 || r.TurnMedianUS <= 0 || r.TotalMS <= 0 {
			t.Errorf("row %+v", r)
		}
		if r.Checkpoint && (r.BytesPerStep <= 0 || r.ReplayMS <= 0 || r.LoadLatestMS <= 0 || r.ConversationBytes <= 0 || r.FloorTurnUS <= 0) {
			t.Errorf("checkpointed row lacks store figures: %+v", r)
		}
		if r.Checkpoint && (r.FloorRatio != r.TurnMedianUS/r.FloorTurnUS || r.TightFloorRatio != r.TurnMedianUS/r.TightFloorTurnUS) {
			t.Errorf("floor ratios %v, %v; want %v / %v, / %v", r.FloorRatio, r.TightFloorRatio, r.TurnMedianUS, r.FloorTurnUS, r.TightFloorTurnUS)
		}
		// The interleaved floor's inserts are sized by the warm-up run.
		if r.Checkpoint && (r.FloorBytes < 100 || r.FloorBytes > 2000 || r.TightFloorTurnUS <= 0) {
			t.Errorf("floor bytes %d, tight floor %v", r.FloorBytes, r.TightFloorTurnUS)
		}
		if !r.Checkpoint && (r.FloorTurnUS != 0 || r.FloorRatio != 0 || r.FloorBytes != 0 || r.TightFloorTurnUS != 0) {
			t.Errorf("a row without checkpoints has a floor: %+v", r)
		}
	}
	if f := rep.Floor["normal"]; f.InsertMedianUS <= 0 || f.Bytes <= 0 || f.EncodeDeltaUS <= 0 {
		t.Errorf("floor %+v", f)
	}
}

// TestSmallWorkloadPostgres runs the workload on PostgreSQL at a small
// size: every figure is there, and the floor is PostgreSQL's.
func TestSmallWorkloadPostgres(t *testing.T) {
	rep, err := Run(Options{Ns: []int{10, 30}, DB: pgtest.URL(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 4 {
		t.Fatalf("%d rows", len(rep.Rows))
	}
	for _, r := range rep.Rows {
		if r.Steps != 2*r.N+2 || r.TurnMedianUS <= 0 {
			t.Errorf("row %+v", r)
		}
		if r.Checkpoint && (r.Sync != "postgres" || r.BytesPerStep <= 0 || r.IOBytesPerStep <= 0 || r.ReplayMS <= 0 || r.LoadLatestMS <= 0 ||
			r.FloorTurnUS <= 0 || r.TightFloorTurnUS <= 0 || r.FloorRatio != r.TurnMedianUS/r.FloorTurnUS) {
			t.Errorf("checkpointed row: %+v", r)
		}
	}
	if f, ok := rep.Floor["postgres"]; !ok || f.InsertMedianUS <= 0 || f.InsertSQLMedianUS <= 0 || f.Bytes <= 0 || len(rep.Floor) != 1 {
		t.Errorf("floor %+v", rep.Floor)
	}
}

// BenchmarkTurn is one turn of the workload (model call and tool call, both
// checkpointed with synchronous=NORMAL), for profiling the hot path:
// go test ./internal/bench -run '^$' -bench Turn -cpuprofile cpu.out
func BenchmarkTurn(b *testing.B) {
	db, err := sqlite.Open(filepath.Join(b.TempDir(), "b.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	m := &model{n: b.N}
	b.ResetTimer()
	out, err := shell.NewRunner(db, nil).Start(context.Background(), agent(b.N, m), "go")
	if err != nil || out.Status != store.StatusCompleted {
		b.Fatal(out, err)
	}
}

// BenchmarkReplay1000 replays a 1,000-turn run from the store.
func BenchmarkReplay1000(b *testing.B) {
	path := filepath.Join(b.TempDir(), "r.db")
	db, err := sqlite.Open(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	m := &model{n: 1000}
	ag := agent(1000, m)
	out, err := shell.NewRunner(db, &shell.Options{NewID: func() string { return "r" }}).Start(context.Background(), ag, "go")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := shell.Replay(context.Background(), db, out.RunID, ag.Config)
		if err != nil || rep.Diverged != nil {
			b.Fatal(fmt.Sprint(rep.Diverged), err)
		}
	}
}

// BenchmarkTurnNoStore is BenchmarkTurn without checkpoints: the
// orchestration alone (core, runner, the workload's model and tool).
func BenchmarkTurnNoStore(b *testing.B) {
	m := &model{n: b.N}
	b.ResetTimer()
	out, err := shell.NewRunner(nullStore{}, nil).Start(context.Background(), agent(b.N, m), "go")
	if err != nil || out.Status != store.StatusCompleted {
		b.Fatal(out, err)
	}
}

// BenchmarkHarnessWorkload reports the store's bytes per step under a
// benchmark harness's workload: 165 runs of 10 steps of one agent with a
// 10 KB policy prompt and 16 tools (issue 29: at most 1,000).
func BenchmarkHarnessWorkload(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) {
			opts := HarnessOptions{Dir: b.TempDir()}
			if name == "postgres" {
				opts.DB = pgtest.URL(b)
			}
			var rep HarnessReport
			for range b.N {
				var err error
				if rep, err = Harness(opts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(rep.PerStep, "B/step")
			b.ReportMetric(float64(rep.Steps), "steps")
		})
	}
}

// TestHarnessPromptStoredOnce runs the harness workload at a small size
// with two prompt sizes: the runs' bytes per step barely move when the
// prompt grows by 30 KB (stored once, not once per run: that would add
// 3,000 bytes per step here), on SQLite and on PostgreSQL.
func TestHarnessPromptStoredOnce(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			opts := HarnessOptions{Runs: 40, Dir: t.TempDir()}
			if name == "postgres" {
				opts.DB = pgtest.URL(t)
			}
			var per [2]float64
			for i, prompt := range []int{10 << 10, 40 << 10} {
				opts.PromptBytes = prompt
				if i == 1 {
					opts.Dir = t.TempDir()
				}
				rep, err := Harness(opts)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Steps != 40*10 || rep.AgentBytes < prompt {
					t.Fatalf("%+v", rep)
				}
				per[i] = rep.PerStep
			}
			if per[1]-per[0] > 200 {
				t.Fatalf("bytes per step %.0f with a 10 KB prompt, %.0f with 40 KB", per[0], per[1])
			}
		})
	}
}
