package agent_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// testServer builds the project's MCP test server.
func testServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcptestserver")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/stepwise-agent/stepwise/internal/mcptest/cmd/mcptestserver").CombinedOutput()
	if err != nil {
		t.Fatalf("build mcptestserver: %v\n%s", err, out)
	}
	return bin
}

// waitingModel answers from the agent's script, but before its answer to
// call n it waits until the agent has changed (the MCP tool list, which a
// server changes in the background).
type waitingModel struct {
	shell.ModelProvider
	ag *shell.Agent
	n  int
	t  *testing.T
}

func (m waitingModel) Complete(ctx context.Context, req shell.ModelRequest) (core.ModelReply, error) {
	if req.Call == m.n {
		deadline := time.Now().Add(10 * time.Second)
		for m.ag.Live() == m.ag {
			if time.Now().After(deadline) {
				m.t.Errorf("the agent did not change within 10s")
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return m.ModelProvider.Complete(ctx, req)
}

// A server's tools/list_changed changes the run's tools from its next step:
// the new tool is called, the change is recorded with the run (the agent's
// source holds the new list), and replay with the recorded changes, as
// `stepwise replay` does it, is identical.
func TestMCPToolListChangeIsRecorded(t *testing.T) {
	bin := testServer(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "script.jsonl"), []byte(strings.Join([]string{
		`{"tool_calls": [{"id": "m1", "name": "t__add_tool", "arguments": {"name": "extra"}}]}`,
		`{"tool_calls": [{"id": "m2", "name": "t__extra", "arguments": {"text": "new tool"}}]}`,
		`{"text": "done"}`,
	}, "\n")+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "agent.toml"), []byte(`name = "lister"
[models.primary]
provider = "script"
script = "script.jsonl"
[[mcp]]
name = "t"
command = "`+bin+`"
deny = ["stuck", "crash"]
`), 0o644)
	spec, err := agent.Load(filepath.Join(dir, "agent.toml"))
	if err != nil {
		t.Fatal(err)
	}
	ag, err := spec.Build(context.Background(), agent.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ag.Close()
	ag.Models[core.Primary] = waitingModel{ModelProvider: ag.Models[core.Primary], ag: ag, n: 2, t: t}
	db, err := sqlite.Open(filepath.Join(dir, "runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	out, err := shell.NewRunner(db, nil).Start(ctx, ag, "add a tool and use it")
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != store.StatusCompleted || !slices.Equal(out.ToolsUsed, []string{"t__add_tool", "t__extra"}) {
		t.Fatalf("outcome = %+v", out)
	}
	rec, _ := db.LoadLatest(ctx, out.RunID)
	i := slices.IndexFunc(rec.State.Messages, func(m core.Message) bool { return m.CallID == "m2" })
	if i < 0 || rec.State.Messages[i].Content != "new tool" || rec.State.Messages[i].IsError {
		t.Fatalf("the new tool's result: %v", rec.State.Messages)
	}

	info, err := db.Run(ctx, out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := db.AgentChanges(ctx, out.RunID)
	if err != nil || len(changes) != 1 {
		t.Fatalf("agent changes = %v, %v", changes, err)
	}
	start, _, err := agent.FromSource(info.StartConfig)
	if err != nil {
		t.Fatal(err)
	}
	changed, _, err := agent.FromSource(changes[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	if names := mcpToolNames(changed.Config); !slices.Contains(names, "t__extra") || slices.Contains(mcpToolNames(start.Config), "t__extra") {
		t.Fatalf("recorded tool lists: start %v, after the change %v", mcpToolNames(start.Config), names)
	}
	rep, err := shell.ReplayChanges(ctx, db, out.RunID, start.Config, []shell.ConfigFrom{{Seq: changes[0].Seq, Config: changed.Config}})
	if err != nil || rep.Diverged != nil {
		t.Fatalf("replay = %+v, %v", rep, err)
	}
	if rep, _ := shell.Replay(ctx, db, out.RunID, start.Config); rep.Diverged == nil {
		t.Fatal("replay without the recorded change did not diverge")
	}
}

func mcpToolNames(cfg core.Config) []string {
	var out []string
	for _, t := range cfg.Tools {
		out = append(out, t.Name)
	}
	return out
}
