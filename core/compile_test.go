package core_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// TestCompileAgain: compiling a compiled config again (which reuses the
// schemas whose bytes did not change) follows what changed: a tool's new
// schema, and the format table given this time.
func TestCompileAgain(t *testing.T) {
	cfg := linesConfig(t, "lines")
	call := core.NativeCall{ID: "a", Name: "add", Arguments: `{"a":1,"b":2}`}
	again, err := core.Compile(cfg, cfg.Formats())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := core.ValidateCall(again, call); err != nil {
		t.Fatalf("compiled again, unchanged: %v", err)
	}
	changed := again
	changed.Tools = []core.Tool{addTool}
	changed.Tools[0].Parameters = json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)
	if changed, err = core.Compile(changed, changed.Formats()); err != nil {
		t.Fatal(err)
	}
	if _, err := core.ValidateCall(changed, call); !errors.Is(err, core.ErrInvalidCall) || !strings.Contains(err.Error(), `argument "a"`) {
		t.Errorf("compiled again after the schema changed: %v", err)
	}
	// Without the table that names "lines", the format is unknown.
	if _, err := core.Compile(again, nil); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("compiled again without its format table: %v", err)
	}
}

// BenchmarkCompileAgain: compiling an agent of 16 tools that was compiled
// before reuses its schemas.
func BenchmarkCompileAgain(b *testing.B) {
	cfg := core.DefaultConfig()
	for i := range 16 {
		t := addTool
		t.Name = fmt.Sprintf("add_%d", i)
		cfg.Tools = append(cfg.Tools, t)
	}
	for _, name := range []string{"first", "again"} {
		b.Run(name, func(b *testing.B) {
			from := cfg
			if name == "again" {
				var err error
				if from, err = core.Compile(cfg, nil); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if _, err := core.Compile(from, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
