package shell_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// events collects observed events.
type events struct {
	mu   sync.Mutex
	list []shell.Event
}

func (e *events) Event(ev shell.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, ev)
}

func (e *events) of(kind string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.list {
		if ev.Kind == kind {
			out = append(out, ev.Text)
		}
	}
	return out
}

func echoTool(name string, run func(context.Context, core.ToolCall, shell.RunContext)) shell.Tool {
	return liveTool{spec: core.Tool{Name: name, Parameters: json.RawMessage(anyArgs)}, run: run}
}

type liveTool struct {
	spec core.Tool
	run  func(context.Context, core.ToolCall, shell.RunContext)
}

func (l liveTool) Spec() core.Tool { return l.spec }
func (l liveTool) Run(ctx context.Context, c core.ToolCall, rc shell.RunContext) core.ToolResult {
	if l.run != nil {
		l.run(ctx, c, rc)
	}
	return core.ToolResult{CallID: c.ID, Output: l.spec.Name + " ran"}
}

// A change of the agent while a run goes on (here: a tool appears, as when
// an MCP server's tool list changes) is picked up before the result of the
// request in flight is folded in, recorded with the run, and replay follows
// it; replaying without the change diverges.
func TestLiveAgentChangeIsRecordedAndReplayed(t *testing.T) {
	db := openStore(t)
	var live atomic.Pointer[shell.Agent]
	b := echoTool("b", nil)
	a := echoTool("a", func(context.Context, core.ToolCall, shell.RunContext) {
		// The call makes the tool list change, as an MCP server's
		// tools/list_changed does.
		old := live.Load()
		changed := *old
		changed.Config.Tools = append(append([]core.Tool(nil), old.Config.Tools...), b.Spec())
		changed.Tools = map[string]shell.Tool{"a": old.Tools["a"], "b": b}
		changed.Source = []byte(`{"tools":"a,b"}`)
		live.Store(&changed)
	})
	ag := newAgent(t, scripted(t,
		`{"tool_calls":[{"id":"c1","name":"a","arguments":{}}]}`,
		`{"tool_calls":[{"id":"c2","name":"b","arguments":{}}]}`,
		`{"text":"done"}`), a)
	ag.Source = []byte(`{"tools":"a"}`)
	ag.Live = func() *shell.Agent { return live.Load() }
	live.Store(ag)
	var seen events
	out, err := shell.NewRunner(db, &shell.Options{Observer: &seen}).Start(context.Background(), ag, "go")
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != store.StatusCompleted || strings.Join(out.ToolsUsed, ",") != "a,b" {
		t.Fatalf("outcome = %+v", out)
	}
	if got := seen.of("agent"); len(got) != 1 || got[0] != "tools changed: +b" {
		t.Fatalf("agent events = %q", got)
	}
	ctx := context.Background()
	changes, err := db.AgentChanges(ctx, out.RunID)
	if err != nil || len(changes) != 1 || string(changes[0].Config) != `{"tools":"a,b"}` || changes[0].Seq != 2 {
		t.Fatalf("recorded changes = %+v, %v", changes, err)
	}
	after := ag.Config
	after.Tools = append(append([]core.Tool(nil), after.Tools...), b.Spec())
	rep, err := shell.ReplayChanges(ctx, db, out.RunID, ag.Config, []shell.ConfigFrom{{Seq: changes[0].Seq, Config: after}})
	if err != nil || rep.Diverged != nil {
		t.Fatalf("replay with the change = %+v, %v", rep, err)
	}
	rep, err = shell.Replay(ctx, db, out.RunID, ag.Config)
	if err != nil || rep.Diverged == nil {
		t.Fatalf("replay without the change = %+v, %v; want a divergence", rep, err)
	}
}

// A tool's progress reports become "progress" events, their messages
// redacted; without an observer the tool gets no reporter.
func TestToolProgressEvents(t *testing.T) {
	t.Setenv("LIVE_TEST_SECRET", "hunter2")
	var got []bool
	slow := echoTool("slow", func(_ context.Context, _ core.ToolCall, rc shell.RunContext) {
		got = append(got, rc.Progress != nil)
		rc.Report(shell.ToolProgress{Progress: 2, Total: 5, Message: "copying hunter2"})
		rc.Report(shell.ToolProgress{Progress: 3})
	})
	for _, observed := range []bool{true, false} {
		ag := newAgent(t, scripted(t, `{"tool_calls":[{"id":"c1","name":"slow","arguments":{}}]}`, `{"text":"done"}`), slow)
		ag.Secrets = []shell.Secret{{Name: "LIVE_TEST_SECRET", Value: "hunter2"}}
		var seen events
		opts := &shell.Options{}
		if observed {
			opts.Observer = &seen
		}
		if _, err := shell.NewRunner(openStore(t), opts).Start(context.Background(), ag, "go"); err != nil {
			t.Fatal(err)
		}
		if observed {
			want := []string{"tool slow: 40% — copying [redacted:LIVE_TEST_SECRET]", "tool slow: 3"}
			if p := seen.of("progress"); strings.Join(p, "|") != strings.Join(want, "|") {
				t.Fatalf("progress events = %q, want %q", p, want)
			}
		}
	}
	if len(got) != 2 || !got[0] || got[1] {
		t.Fatalf("tool had a reporter: %v, want [true false]", got)
	}
}

// changingModel answers from a script and, while its first call is under
// way, makes the agent drop every tool.
type changingModel struct {
	shell.ModelProvider
	live *atomic.Pointer[shell.Agent]
}

func (m changingModel) Complete(ctx context.Context, req shell.ModelRequest) (core.ModelReply, error) {
	if req.Call == 1 {
		changed := *m.live.Load()
		changed.Config.Tools, changed.Tools, changed.Source = nil, map[string]shell.Tool{}, []byte(`{"tools":""}`)
		m.live.Store(&changed)
	}
	return m.ModelProvider.Complete(ctx, req)
}

// A change made while the model answers applies to that answer: the call
// of a tool gone meanwhile is refused (a correction), live and in replay.
func TestLiveAgentChangeDuringModelCall(t *testing.T) {
	db := openStore(t)
	var live atomic.Pointer[shell.Agent]
	model := changingModel{scripted(t, `{"tool_calls":[{"id":"c1","name":"a","arguments":{}}]}`, `{"text":"done"}`), &live}
	ag := newAgent(t, model, echoTool("a", nil))
	ag.Live = func() *shell.Agent { return live.Load() }
	live.Store(ag)
	out, err := shell.NewRunner(db, nil).Start(context.Background(), ag, "go")
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != store.StatusCompleted || len(out.ToolsUsed) != 0 {
		t.Fatalf("outcome = %+v, want the call of a refused", out)
	}
	ctx := context.Background()
	changes, _ := db.AgentChanges(ctx, out.RunID)
	if len(changes) != 1 || changes[0].Seq != 1 {
		t.Fatalf("changes = %+v", changes)
	}
	after := ag.Config
	after.Tools = nil
	if rep, err := shell.ReplayChanges(ctx, db, out.RunID, ag.Config, []shell.ConfigFrom{{Seq: 1, Config: after}}); err != nil || rep.Diverged != nil {
		t.Fatalf("replay = %+v, %v", rep, err)
	}
}
