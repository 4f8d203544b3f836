package tools

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
)

func allOptions(t *testing.T) Options {
	return Options{
		Files:     FilesOptions{Root: t.TempDir()},
		HTTPGet:   HTTPGetOptions{AllowHosts: []string{"example.com"}},
		WebSearch: WebSearchOptions{BaseURL: "http://127.0.0.1:1"},
		SQLQuery:  SQLQueryOptions{Path: "x.db"},
		Image:     ImageOptions{BaseURL: "http://127.0.0.1:1/v1"},
	}
}

func TestBuiltins(t *testing.T) {
	t.Parallel()
	names := Builtins()
	if !slices.IsSorted(names) || len(names) != 9 {
		t.Errorf("Builtins() = %q", names)
	}
	cfg := core.DefaultConfig()
	o := allOptions(t)
	for _, name := range names {
		tools, err := Builtin(name, o)
		if err != nil || len(tools) != 1 {
			t.Fatalf("Builtin(%q): %v %v", name, tools, err)
		}
		spec := tools[0].Spec()
		if spec.Name != name {
			t.Errorf("Builtin(%q) made %q", name, spec.Name)
		}
		var s struct {
			Type       string         `json:"type"`
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
			Additional *bool          `json:"additionalProperties"`
		}
		if err := json.Unmarshal(spec.Parameters, &s); err != nil {
			t.Fatalf("%s: schema: %v", name, err)
		}
		if s.Type != "object" || s.Additional == nil || *s.Additional || (len(s.Properties) == 0) != (name == "system_stats") {
			t.Errorf("%s: schema is not strict: %s", name, spec.Parameters)
		}
		if spec.Description == "" {
			t.Errorf("%s: no description", name)
		}
		// Unknown arguments are refused by the core.
		if _, err := checkCall(tools[0], `{"bogus":1}`); err == nil {
			t.Errorf("%s: the core accepted an unknown argument", name)
		}
		cfg.Tools = append(cfg.Tools, spec)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("the core refuses the built-ins: %v", err)
	}
	files, err := Builtin(GroupFiles, o)
	if err != nil || len(files) != 3 {
		t.Errorf("Builtin(files): %v %v", files, err)
	}
}

func TestBuiltinErrors(t *testing.T) {
	t.Parallel()
	if _, err := Builtin("memory_search", Options{}); !errors.Is(err, ErrUnknownBuiltin) {
		t.Errorf("unknown name: %v", err)
	}
	for _, name := range Builtins() {
		if name == "run_code" || name == "system_stats" {
			continue // needs no options
		}
		if _, err := Builtin(name, Options{}); err == nil {
			t.Errorf("Builtin(%q) accepted missing options", name)
		}
	}
	if _, err := Builtin("run_code", Options{RunCode: RunCodeOptions{Languages: []string{"cobol"}}}); err == nil {
		t.Error("run_code accepted an unknown language")
	}
}

// The same options give the same specs, byte for byte.
func TestSpecsDeterministic(t *testing.T) {
	t.Parallel()
	o := allOptions(t)
	for _, name := range Builtins() {
		a, _ := Builtin(name, o)
		b, _ := Builtin(name, o)
		if string(a[0].Spec().Parameters) != string(b[0].Spec().Parameters) || a[0].Spec().Description != b[0].Spec().Description {
			t.Errorf("%s: specs differ", name)
		}
	}
}
