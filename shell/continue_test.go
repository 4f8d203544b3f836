package shell_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// A replay's divergence continued live: the new run is a fork of the
// original just before the divergent step, its first decision is the
// replayed one, and it replays identically against the changed agent.
func TestContinueFromADivergence(t *testing.T) {
	ctx := context.Background()
	db := openStore(t)
	ag := newAgent(t, scripted(t, `{"tool_calls":[{"id":"a1","name":"add","arguments":{"a":2,"b":40}}]}`, `{"text":"42"}`), addTool(t))
	out, err := shell.NewRunner(db, nil).Start(ctx, ag, "add")
	if err != nil || out.Status != store.StatusCompleted {
		t.Fatalf("record: %+v, %v", out, err)
	}
	for _, tc := range []struct {
		name     string
		change   func(*core.Config)
		script   []string
		seq      int
		status   store.Status
		answer   string
		steps    int
		newStart bool
	}{
		// A lower limit: the run now fails where it called the model again.
		{name: "limit", change: func(c *core.Config) { c.Limits.MaxSteps = 2 }, seq: 3, status: store.StatusFailed, steps: 1},
		// A new prompt shows in the first request: the continuation starts
		// from the changed agent's first state and runs on a new script.
		{name: "prompt", change: func(c *core.Config) { c.SystemPrompt = "Be terse." }, script: []string{`{"text":"forty-two"}`},
			seq: 1, status: store.StatusCompleted, answer: "forty-two", steps: 2, newStart: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The script answers the continuation's first live model call.
			changed := newAgent(t, scripted(t, append(tc.script, `{"text":"unused"}`)...), addTool(t))
			tc.change(&changed.Config)
			rep, err := shell.Replay(ctx, db, out.RunID, changed.Config)
			if err != nil || rep.Diverged == nil || rep.Diverged.Seq != tc.seq {
				t.Fatalf("replay = %+v, %v", rep.Diverged, err)
			}
			d := *rep.Diverged
			recorded, err := db.LoadStep(ctx, out.RunID, d.Seq-1)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := core.EncodeState(recorded.State)
			b, _ := core.EncodeState(d.From)
			if bytes.Equal(a, b) == tc.newStart {
				t.Fatalf("From equals the recorded step %d: %v, want %v", d.Seq-1, !tc.newStart, !tc.newStart)
			}
			if tc.newStart && d.From.Messages[0].Content != "Be terse." {
				t.Fatalf("From starts with %q", d.From.Messages[0].Content)
			}
			got, err := shell.NewRunner(db, nil).Continue(ctx, changed, out.RunID, d)
			if err != nil || got.Status != tc.status || got.Answer != tc.answer || got.Steps != tc.steps {
				t.Fatalf("continue = %+v, %v", got, err)
			}
			info, err := db.Run(ctx, got.RunID)
			if err != nil || info.ParentID != out.RunID || info.ParentStep != d.Seq-1 {
				t.Fatalf("continuation = %+v, %v; want a fork of %s at step %d", info, err, out.RunID, d.Seq-1)
			}
			first, err := db.LoadStep(ctx, got.RunID, 1)
			if err != nil || core.DescribeAction(first.Action) != d.Replayed {
				t.Fatalf("the continuation's first step %s, want the replayed %s (%v)", core.DescribeAction(first.Action), d.Replayed, err)
			}
			if again, err := shell.Replay(ctx, db, got.RunID, changed.Config); err != nil || again.Diverged != nil {
				t.Fatalf("the continuation does not replay against the changed agent: %+v, %v", again.Diverged, err)
			}
		})
	}
}

func TestContinueRefusesADivergenceAtTheStart(t *testing.T) {
	db := openStore(t)
	ag := newAgent(t, scripted(t, `{"text":"x"}`))
	_, err := shell.NewRunner(db, nil).Continue(context.Background(), ag, "r", shell.Divergence{Seq: 0, Replayed: "error: bad"})
	if !errors.Is(err, shell.ErrNoContinuation) {
		t.Fatalf("err = %v", err)
	}
}
