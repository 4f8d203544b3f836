package shell_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/tools"
	"github.com/stepwise-agent/stepwise/store"
)

// viewScript is a model that calls the tool "peek" in its second turn,
// after a first turn that used "note".
func viewScript(t *testing.T) shell.ModelProvider {
	return scripted(t,
		`{"tool_calls":[{"id":"n1","name":"note","arguments":{"x":"first"}}]}`,
		`{"text":"looking","tool_calls":[{"id":"p1","name":"peek","arguments":{"x":"now"}}]}`,
		`{"text":"done"}`)
}

func noteTool() shell.Tool {
	return fnTool{spec: core.Tool{Name: "note", Parameters: json.RawMessage(anyArgs)}, run: func(context.Context, core.ToolCall) core.ToolResult {
		return core.ToolResult{Output: "noted"}
	}}
}

// TestCommandToolGetsItsViewAsJSON: a real subprocess declared with a view
// reads the declared fields, and only those, as JSON from the file named
// by STEPWISE_VIEW; the input's secret is a marker there; the file is gone
// once the call ends; a tool without a view gets no file.
func TestCommandToolGetsItsViewAsJSON(t *testing.T) {
	db := openStore(t)
	const secret = "sk-view-0123456789"
	peek, err := tools.Command(tools.CommandSpec{Name: "peek", Parameters: json.RawMessage(anyArgs),
		Argv: []string{"sh", "-c", `echo "$STEPWISE_VIEW"; cat "$STEPWISE_VIEW"`}})
	if err != nil {
		t.Fatal(err)
	}
	ag := newAgent(t, viewScript(t), noteTool(), peek)
	ag.Secrets = []shell.Secret{{Name: "API_KEY", Value: secret}}
	ag.ToolSettings = map[string]shell.ToolSettings{"peek": {View: shell.View{"run_id", "step", "tools_used", "messages:3"}}}
	out, err := shell.NewRunner(db, nil).Start(context.Background(), ag, "look with "+secret)
	if err != nil || out.Status != store.StatusCompleted {
		t.Fatalf("%+v %v", out, err)
	}
	rec, err := db.LoadStep(context.Background(), out.RunID, 5)
	if err != nil {
		t.Fatal(err)
	}
	res := rec.Result.(core.ToolResults).Results[0]
	path, body, _ := strings.Cut(res.Output, "\n")
	if !strings.HasSuffix(path, "view.json") {
		t.Fatalf("STEPWISE_VIEW = %q (output %q, error %q)", path, res.Output, res.Error)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the view file outlived the call: %v", err)
	}
	var view map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &view); err != nil {
		t.Fatalf("the view is not JSON: %v\n%s", err, body)
	}
	var keys []string
	for k := range view {
		keys = append(keys, k)
	}
	if len(keys) != 4 || view["agent"] != nil {
		t.Fatalf("the view holds %v, want run_id, step, tools_used, messages", keys)
	}
	if string(view["run_id"]) != `"`+out.RunID+`"` || string(view["step"]) != "4" || string(view["tools_used"]) != `["note"]` {
		t.Fatalf("view %s", body)
	}
	var msgs []core.Message
	if err := json.Unmarshal(view["messages"], &msgs); err != nil || len(msgs) != 3 {
		t.Fatalf("messages %s: %v", view["messages"], err)
	}
	if msgs[0].Role != core.RoleAssistant || msgs[1].Role != core.RoleTool || msgs[1].Content != "noted" ||
		msgs[2].Role != core.RoleAssistant || len(msgs[2].Calls) != 1 || msgs[2].Calls[0].Name != "peek" {
		t.Fatalf("messages %+v", msgs)
	}
	if strings.Contains(res.Output, secret) {
		t.Fatal("the secret reached the tool")
	}
	// All the messages: the input is there, its secret redacted.
	ag.ToolSettings["peek"] = shell.ToolSettings{View: shell.View{"messages:1000"}}
	out, err = shell.NewRunner(db, nil).Start(context.Background(), ag, "look with "+secret)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ = db.LoadStep(context.Background(), out.RunID, 5)
	if o := rec.Result.(core.ToolResults).Results[0].Output; !strings.Contains(o, "look with [redacted:API_KEY]") || strings.Contains(o, secret) {
		t.Fatalf("view %s", o)
	}
	// Without a view: no file.
	ag.ToolSettings = nil
	out, _ = shell.NewRunner(db, nil).Start(context.Background(), ag, "look")
	rec, _ = db.LoadStep(context.Background(), out.RunID, 5)
	if r := rec.Result.(core.ToolResults).Results[0]; !r.Failed() || !strings.Contains(r.Error, "exited with status") {
		t.Fatalf("a tool without a view: %+v", r)
	}
}

type peekArgs struct {
	X string `json:"x"`
}

// TestGoToolGetsItsView: a Go tool reads the view it declared from its
// RunContext, with the fields it declared and no others.
func TestGoToolGetsItsView(t *testing.T) {
	var seen *shell.RunView
	peek := shell.NewTool("peek", "Peek at the run.", func(ctx context.Context, a peekArgs) (string, error) {
		rc, _ := shell.RunContextFrom(ctx)
		seen = rc.View
		b, err := json.Marshal(rc.View)
		return string(b), err
	})
	reg := shell.NewRegistry()
	if err := reg.Internal(noteTool(), nil); err != nil {
		t.Fatal(err)
	}
	if err := reg.Internal(peek, &shell.ToolSettings{View: shell.View{"agent", "step", "tools_used"}}); err != nil {
		t.Fatal(err)
	}
	cfg := core.DefaultConfig()
	cfg.Name = "viewer"
	ag, err := reg.Agent(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ag.Models[core.Primary] = viewScript(t)
	out, err := shell.NewRunner(openStore(t), nil).Start(context.Background(), ag, "go")
	if err != nil || out.Status != store.StatusCompleted || seen == nil {
		t.Fatalf("%+v %v", out, err)
	}
	if seen.Agent != "viewer" || seen.Step != 4 || strings.Join(seen.ToolsUsed, ",") != "note" || seen.RunID != "" || seen.Messages != nil ||
		!seen.Has("agent") || seen.Has("run_id") || seen.Has("messages") {
		t.Fatalf("view %+v", seen)
	}
	if b, _ := json.Marshal(seen); string(b) != `{"step":4,"agent":"viewer","tools_used":["note"]}` {
		t.Fatalf("view JSON %s", b)
	}
}

func TestViewValidate(t *testing.T) {
	for _, v := range []shell.View{nil, {"run_id", "step", "agent", "tools_used", "messages:1"}, {"messages:1000"}} {
		if err := v.Validate(); err != nil {
			t.Errorf("%v: %v", v, err)
		}
	}
	for v, want := range map[string]string{
		"secrets":       `unknown field "secrets"`,
		"messages":      `unknown field "messages"`,
		"step:2":        `unknown field "step:2"`,
		"messages:0":    "from 1 to 1000",
		"messages:1001": "from 1 to 1000",
		"messages:x":    "from 1 to 1000",
	} {
		if err := (shell.View{v}).Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", v, err, want)
		}
	}
	if err := (shell.View{"step", "step"}).Validate(); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a field twice: %v", err)
	}
}
