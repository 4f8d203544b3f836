package shell_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// callLines is a program's own tool-call format: a call is a line
// "CALL name {args}"; every other line is the message.
var callLines = core.FormatSpec{
	Parse: func(text string, _ []core.Tool) (core.Parsed, error) {
		var p core.Parsed
		var msg []string
		for _, line := range strings.Split(text, "\n") {
			rest, ok := strings.CutPrefix(line, "CALL ")
			if !ok {
				msg = append(msg, line)
				continue
			}
			name, args, _ := strings.Cut(rest, " ")
			p.Calls = append(p.Calls, core.NativeCall{Name: name, Arguments: args})
		}
		p.Text = strings.TrimSpace(strings.Join(msg, "\n"))
		return p, nil
	},
	RenderCall: func(c core.NativeCall) string { return "CALL " + c.Name + " " + c.Arguments },
}

// messages is a model that records the system message of each request.
type messages struct {
	shell.ModelProvider
	mu     sync.Mutex
	system []string
	tools  int
}

func (m *messages) Complete(ctx context.Context, req shell.ModelRequest) (core.ModelReply, error) {
	m.mu.Lock()
	m.system = append(m.system, req.Messages[0].Content)
	m.tools += len(req.Tools)
	m.mu.Unlock()
	return m.ModelProvider.Complete(ctx, req)
}

// TestRegistryCarriesFormats: a format registered once in the Registry is
// the one the agent it builds runs in: its docs in the system prompt, its
// calls parsed; the agent's config is compiled with the registry's table.
// A registry without the format refuses the agent, naming the format.
func TestRegistryCarriesFormats(t *testing.T) {
	find := shell.NewTool("find_user", "Find a user by name", func(ctx context.Context, a findUserArgs) (string, error) {
		return "user " + a.Name, nil
	})
	cfg := core.DefaultConfig()
	cfg.Name = "lines"
	cfg.Format = "call-lines"

	plain := shell.NewRegistry()
	if err := plain.Internal(find, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Agent(cfg); !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), `format "call-lines" is not one of native`) {
		t.Fatalf("an agent in a format the registry lacks: %v", err)
	}

	reg := shell.NewRegistry()
	if err := reg.Internal(find, nil); err != nil {
		t.Fatal(err)
	}
	if err := reg.Format("call-lines", callLines); err != nil {
		t.Fatal(err)
	}
	if err := reg.Format("call-lines", callLines); !errors.Is(err, core.ErrFormatRegistration) {
		t.Fatalf("a format registered twice: %v", err)
	}
	if err := reg.Format("xml", callLines); !errors.Is(err, core.ErrFormatRegistration) {
		t.Fatalf("a built-in format's name: %v", err)
	}
	ag, err := reg.Agent(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ag.Config.Formats() != reg.Formats() {
		t.Fatal("the agent's config is not compiled with the registry's formats")
	}
	model := &messages{ModelProvider: scripted(t,
		`{"text":"Looking.\nCALL find_user {\"name\":\"Sarah\"}"}`,
		`{"text":"Sarah is a user."}`)}
	ag.Models[core.Primary] = model
	ag.Source = []byte(`{}`)
	db := openStore(t)
	out, err := shell.NewRunner(db, nil).Start(context.Background(), ag, "find Sarah")
	if err != nil || out.Status != store.StatusCompleted || out.Answer != "Sarah is a user." {
		t.Fatalf("%+v %v", out, err)
	}
	if len(model.system) != 2 || !strings.Contains(model.system[0], "To use a tool, write a call like this:\n\nCALL find_user {\"name\":\"...\"}") || model.tools != 0 {
		t.Fatalf("the model was told %q and %d native tools", model.system, model.tools)
	}
	rec, _ := db.LoadStep(context.Background(), out.RunID, 3)
	if res, ok := rec.Result.(core.ToolResults); !ok || res.Results[0].Output != "user Sarah" {
		t.Fatalf("the tool's result %+v", rec.Result)
	}
}
