package sqlite

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// TestRoundTripSegments: long runs, whose loads go through segments,
// including segments whose steps appended no message (and so have no row),
// and a fork whose step 0 holds a long log.
func TestRoundTripSegments(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 7))
	other, err := Open(s.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, c := range []struct {
		id    string
		steps int
		pAdd  float64 // chance that a step appends messages
	}{
		{"dense", 3*codec.SegmentSteps + 10, 1},
		{"sparse", 4*codec.SegmentSteps + 1, 0.05},
		{"empty", 2 * codec.SegmentSteps, 0},
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
			a := withAction([]string{"model", "helper", "tools"}[rng.IntN(3)], st)
			w := s
			if rng.IntN(10) == 0 { // another store on the file: it reads segments back
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
		s.r.QueryRow(`SELECT count(*) FROM segments g JOIN runs r ON r.rk = g.rk WHERE r.id = ?`, c.id).Scan(&segs)
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
