package agent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stepwise-agent/stepwise/core"
)

// A preset sets, at once, the defaults of one of the reference designs
// stepwise unifies (/docs: shell/agent/doc.go, "Presets"). It fills only
// the keys the file leaves out: a key the file sets, even to its zero
// value, wins.
type preset struct {
	// what says in a line what the preset is for.
	what string
	// apply sets the preset's values on f for every key set reports as
	// not written in the file.
	apply func(f *File, set func(key string) bool)
}

// presets are the presets by name.
var presets = map[string]preset{
	"sabre": {
		what: "tool calls written as Python calls (helpers programs), an argument outside the subset passed as its source text, external tools that pause the run",
		apply: func(f *File, set func(string) bool) {
			setString(&f.Format, "format", string(core.FormatHelpers), set)
			// The design serializes an expression it cannot evaluate
			// as a string.
			if !set("policy.helpers_source_text") {
				f.Policy.HelpersSourceText = true
			}
		},
	},
	"ai_battle": {
		what: "the fenced ```tool format, and a helper model asked when the primary's replies score low",
		apply: func(f *File, set func(string) bool) {
			setString(&f.Format, "format", string(core.FormatFenced), set)
			if _, ok := f.Models["helper"]; ok && !set("collaboration") {
				threshold, retries := 0.7, 3
				f.Collaboration = &Collaboration{Threshold: &threshold, MaxRetries: &retries}
			}
		},
	},
	"caxton": {
		what: "native calls, the memory tools, and cycle detection",
		apply: func(f *File, set func(string) bool) {
			setString(&f.Format, "format", string(core.FormatNative), set)
			if !set("memory.tools") {
				f.Memory.Tools = true
			}
			if !set("cycles") {
				f.Cycles = &Cycles{MaxPeriod: 4, Repeats: 2}
			}
		},
	},
	"torchrl": {
		what: "<tool> XML blocks, run in order, a turn stopped at its first failed call",
		apply: func(f *File, set func(string) bool) {
			setString(&f.Format, "format", string(core.FormatXML), set)
			if !set("policy.stop_on_error") {
				f.Policy.StopOnError = true
			}
		},
	},
	"edison": {
		what: "the strict JSON loop: exact types (no float for an int), unknown arguments dropped, one correction, 12 s per tool, 5 model turns then a final answer, 3 x 200 in 900 result summaries, cited sources",
		apply: func(f *File, set func(string) bool) {
			setString(&f.Format, "format", string(core.FormatStrict), set)
			if !set("limits.max_turns") {
				f.Limits.MaxTurns = 5
			}
			if !set("policy.on_max_turns") {
				f.Policy.OnMaxTurns = core.LimitAnswer
			}
			if !set("limits.max_corrections") {
				f.Limits.MaxCorrections = 1
			}
			// The design drops unknown arguments silently (the default)
			// and refuses a float where it wants an int.
			if !set("policy.strict_numbers") {
				f.Policy.StrictNumbers = true
			}
			setString(&f.Run.ToolTimeout, "run.tool_timeout", "12s", set)
			if !set("policy.citations") {
				f.Policy.Citations = core.CiteSources
			}
			if !set("summary") {
				f.Summary = Summary{Items: 3, ItemChars: 200, MaxBytes: 900}
			}
		},
	},
}

func setString(v *string, key, value string, set func(string) bool) {
	if !set(key) {
		*v = value
	}
}

// applyPreset fills in f the defaults of its preset (none when it names
// none), for the keys data does not write.
func applyPreset(f *File, data []byte, name string) error {
	if f.Preset == "" {
		return nil
	}
	p, ok := presets[f.Preset]
	if !ok {
		return fmt.Errorf("%w: %s: preset %q is not one of %s", ErrInvalid, name, f.Preset, strings.Join(PresetNames(), ", "))
	}
	written := indexKeys(data)
	p.apply(f, func(key string) bool { _, ok := written[key]; return ok })
	return nil
}

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	var out []string
	for name := range presets {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
