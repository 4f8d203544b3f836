package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// testCheckpoints: a run of several segments, its model calls carrying a
// tool list, loads back at every step exactly as it was checkpointed, by
// LoadStep, LoadLatest and Steps, from this store and another.
func testCheckpoints(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	l, g := create(t, s, "r", tools(3))
	want := []string{encoded(t, nil, initial("r"), nil)}
	const n = 150 // two segments and a part
	for range n {
		cp := g.next()
		must(t, s.Checkpoint(ctx, l, cp))
		want = append(want, encoded(t, cp.Action, cp.Action.Next(), cp.Result))
	}
	for _, st := range []store.Store{s, reopen(t, h, s, nil)} {
		for _, seq := range []int{0, 1, 2, 63, 64, 65, 127, 128, 149, n} {
			rec, err := st.LoadStep(ctx, "r", seq)
			must(t, err)
			if got := encoded(t, rec.Action, rec.State, rec.Result); rec.Seq != seq || got != want[seq] {
				t.Fatalf("step %d loads back differently", seq)
			}
		}
		rec, err := st.LoadLatest(ctx, "r")
		must(t, err)
		if rec.Seq != n || encoded(t, rec.Action, rec.State, rec.Result) != want[n] {
			t.Fatalf("latest: step %d", rec.Seq)
		}
		next := 0
		must(t, st.Steps(ctx, "r", func(rec store.StepRecord) error {
			if rec.Seq != next || encoded(t, rec.Action, rec.State, rec.Result) != want[next] {
				return fmt.Errorf("Steps gives step %d differently (want %d)", rec.Seq, next)
			}
			next++
			return nil
		}))
		if next != n+1 {
			t.Fatalf("Steps gave %d steps", next)
		}
		stop := errors.New("stop")
		if err := st.Steps(ctx, "r", func(store.StepRecord) error { return stop }); err != stop {
			t.Fatalf("Steps does not return fn's error as is: %v", err)
		}
	}
	info, err := s.Run(ctx, "r")
	must(t, err)
	if info.LastSeq != n || info.Steps != n+1 || info.Agent != "agent" || info.Input != "question r" || string(info.Config) != `{"v":1}` ||
		string(info.StartConfig) != `{"v":1}` || info.Status != store.StatusRunning || info.Created.IsZero() || info.Updated.Before(info.Created) ||
		info.ConfigHash != "h" || info.Created.Location() != time.UTC {
		t.Fatalf("run info: %+v", info)
	}
	if _, err := s.LoadStep(ctx, "r", n+1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a step past the last: %v", err)
	}
	if _, err := s.LoadStep(ctx, "nope", 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an unknown run: %v", err)
	}
	if _, err := s.Run(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Run of an unknown run: %v", err)
	}
	if _, err := s.LoadLatest(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LoadLatest of an unknown run: %v", err)
	}
	if _, err := s.LoadStep(ctx, "r", n+7); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("step %d", n+7)) {
		t.Fatalf("the error of a missing step does not name it: %v", err)
	}
	if err := s.Steps(ctx, "nope", func(store.StepRecord) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Steps of an unknown run: %v", err)
	}
	stop := errors.New("stop")
	if err := s.Steps(ctx, "r", func(store.StepRecord) error { return stop }); err != stop {
		t.Fatalf("Steps does not return fn's error as it is: %v", err)
	}
	// Another store on the database continues the run where this one left
	// it, after taking it over.
	o := reopen(t, h, s, nil)
	l2, err := o.Acquire(ctx, "r", store.LeaseRequest{Owner: "other/2/x", TTL: time.Hour, TakeOver: &l})
	must(t, err)
	cp := g.next()
	must(t, o.Checkpoint(ctx, l2, cp))
	rec, err := s.LoadLatest(ctx, "r")
	must(t, err)
	if encoded(t, rec.Action, rec.State, rec.Result) != encoded(t, cp.Action, cp.Action.Next(), cp.Result) {
		t.Fatal("the other store's step loads back differently")
	}
	// A fork: a new run from a step of its parent.
	fork := store.NewRun{ID: "fork", Agent: "agent", Initial: rec.State, ParentID: "r", ParentStep: rec.Seq, Owner: "test/1/fork", LeaseTTL: time.Hour}
	fl, err := s.CreateRun(ctx, fork)
	must(t, err)
	if fi, err := s.Run(ctx, "fork"); err != nil || fi.ParentID != "r" || fi.ParentStep != rec.Seq || fi.LastSeq != 0 {
		t.Fatalf("fork: %+v %v", fi, err)
	}
	if forks, err := s.ListRuns(ctx, store.Filter{Parent: "r"}); err != nil || len(forks) != 1 || forks[0].ID != "fork" {
		t.Fatalf("the forks of r: %+v %v", forks, err)
	}
	if forks, err := s.ListRuns(ctx, store.Filter{Parent: "fork"}); err != nil || len(forks) != 0 {
		t.Fatalf("the forks of a run without any: %+v %v", forks, err)
	}
	// The fork diverges: its step 1 appends another message; the parent's
	// last step is as it was.
	div := rec.State
	div.Messages = append(div.Messages[:len(div.Messages):len(div.Messages)], core.Message{Role: core.RoleUser, Content: "another turn"})
	div.Pending = &core.Pending{Kind: core.PendingModel, Role: core.Primary}
	div.Phase, div.Turn = core.PhaseModel, nil
	fa := core.RequestModelCall{Role: core.Primary, Messages: div.Messages, State: div}
	must(t, s.Checkpoint(ctx, fl, store.Checkpoint{Seq: 1, Result: core.ToolResults{}, Action: fa}))
	if got, err := s.LoadLatest(ctx, "fork"); err != nil || encoded(t, got.Action, got.State, got.Result) != encoded(t, fa, div, core.ToolResults{}) {
		t.Fatalf("the fork's step 1 loads back differently (%v)", err)
	}
	if got, err := s.LoadLatest(ctx, "r"); err != nil || encoded(t, got.Action, got.State, got.Result) != encoded(t, cp.Action, cp.Action.Next(), cp.Result) {
		t.Fatalf("the fork changed its parent (%v)", err)
	}
	for _, step := range []int{rec.Seq + 5, -1} {
		fork.ID, fork.ParentStep = "bad-fork", step
		if _, err := s.CreateRun(ctx, fork); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a fork from step %d, which does not exist: %v", step, err)
		}
	}
	fork.ParentID = "nope"
	if _, err := s.CreateRun(ctx, fork); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a fork of a run that does not exist: %v", err)
	}
}

// testCheckpointRefusals: a checkpoint out of order, one whose messages do
// not extend the log, one after the end, or a run created twice: refused,
// nothing written.
func testCheckpointRefusals(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	l, g := create(t, s, "r", nil)
	cp1 := g.next()
	must(t, s.Checkpoint(ctx, l, cp1))
	cp2 := g.next()
	for name, c := range map[string]struct {
		cp   store.Checkpoint
		want error
	}{
		"seq again":     {cp1, store.ErrSeq},
		"seq too far":   {store.Checkpoint{Seq: 3, Action: cp2.Action}, store.ErrSeq},
		"seq zero":      {store.Checkpoint{Seq: 0, Action: cp2.Action}, store.ErrSeq},
		"fewer":         {store.Checkpoint{Seq: 2, Action: core.RequestModelCall{Role: core.Primary, State: baseState("q", cp1.Action.Next().Messages[:1])}}, store.ErrNotAppend},
		"changed":       {store.Checkpoint{Seq: 2, Action: changedLog(cp2)}, store.ErrNotAppend},
		"unknown run":   {cp2, store.ErrNotFound},
		"invalid utf-8": {store.Checkpoint{Seq: 2, Action: badState(cp2)}, nil},
	} {
		l := l
		if name == "unknown run" {
			l = store.Lease{RunID: "nope", Owner: "x", Token: 1}
		}
		err := s.Checkpoint(ctx, l, c.cp)
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
		if err != nil && !strings.Contains(err.Error(), "run "+l.RunID) {
			t.Errorf("%s: the error does not name the run: %v", name, err)
		}
	}
	if err := s.Checkpoint(ctx, l, store.Checkpoint{Seq: 2}); err == nil {
		t.Error("a checkpoint without an action was accepted")
	}
	badMsg := cp2.Action.Next()
	badMsg.Messages = append(badMsg.Messages[:len(badMsg.Messages):len(badMsg.Messages)], core.Message{Role: core.RoleTool, Content: "\xc3"})
	if err := s.Checkpoint(ctx, l, store.Checkpoint{Seq: 2, Action: core.RequestModelCall{Role: core.Primary, State: badMsg}}); err == nil {
		t.Error("a message that would not load back was accepted")
	}
	if rec, _ := s.LoadLatest(ctx, "r"); rec.Seq != 1 {
		t.Fatalf("a refused checkpoint wrote step %d", rec.Seq)
	}
	must(t, s.Checkpoint(ctx, l, cp2))
	// Stepping again with the same log (no new messages) is fine.
	must(t, s.Checkpoint(ctx, l, store.Checkpoint{Seq: 3, Action: cp2.Action}))
	g.seq = 3
	end := g.ending("complete")
	must(t, s.Checkpoint(ctx, l, end))
	if err := s.Checkpoint(ctx, l, g.next()); !errors.Is(err, store.ErrEnded) {
		t.Fatalf("a checkpoint after the end: %v", err)
	}
	if err := s.SetStatus(ctx, l, store.StatusChange{Status: store.StatusInterrupted, Reason: "x"}); !errors.Is(err, store.ErrEnded) {
		t.Errorf("a status set after the end: %v", err)
	}
	if _, err := s.CreateRun(ctx, store.NewRun{ID: "r", Initial: initial("r")}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("a run created twice: %v", err)
	}
	if _, err := s.CreateRun(ctx, store.NewRun{ID: "", Initial: initial("r")}); err == nil {
		t.Fatal("a run without an id")
	}
}

func changedLog(cp store.Checkpoint) core.Action {
	st := cp.Action.Next()
	msgs := append([]core.Message(nil), st.Messages...)
	msgs[len(msgs)-2].Content = "another reply" // the last message the log holds
	st.Messages = msgs
	st.Pending = &core.Pending{Kind: core.PendingModel, Role: core.Primary}
	st.Phase, st.Turn = core.PhaseModel, nil
	return core.RequestModelCall{Role: core.Primary, State: st}
}

func badState(cp store.Checkpoint) core.Action {
	st := cp.Action.Next()
	st.Request.Input = "\xff"
	st.Pending = &core.Pending{Kind: core.PendingModel, Role: core.Primary}
	st.Phase, st.Turn = core.PhaseModel, nil
	return core.RequestModelCall{Role: core.Primary, State: st}
}

// testStepsFrom: StepsFrom gives the steps from a seq on, each as Steps
// gives it, across segments; nothing past the last step.
func testStepsFrom(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	l, g := create(t, s, "r", tools(1))
	for range 140 {
		must(t, s.Checkpoint(ctx, l, g.next()))
	}
	var all []string
	must(t, s.Steps(ctx, "r", func(rec store.StepRecord) error {
		all = append(all, encoded(t, rec.Action, rec.State, rec.Result))
		return nil
	}))
	for _, from := range []int{0, 1, 63, 64, 65, 100, 140, 141, 500} {
		next := from
		must(t, s.StepsFrom(ctx, "r", from, func(rec store.StepRecord) error {
			if rec.Seq != next || encoded(t, rec.Action, rec.State, rec.Result) != all[next] {
				return fmt.Errorf("from %d: step %d differs", from, rec.Seq)
			}
			next++
			return nil
		}))
		if want := max(from, len(all)); next != want {
			t.Fatalf("from %d: ended at %d, want %d", from, next, want)
		}
	}
	if err := s.StepsFrom(ctx, "nope", 3, func(store.StepRecord) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("steps of an unknown run: %v", err)
	}
}
