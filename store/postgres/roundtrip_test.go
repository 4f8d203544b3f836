package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
	"pgregory.net/rapid"
)

// TestRoundTrip: for generated runs (messages growing append-only, actions
// and results of every kind), the state loaded at every step equals byte for
// byte the state saved, and so do the actions and results; LoadLatest,
// Steps and StepsFrom agree.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	runs := 0
	rapid.Check(t, func(t *rapid.T) {
		runs++
		id := fmt.Sprintf("run-%d", runs)
		var log []core.Message
		for i, n := 0, rapid.IntRange(0, 3).Draw(t, "initial"); i < n; i++ {
			log = append(log, genMessage(t, fmt.Sprintf("m%d", len(log))))
		}
		initial := genHead(t, "head0")
		initial.Messages = log[:len(log):len(log)]
		if len(log) == 0 {
			initial.Messages = nil
		}
		if _, err := s.CreateRun(ctx, store.NewRun{ID: id, Agent: "a", Input: genText(t, "input"), Initial: initial}); err != nil {
			t.Fatal(err)
		}
		type saved struct {
			st core.State
			a  core.Action
			r  core.Result
		}
		want := []saved{{st: initial}}
		steps := rapid.IntRange(0, 12).Draw(t, "steps")
		for seq := 1; seq <= steps; seq++ {
			for i, n := 0, rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("add%d", seq)); i < n; i++ {
				log = append(log, genMessage(t, fmt.Sprintf("m%d", len(log))))
			}
			st := genHead(t, fmt.Sprintf("head%d", seq))
			if len(log) > 0 {
				st.Messages = log[:len(log):len(log)]
			}
			var a core.Action
			if seq == steps && rapid.Bool().Draw(t, "ends") {
				a = withAction(rapid.SampledFrom([]string{"complete", "fail"}).Draw(t, "end"), st)
			} else {
				a = genAction(t, fmt.Sprintf("action%d", seq), st)
			}
			r := genResult(t, fmt.Sprintf("result%d", seq))
			if err := s.Checkpoint(ctx, leaseOf(t, s, id), store.Checkpoint{Seq: seq, Result: r, Action: a}); err != nil {
				t.Fatalf("checkpoint %d: %v", seq, err)
			}
			want = append(want, saved{st: a.Next(), a: a, r: r})
		}
		for seq, w := range want {
			rec, err := s.LoadStep(ctx, id, seq)
			if err != nil {
				t.Fatal(err)
			}
			sameStep(t, rec, seq, w.st, w.a, w.r)
		}
		last, err := s.LoadLatest(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		w := want[len(want)-1]
		sameStep(t, last, len(want)-1, w.st, w.a, w.r)
		from := rapid.IntRange(0, steps+1).Draw(t, "from")
		n := from
		if err := s.StepsFrom(ctx, id, from, func(rec store.StepRecord) error {
			w := want[n]
			sameStep(t, rec, n, w.st, w.a, w.r)
			n++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if n != max(from, len(want)) {
			t.Fatalf("StepsFrom(%d) ended at %d, want %d", from, n, len(want))
		}
		info, err := s.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if info.LastSeq != steps || info.Steps != steps+1 {
			t.Fatalf("run info: last seq %d, steps %d; want %d, %d", info.LastSeq, info.Steps, steps, steps+1)
		}
		if got := store.StatusOf(w.a); w.a != nil && info.Status != got {
			t.Fatalf("status %s, want %s", info.Status, got)
		}
	})
}

// TestRoundTripSegments: long runs, whose loads go through segments,
// including segments whose steps appended no message (and so have no row),
// written by two stores in turn (the other one reads segments back), and a
// fork whose step 0 holds a long log.
func TestRoundTripSegments(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 7))
	other := reopen(t, s, &Options{Now: fakeClock()})
	for _, c := range []struct {
		id    string
		steps int
		pAdd  float64 // chance that a step appends messages
	}{
		{"dense", 3*codec.SegmentSteps + 10, 1},
		{"sparse", 4*codec.SegmentSteps + 1, 0.05},
		{"empty", 2 * codec.SegmentSteps, 0},
		{"long", stepsPage + 2*codec.SegmentSteps + 3, 1}, // Steps reads it in pages
	} {
		var log []core.Message
		initial := baseState("q", nil)
		if _, err := s.CreateRun(ctx, store.NewRun{ID: c.id, Initial: initial}); err != nil {
			t.Fatal(err)
		}
		want := []core.State{initial}
		actions := []core.Action{nil}
		for seq := 1; seq <= c.steps; seq++ {
			if rng.Float64() < c.pAdd {
				for i := rng.IntN(3); i >= 0; i-- {
					log = append(log, core.Message{Role: core.RoleTool, Content: fmt.Sprintf("message %d of %s", len(log), c.id)})
				}
			}
			st := baseState("q", log[:len(log):len(log)])
			st.Counters.Steps = seq
			a := withAction(actionKinds[rng.IntN(3)], st)
			w := s
			if rng.IntN(10) == 0 { // another store on the schema: it reads segments back
				w = other
			}
			// The writer takes the run over from the other store when it
			// was the last to write.
			err := w.Checkpoint(ctx, leaseOf(t, w, c.id), store.Checkpoint{Seq: seq, Action: a})
			if errors.Is(err, store.ErrLeaseLost) {
				forgetLease(w, c.id)
				err = w.Checkpoint(ctx, leaseOf(t, w, c.id), store.Checkpoint{Seq: seq, Action: a})
			}
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, a.Next())
			actions = append(actions, a)
		}
		for seq := range want {
			rec, err := s.LoadStep(ctx, c.id, seq)
			if err != nil {
				t.Fatalf("%s step %d: %v", c.id, seq, err)
			}
			sameStep(t, rec, seq, want[seq], actions[seq], nil)
		}
		n := 0
		if err := s.Steps(ctx, c.id, func(rec store.StepRecord) error {
			sameStep(t, rec, n, want[n], actions[n], nil)
			n++
			return nil
		}); err != nil || n != len(want) {
			t.Fatalf("%s: Steps: %d steps, %v", c.id, n, err)
		}
		var segs int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM segments g JOIN runs r ON r.rk = g.rk WHERE r.id = $1`, c.id).Scan(&segs); err != nil {
			t.Fatal(err)
		}
		if c.id == "dense" && segs != 3 || c.id == "empty" && segs != 0 {
			t.Fatalf("%s: %d segments", c.id, segs)
		}
		// A fork from the end: its step 0 holds the whole log.
		last := want[len(want)-1]
		fork := c.id + "-fork"
		if _, err := s.CreateRun(ctx, store.NewRun{ID: fork, Initial: last, ParentID: c.id, ParentStep: c.steps}); err != nil {
			t.Fatal(err)
		}
		st := last
		for seq := 1; seq <= codec.SegmentSteps+1; seq++ {
			st.Messages = append(st.Messages[:len(st.Messages):len(st.Messages)], core.Message{Role: core.RoleUser, Content: "more"})
			a := withAction("model", st)
			if err := s.Checkpoint(ctx, leaseOf(t, s, fork), store.Checkpoint{Seq: seq, Action: a}); err != nil {
				t.Fatal(err)
			}
			st = a.Next()
		}
		rec, err := s.LoadLatest(ctx, fork)
		if err != nil {
			t.Fatal(err)
		}
		sameStep(t, rec, codec.SegmentSteps+1, st, withAction("model", st), nil)
	}
}
