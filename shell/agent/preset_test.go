package agent_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell/agent"
)

// presetSpec parses an agent file of the preset with extra keys after its
// head (model tables may follow).
func presetSpec(t *testing.T, preset, extra string) (*agent.Spec, error) {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "s.jsonl"), []byte(`{"text": "hi"}`+"\n"), 0o644)
	src := "preset = \"" + preset + "\"\nname = \"p\"\n" + extra + "\n[models.primary]\nprovider = \"script\"\nscript = \"s.jsonl\"\n"
	return agent.Parse([]byte(src), "p.toml", dir)
}

// TestPresets: each preset sets its design's defaults; a key the file
// writes wins, even written as its zero value; an unknown preset names the
// known ones.
func TestPresets(t *testing.T) {
	cases := map[string]func(t *testing.T, c core.Config){
		"sabre": func(t *testing.T, c core.Config) {
			if c.Format != core.FormatHelpers || !c.Policy.HelpersSourceText {
				t.Errorf("format %q, helpers source text %v", c.Format, c.Policy.HelpersSourceText)
			}
		},
		"ai_battle": func(t *testing.T, c core.Config) {
			if c.Format != core.FormatFenced || c.Collaboration != nil {
				t.Errorf("format %q, collaboration %+v (no helper model: none)", c.Format, c.Collaboration)
			}
		},
		"caxton": func(t *testing.T, c core.Config) {
			if c.Format != core.FormatNative || !c.Memory.Tools || c.Cycles == nil {
				t.Errorf("format %q, memory tools %v, cycles %+v", c.Format, c.Memory.Tools, c.Cycles)
			}
		},
		"torchrl": func(t *testing.T, c core.Config) {
			if c.Format != core.FormatXML || !c.Policy.StopOnError || c.Policy.HelpersSourceText {
				t.Errorf("format %q, stop on error %v", c.Format, c.Policy.StopOnError)
			}
		},
		"edison": func(t *testing.T, c core.Config) {
			if c.Format != core.FormatStrict || c.Limits.MaxTurns != 5 || c.Policy.OnMaxTurns != core.LimitAnswer ||
				c.Limits.MaxCorrections != 1 || c.Policy.RejectUnknownArgs || !c.Policy.StrictNumbers || c.Policy.Citations != core.CiteSources ||
				c.Summary != (core.Summary{Items: 3, ItemChars: 200, MaxBytes: 900}) {
				t.Errorf("edison: %+v %+v %+v", c.Limits, c.Policy, c.Summary)
			}
		},
	}
	if got := strings.Join(agent.PresetNames(), ","); got != "ai_battle,caxton,edison,sabre,torchrl" {
		t.Fatalf("presets %s", got)
	}
	for _, name := range agent.PresetNames() {
		t.Run(name, func(t *testing.T) {
			s, err := presetSpec(t, name, "")
			if err != nil {
				t.Fatal(err)
			}
			cases[name](t, s.Config)
		})
	}
	// What the file writes wins: a format, and a boolean written false.
	s, err := presetSpec(t, "torchrl", "format = \"json\"\n[policy]\nstop_on_error = false")
	if err != nil || s.Config.Format != core.FormatJSON || s.Config.Policy.StopOnError {
		t.Fatalf("torchrl with the file's own keys: %+v %v", s.Config.Policy, err)
	}
	s, err = presetSpec(t, "edison", "[limits]\nmax_turns = 9\n[summary]\nitems = 2")
	if err != nil || s.Config.Limits.MaxTurns != 9 || s.Config.Summary != (core.Summary{Items: 2}) || s.Config.Limits.MaxCorrections != 1 {
		t.Fatalf("edison with the file's own keys: %+v %+v %v", s.Config.Limits, s.Config.Summary, err)
	}
	if s.ToolTimeout != 12*time.Second {
		t.Errorf("edison's tool timeout %s, want the design's 12s", s.ToolTimeout)
	}
	if s, err = presetSpec(t, "edison", "[run]\ntool_timeout = \"40s\"\n[policy]\nstrict_numbers = false"); err != nil || s.ToolTimeout != 40*time.Second || s.Config.Policy.StrictNumbers {
		t.Fatalf("edison with the file's own run and policy keys: %s %+v %v", s.ToolTimeout, s.Config.Policy, err)
	}
	if s, err = presetSpec(t, "sabre", "[policy]\nhelpers_source_text = false"); err != nil || s.Config.Format != core.FormatHelpers || s.Config.Policy.HelpersSourceText {
		t.Fatalf("sabre with the file's own policy key: %q %+v %v", s.Config.Format, s.Config.Policy, err)
	}
	// ai_battle pairs the primary with a helper when there is one.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "s.jsonl"), []byte(`{"text": "hi"}`+"\n"), 0o644)
	s, err = agent.Parse([]byte("preset = \"ai_battle\"\nname = \"p\"\n[models.primary]\nprovider = \"script\"\nscript = \"s.jsonl\"\n[models.helper]\nprovider = \"script\"\nscript = \"s.jsonl\"\n"), "p.toml", dir)
	if err != nil || s.Config.Collaboration == nil || s.Config.Collaboration.Threshold != 0.7 || s.Config.Collaboration.MaxRetries != 3 {
		t.Fatalf("ai_battle with a helper: %+v %v", s.Config.Collaboration, err)
	}
	_, err = presetSpec(t, "langchain", "")
	if !errors.Is(err, agent.ErrInvalid) || !strings.Contains(err.Error(), "ai_battle, caxton, edison, sabre, torchrl") {
		t.Fatalf("an unknown preset: %v", err)
	}
}
