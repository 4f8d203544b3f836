package shell_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// seen is a model that records what each request gave it, and renders a
// request as the same record.
type seen struct {
	shell.ModelProvider
	mu  sync.Mutex
	got []string
}

func seenJSON(req shell.ModelRequest) []byte {
	b, _ := json.Marshal(map[string]any{"role": req.Role, "call": req.Call, "messages": req.Messages, "tools": req.Tools})
	return b
}

func (m *seen) Complete(ctx context.Context, req shell.ModelRequest) (core.ModelReply, error) {
	m.mu.Lock()
	m.got = append(m.got, string(seenJSON(req)))
	m.mu.Unlock()
	return m.ModelProvider.Complete(ctx, req)
}

func (m *seen) RenderRequest(req shell.ModelRequest) (shell.RenderedRequest, error) {
	return shell.RenderedRequest{Provider: "seen", Body: seenJSON(req)}, nil
}

// TestRenderModelCallIsWhatTheModelGot: for every step of a run whose
// action is a model call, RenderModelCall gives the provider the very
// request the runner gave it then (role, call number, messages, tools);
// a step without a model call, a role without a provider and a provider
// that cannot render are errors that say so.
func TestRenderModelCallIsWhatTheModelGot(t *testing.T) {
	db := openStore(t)
	model := &seen{ModelProvider: scripted(t,
		`{"tool_calls":[{"id":"a1","name":"add","arguments":{"a":2,"b":40}}]}`,
		`{"tool_calls":[{"id":"a2","name":"add","arguments":{"a":1,"b":1}}]}`,
		`{"text":"42 and 2"}`)}
	ag := newAgent(t, model, addTool(t))
	out, err := shell.NewRunner(db, nil).Start(context.Background(), ag, "add things")
	if err != nil || out.Status != store.StatusCompleted {
		t.Fatalf("%+v, %v", out, err)
	}
	calls, others := 0, 0
	err = db.Steps(context.Background(), out.RunID, func(rec store.StepRecord) error {
		got, err := shell.RenderModelCall(rec, ag.Models, ag.Config)
		if _, ok := rec.Action.(core.RequestModelCall); !ok {
			others++
			if !errors.Is(err, shell.ErrNoModelCall) {
				t.Errorf("step %d (%T): %v", rec.Seq, rec.Action, err)
			}
			return nil
		}
		if err != nil {
			return err
		}
		if calls >= len(model.got) || string(got.Body) != model.got[calls] || got.Call != calls+1 || got.Step != rec.Seq || got.Role != core.Primary {
			t.Errorf("step %d renders call %d as\n%s\nthe model got\n%v", rec.Seq, got.Call, got.Body, model.got)
		}
		calls++
		if _, err := shell.RenderModelCall(rec, map[core.ModelRole]shell.ModelProvider{}, ag.Config); !errors.Is(err, shell.ErrNoProvider) {
			t.Errorf("no provider: %v", err)
		}
		// Embedding the interface passes Complete on, not RenderRequest.
		plain := struct{ shell.ModelProvider }{model}
		if _, err := shell.RenderModelCall(rec, map[core.ModelRole]shell.ModelProvider{core.Primary: plain}, ag.Config); !errors.Is(err, shell.ErrNotRenderable) {
			t.Errorf("a provider that cannot render: %v", err)
		}
		return nil
	})
	if err != nil || calls != 3 || others == 0 {
		t.Fatalf("%d model calls, %d other steps: %v", calls, others, err)
	}
}
