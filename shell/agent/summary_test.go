package agent_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell/agent"
)

// TestSummaryKeys: [summary] sets the agent's summary, a tool table's
// summary key its tools' own; left out, nothing changes.
func TestSummaryKeys(t *testing.T) {
	dir := scriptDir(t, "x.jsonl")
	text := head + `
[summary]
items = 3
item_chars = 200
max_bytes = 900

[[tools]]
builtin = "files"
root = "."
summary = { items = 5 }

[[tools]]
name = "ask"
mode = "external"
summary = { max_bytes = 100 }

[[tools]]
name = "plain"
mode = "external"
`
	spec, err := agent.Parse([]byte(text), "t.toml", dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := spec.Config
	if cfg.Summary != (core.Summary{Items: 3, ItemChars: 200, MaxBytes: 900}) {
		t.Errorf("agent summary %+v", cfg.Summary)
	}
	want := map[string]*core.Summary{"read_file": {Items: 5}, "write_file": {Items: 5}, "list_files": {Items: 5}, "ask": {MaxBytes: 100}, "plain": nil}
	for _, tool := range cfg.Tools {
		w, ok := want[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %s", tool.Name)
			continue
		}
		if (w == nil) != (tool.Summary == nil) || (w != nil && *w != *tool.Summary) {
			t.Errorf("%s: summary %+v, want %+v", tool.Name, tool.Summary, w)
		}
	}

	spec, err = agent.Parse([]byte(head), "t.toml", dir)
	if err != nil || spec.Config.Summary != (core.Summary{}) || strings.Contains(string(mustJSON(t, spec.Config)), "summary") {
		t.Errorf("without the keys: %+v, %v", spec.Config, err)
	}

	_, err = agent.Parse([]byte(head+"[[tools]]\nname = \"ask\"\nmode = \"external\"\nsummary = { items = -1 }\n"), "t.toml", dir)
	if !errors.Is(err, agent.ErrInvalid) || !strings.Contains(err.Error(), `t.toml:5: tools[0] "ask": summary.items is negative`) {
		t.Errorf("negative: %v", err)
	}
	_, err = agent.Parse([]byte(head+"[summary]\nitem_chars = 10\nmax_chars = 3\n"), "t.toml", dir)
	if !errors.Is(err, agent.ErrInvalid) || !strings.Contains(err.Error(), `unknown key "summary.max_chars"`) {
		t.Errorf("unknown key: %v", err)
	}
}

func mustJSON(t *testing.T, cfg core.Config) []byte {
	t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
