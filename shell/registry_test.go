package shell_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

type findUserArgs struct {
	Name  string `json:"name" jsonschema:"the user's name"`
	Zip   string `json:"zip,omitempty" jsonschema:"a US zip code"`
	Limit int    `json:"limit,omitempty"`
}

// recorder is a model that records the tools each request declares, and
// answers from a script.
type recorder struct {
	shell.ModelProvider
	mu    sync.Mutex
	tools [][]string
}

func (m *recorder) Complete(ctx context.Context, req shell.ModelRequest) (core.ModelReply, error) {
	names := []string{}
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	m.mu.Lock()
	m.tools = append(m.tools, names)
	m.mu.Unlock()
	return m.ModelProvider.Complete(ctx, req)
}

// TestNewToolDerivesItsSchema: the schema of a Go function's tool comes
// from its argument struct: properties in field order, required unless
// omitempty, descriptions from the jsonschema tag, closed.
func TestNewToolDerivesItsSchema(t *testing.T) {
	tool := shell.NewTool("find_user", "Find a user by name", func(ctx context.Context, a findUserArgs) (string, error) { return "", nil })
	if err := tool.Err(); err != nil {
		t.Fatal(err)
	}
	spec := tool.Spec()
	want := `{"type":"object","properties":{"name":{"type":"string","description":"the user's name"},` +
		`"zip":{"type":"string","description":"a US zip code"},"limit":{"type":"integer"}},"required":["name"],"additionalProperties":false}`
	if spec.Name != "find_user" || spec.Description != "Find a user by name" || string(spec.Parameters) != want || spec.Idempotent {
		t.Fatalf("spec %+v\nparameters %s\nwant       %s", spec, spec.Parameters, want)
	}
	tool.Idempotent = true
	if !tool.Spec().Idempotent {
		t.Fatal("Idempotent is not declared")
	}
	for _, bad := range []struct {
		tool *shell.GoTool
		want string
	}{
		{shell.NewTool("x", "", func(context.Context, struct{ C chan int }) (string, error) { return "", nil }), "chan"},
		{shell.NewTool("x", "", func(context.Context, string) (string, error) { return "", nil }), "must be a struct"},
		{shell.NewTool("x", "", func(context.Context, map[int]string) (string, error) { return "", nil }), "map key"},
		{shell.NewTool("bad name", "", func(context.Context, findUserArgs) (string, error) { return "", nil }), "bad name"},
		{shell.NewTool[findUserArgs]("x", "", nil), "no function"},
	} {
		err := shell.NewRegistry().Internal(bad.tool, nil)
		if !errors.Is(err, shell.ErrToolDeclaration) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("registering a bad tool: %v, want %q", err, bad.want)
		}
		if res := bad.tool.Run(context.Background(), core.ToolCall{ID: "c"}, shell.RunContext{}); !res.Failed() {
			t.Errorf("a bad tool ran: %+v", res)
		}
	}
}

// TestRegistryDeclaresEveryToolOnce: one registration declares a Go
// function's tool and an external tool to the model, in order; the model's
// call reaches the function with its arguments decoded into the struct;
// the external one pauses the run.
func TestRegistryDeclaresEveryToolOnce(t *testing.T) {
	var got []findUserArgs
	find := shell.NewTool("find_user", "Find a user by name", func(ctx context.Context, a findUserArgs) (string, error) {
		got = append(got, a)
		rc, ok := shell.RunContextFrom(ctx)
		if !ok || rc.RunID == "" || rc.Step == 0 || rc.Agent != "registry" || rc.View != nil {
			return "", errors.New("no run context")
		}
		return "user " + a.Name + " in " + a.Zip, nil
	})
	reg := shell.NewRegistry()
	approve := core.Tool{Name: "approve", Description: "Ask a human.", Parameters: json.RawMessage(anyArgs)}
	for _, err := range []error{reg.Internal(find, nil), reg.External(approve)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if !reg.IsExternal("approve") || reg.IsExternal("find_user") || reg.IsExternal("nope") {
		t.Fatal("IsExternal is wrong")
	}
	if ext := reg.ExternalTools(); len(ext) != 1 || ext[0].Name != "approve" || ext[0].Mode != core.ModeExternal {
		t.Fatalf("ExternalTools = %+v", ext)
	}
	if all := reg.Tools(); len(all) != 2 || all[0].Name != "find_user" || all[1].Name != "approve" {
		t.Fatalf("Tools = %+v", all)
	}
	if impl, ok := reg.Tool("find_user"); !ok || impl != shell.Tool(find) {
		t.Fatal("Tool(find_user)")
	}
	if _, ok := reg.Tool("approve"); ok {
		t.Fatal("an external tool has an implementation")
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{reg.Internal(find, nil), "registered twice"},
		{reg.External(core.Tool{Name: "find_user"}), "registered twice"},
		{reg.External(core.Tool{Name: "x", Mode: core.ModeInternal}), "with Internal"},
		{reg.Internal(fnTool{spec: core.Tool{Name: "y", Mode: core.ModeExternal}}, nil), "with External"},
		{reg.External(core.Tool{Name: "no spaces"}), "tool name"},
		{reg.Internal(find, &shell.ToolSettings{Cache: &shell.CachePolicy{}}), "registered twice"},
		{reg.Internal(fnTool{spec: core.Tool{Name: "z"}}, &shell.ToolSettings{Cache: &shell.CachePolicy{}}), "only idempotent tools are cached"},
		{reg.Internal(fnTool{spec: core.Tool{Name: "z"}}, &shell.ToolSettings{View: shell.View{"secrets"}}), `unknown field "secrets"`},
		{reg.Internal(fnTool{spec: core.Tool{Name: "z"}}, &shell.ToolSettings{OutputSchema: []byte(`{"type":"strin"}`)}), "output schema"},
	} {
		if !errors.Is(c.err, shell.ErrToolDeclaration) || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("got %v, want %q", c.err, c.want)
		}
	}
	if len(reg.Tools()) != 2 {
		t.Fatal("a refused registration registered something")
	}

	cfg := core.DefaultConfig()
	cfg.Name = "registry"
	cfg.Tools = []core.Tool{external("other")}
	if _, err := reg.Agent(cfg); !errors.Is(err, shell.ErrToolDeclaration) {
		t.Fatalf("a config that declares tools itself: %v", err)
	}
	cfg.Tools = nil
	ag, err := reg.Agent(cfg)
	if err != nil {
		t.Fatal(err)
	}
	model := &recorder{ModelProvider: scripted(t,
		`{"tool_calls":[{"id":"f1","name":"find_user","arguments":{"name":"Sarah","zip":"10001"}}]}`,
		`{"tool_calls":[{"id":"a1","name":"approve","arguments":{"x":"Sarah"}}]}`,
		`{"text":"done"}`)}
	ag.Models[core.Primary] = model
	ag.Source = []byte(`{}`)
	db := openStore(t)
	r := shell.NewRunner(db, nil)
	out, err := r.Start(context.Background(), ag, "find Sarah")
	if err != nil || out.Status != store.StatusAwaitingToolResults || len(out.Pending) != 1 || out.Pending[0].Name != "approve" {
		t.Fatalf("%+v %v", out, err)
	}
	if len(got) != 1 || got[0] != (findUserArgs{Name: "Sarah", Zip: "10001"}) {
		t.Fatalf("the function got %+v", got)
	}
	if strings.Join(model.tools[0], ",") != "find_user,approve" {
		t.Fatalf("the model was told of %v", model.tools[0])
	}
	out, err = r.Submit(context.Background(), ag, out.RunID, shell.Answers{Results: []core.ToolResult{{CallID: "a1", Output: "approved"}}})
	if err != nil || out.Status != store.StatusCompleted {
		t.Fatalf("%+v %v", out, err)
	}
	rec, _ := db.LoadStep(context.Background(), out.RunID, 3)
	if res := rec.Result.(core.ToolResults).Results[0]; res.Output != "user Sarah in 10001" {
		t.Fatalf("the tool's result %+v", res)
	}
}

// TestRunnerRefusesToolsNotDeclaredOnce: an implementation without a
// declaration (before: the model was silently told of no tools), one whose
// declaration says external or another schema, settings of a tool that is
// not run by the shell or that do not fit it: each is an error at start,
// before the run is created.
func TestRunnerRefusesToolsNotDeclaredOnce(t *testing.T) {
	db := openStore(t)
	model := scripted(t, `{"text":"hi"}`)
	idem := fnTool{spec: core.Tool{Name: "lookup", Idempotent: true, Parameters: json.RawMessage(anyArgs)}}
	for _, c := range []struct {
		name  string
		build func(ag *shell.Agent)
		want  string
	}{
		{"implemented, not declared", func(ag *shell.Agent) { ag.Config.Tools = nil }, `"lookup" is implemented (Agent.Tools) but not declared`},
		{"declared external", func(ag *shell.Agent) { ag.Config.Tools[0].Mode = core.ModeExternal }, "declared external"},
		{"another schema", func(ag *shell.Agent) { ag.Config.Tools[0].Parameters = json.RawMessage(`{"type":"object"}`) }, "another parameter schema"},
		{"another name", func(ag *shell.Agent) {
			ag.Tools["alias"] = idem
			ag.Config.Tools = append(ag.Config.Tools, core.Tool{Name: "alias", Parameters: json.RawMessage(anyArgs)})
		}, `Agent.Tools["alias"] is a tool named "lookup"`},
		{"settings of no tool", func(ag *shell.Agent) { ag.ToolSettings = map[string]shell.ToolSettings{"nope": {}} }, `ToolSettings["nope"] names no tool`},
		{"settings of an external tool", func(ag *shell.Agent) {
			ag.Config.Tools = append(ag.Config.Tools, external("ask"))
			ag.ToolSettings = map[string]shell.ToolSettings{"ask": {View: shell.View{"step"}}}
		}, `ToolSettings["ask"] names no tool`},
		{"a bad view", func(ag *shell.Agent) {
			ag.ToolSettings = map[string]shell.ToolSettings{"lookup": {View: shell.View{"messages:0"}}}
		}, "N must be a whole number from 1 to 1000"},
		{"a cache of a tool that is not idempotent", func(ag *shell.Agent) {
			ag.Tools["lookup"] = fnTool{spec: core.Tool{Name: "lookup", Parameters: json.RawMessage(anyArgs)}}
			ag.Config.Tools[0].Idempotent = false
			ag.ToolSettings = map[string]shell.ToolSettings{"lookup": {Cache: &shell.CachePolicy{}}}
		}, "only idempotent tools are cached"},
		{"a cache across runs on a store without one", func(ag *shell.Agent) {
			ag.ToolSettings = map[string]shell.ToolSettings{"lookup": {Cache: &shell.CachePolicy{TTL: 1e9}}}
		}, "keeps no tool cache"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ag := newAgent(t, model, idem)
			c.build(ag)
			var st shell.Store = db
			if strings.Contains(c.name, "without one") {
				st = struct{ store.Store }{db} // the store without its ToolCache
			}
			before, _ := db.ListRuns(context.Background(), store.Filter{})
			_, err := shell.NewRunner(st, nil).Start(context.Background(), ag, "go")
			if !errors.Is(err, shell.ErrToolDeclaration) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
			if after, _ := db.ListRuns(context.Background(), store.Filter{}); len(after) != len(before) {
				t.Fatal("a refused agent created a run")
			}
		})
	}
	// The agent as declared runs.
	if out, err := shell.NewRunner(db, nil).Start(context.Background(), newAgent(t, model, idem), "go"); err != nil || out.Status != store.StatusCompleted {
		t.Fatalf("%+v %v", out, err)
	}
}

// TestGoToolDecodesStrictly: arguments reach the function exactly as the
// core validated them; what the core would refuse (a string for an
// integer, an unknown or miscased key) is refused by the tool too when it
// is run without the core; the function's error is the tool's failure,
// transient when it says so.
func TestGoToolDecodesStrictly(t *testing.T) {
	var got findUserArgs
	fail := error(nil)
	tool := shell.NewTool("find_user", "", func(ctx context.Context, a findUserArgs) (string, error) {
		got = a
		return "ok", fail
	})
	cfg := core.DefaultConfig()
	cfg.Tools = []core.Tool{tool.Spec()}
	if _, err := core.ValidateCall(cfg, core.NativeCall{ID: "c", Name: "find_user", Arguments: `{"name":"a","limit":"5"}`}); err == nil {
		t.Fatal(`the core took "5" for an int field`)
	}
	if _, err := core.ValidateCall(cfg, core.NativeCall{ID: "c", Name: "find_user", Arguments: `{"name":"a","extra":1}`}); err == nil {
		t.Fatal("the core took an argument the struct has no field for")
	}
	c, err := core.ValidateCall(cfg, core.NativeCall{ID: "c", Name: "find_user", Arguments: `{"limit":5.0,"name":"Ann"}`})
	if err != nil {
		t.Fatal(err)
	}
	if res := tool.Run(context.Background(), c, shell.RunContext{}); res.Output != "ok" || got != (findUserArgs{Name: "Ann", Limit: 5}) {
		t.Fatalf("%+v %+v", res, got)
	}
	for args, want := range map[string]string{
		`{"Name":"a"}`:             `unknown argument(s) "Name"`,
		`{"name":"a","limit":"5"}`: "cannot unmarshal string",
		`{"name":"a"} {}`:          "bad arguments",
		`[1]`:                      "not a JSON object",
	} {
		res := tool.Run(context.Background(), core.ToolCall{ID: "r", Name: "find_user", Args: []byte(args)}, shell.RunContext{})
		if !strings.Contains(res.Error, want) {
			t.Errorf("%s: %+v, want %q", args, res, want)
		}
	}
	fail = &shell.TransientError{Err: errors.New("the directory is restarting")}
	if res := tool.Run(context.Background(), c, shell.RunContext{}); res.Error != "the directory is restarting" || !res.Transient {
		t.Fatalf("%+v", res)
	}
	fail = errors.New("no such user")
	if res := tool.Run(context.Background(), c, shell.RunContext{}); res.Error != "no such user" || res.Transient || res.CallID != "c" {
		t.Fatalf("%+v", res)
	}
}
