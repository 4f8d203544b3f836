package script

import (
	"encoding/json"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell/models/provider"
)

// TestRenderRequest: the script provider renders what it is given of a
// request and the reply that answers it (a fork's offset counted), with
// no method or URL; built to render, it reads no file.
func TestRenderRequest(t *testing.T) {
	req := call(5)
	req.Tools = []core.Tool{{Name: "add", Description: "Adds.", Parameters: json.RawMessage(`{"type":"object"}`), Idempotent: true}}
	p, err := Entry().New(provider.Build{Settings: provider.Settings{Script: "/no/such/script.jsonl"}, ScriptOffset: 3, Render: true})
	if err != nil {
		t.Fatalf("a render-only script provider read its file: %v", err)
	}
	out, err := p.(*Provider).RenderRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"provider":"script","call":5,"reply":2,"messages":[{"role":"user","content":"hi"}],` +
		`"tools":[{"name":"add","description":"Adds.","parameters":{"type":"object"}}]}`
	if out.Provider != Name || out.Method != "" || out.URL != "" || string(out.Body) != want {
		t.Errorf("rendered %+v\nbody %s\nwant %s", out, out.Body, want)
	}
}
