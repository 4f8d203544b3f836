package core_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/core/coretest"
	"pgregory.net/rapid"
)

// TestPropCompiledStepsLikePlain: Start, Step and Resume give the same
// bytes for a config compiled once as for the same config not compiled,
// over every built-in format and the run policies.
func TestPropCompiledStepsLikePlain(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		plain := coretest.PolicyConfigs(coretest.AllFormats...).Draw(t, "cfg")
		compiled, err := core.Compile(plain, nil)
		if err != nil {
			t.Fatalf("Compile: %v", err)
		}
		_, results := coretest.CheckRun(t, compiled, "input")
		a1, err1 := coretest.Replay(plain, "input", results)
		a2, err2 := coretest.Replay(compiled, "input", results)
		if err1 != nil || err2 != nil {
			t.Fatalf("replay: %v / %v", err1, err2)
		}
		if len(a1) != len(a2) {
			t.Fatalf("plain took %d actions, compiled %d", len(a1), len(a2))
		}
		for i := range a1 {
			if !bytes.Equal(encodeAll(t, a1[i]), encodeAll(t, a2[i])) {
				t.Fatalf("step %d differs: %s vs %s", i, core.DescribeAction(a1[i]), core.DescribeAction(a2[i]))
			}
		}
		if core.ToolDocs(plain) != core.ToolDocs(compiled) {
			t.Fatal("the tool docs differ")
		}
	})
}

// A compiled config is the same data: the same JSON and ConfigHash.
func TestCompiledConfigIsPlainData(t *testing.T) {
	plain := plainLinesConfig("lines")
	compiled := linesConfig(t, "lines")
	a, _ := json.Marshal(plain)
	b, _ := json.Marshal(compiled)
	if !bytes.Equal(a, b) || core.ConfigHash(plain) != core.ConfigHash(compiled) {
		t.Errorf("compiling changed the data:\n%s\n%s", a, b)
	}
	if plain.Formats() != nil || compiled.Formats() != lineFormats {
		t.Error("Formats is not the table compiled with")
	}
}

// A compiled config changed afterwards is checked as changed: a tool's new
// schema is the one calls are validated against, and a schema made
// invalid is refused by Validate.
func TestCompiledConfigChangedAfterwards(t *testing.T) {
	cfg := linesConfig(t, "lines")
	call := core.NativeCall{ID: "a", Name: "add", Arguments: `{"a":1,"b":2}`}
	if _, err := core.ValidateCall(cfg, call); err != nil {
		t.Fatalf("before the change: %v", err)
	}
	tools := []core.Tool{addTool}
	tools[0].Parameters = json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)
	cfg.Tools = tools
	if _, err := core.ValidateCall(cfg, call); !errors.Is(err, core.ErrInvalidCall) || !strings.Contains(err.Error(), `argument "a"`) {
		t.Errorf("after the change: %v", err)
	}
	tools[0].Parameters = json.RawMessage(`{"type":"string"}`)
	if err := cfg.Validate(); !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), "parameters:") {
		t.Errorf("Validate after the schema broke: %v", err)
	}
}
