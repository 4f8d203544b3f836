package shell_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/tools"
	"github.com/stepwise-agent/stepwise/store"
)

// TestOutputSchemaMismatchIsTheToolsError: a real command tool declared
// with an output schema: an output that fits reaches the model as is; one
// that does not (a string for an integer, a missing field, no JSON at all)
// becomes the tool's error, naming the mismatch, which the model reads.
func TestOutputSchemaMismatchIsTheToolsError(t *testing.T) {
	const schema = `{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}},"required":["id","name"]}`
	for _, c := range []struct {
		name, output string
		want         string // "" when the output fits
	}{
		{"fits", `{"id": 7, "name": "Sarah"}`, ""},
		{"a string for an integer", `{"id": "7", "name": "Sarah"}`, `field "id": expected an integer, found the string "7"`},
		{"a missing field", `{"id": 7}`, `missing required field "name"`},
		{"not JSON", `Sarah (7)`, "the output is not JSON"},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := openStore(t)
			user, err := tools.Command(tools.CommandSpec{Name: "user", Parameters: json.RawMessage(anyArgs), Argv: []string{"printf", "%s", c.output}})
			if err != nil {
				t.Fatal(err)
			}
			ag := newAgent(t, scripted(t, `{"tool_calls":[{"id":"u1","name":"user","arguments":{}}]}`, `{"text":"done"}`), user)
			ag.ToolSettings = map[string]shell.ToolSettings{"user": {OutputSchema: json.RawMessage(schema)}}
			out, err := shell.NewRunner(db, nil).Start(context.Background(), ag, "who")
			if err != nil || out.Status != store.StatusCompleted {
				t.Fatalf("%+v %v", out, err)
			}
			rec, _ := db.LoadLatest(context.Background(), out.RunID)
			var msg core.Message
			for _, m := range rec.State.Messages {
				if m.Role == core.RoleTool {
					msg = m
				}
			}
			if c.want == "" {
				if msg.IsError || msg.Content != c.output {
					t.Fatalf("the model read %+v", msg)
				}
				return
			}
			if !msg.IsError || !strings.Contains(msg.Content, c.want) || !strings.Contains(msg.Content, "does not fit the tool's output schema") {
				t.Fatalf("the model read %+v, want an error with %q", msg, c.want)
			}
		})
	}
}
