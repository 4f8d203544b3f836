package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/core/schema"
	"github.com/stepwise-agent/stepwise/shell"
)

// enabled reports whether a table's enabled key leaves it on (absent: on).
func enabled(b *bool) bool { return b == nil || *b }

// settings checks a [[tools]] table's view, output_schema, cache and rate keys
// and records them as the shell.ToolSettings of each tool it makes.
// external is set for an external tool's table.
func (s *Spec) settings(t ToolTable, specs []core.Tool, external bool) error {
	var set shell.ToolSettings
	some := false
	if t.View != nil {
		if t.Command == nil {
			return keyErrorf("view", "only a command tool takes a view of the run (a built-in has no use for one; the caller runs an external tool)")
		}
		set.View = shell.View(t.View)
		if err := set.View.Validate(); err != nil {
			return &keyError{"view", err}
		}
		some = true
	}
	if t.OutputSchema != nil {
		if t.Command == nil {
			return keyErrorf("output_schema", "only a command tool takes an output schema (the built-ins write text; the caller answers for an external tool)")
		}
		raw, err := parameters(t.OutputSchema)
		if err == nil {
			_, err = schema.CompileOutput(raw)
		}
		if err != nil {
			return keyErrorf("output_schema", "%v", err)
		}
		set.OutputSchema, some = raw, true
	}
	if t.Cache != "" {
		if external {
			return keyErrorf("cache", "the caller runs an external tool; its results are not cached")
		}
		p, err := cachePolicy(t.Cache)
		if err != nil {
			return &keyError{"cache", err}
		}
		if slices.ContainsFunc(specs, func(ct core.Tool) bool { return !ct.Idempotent }) {
			return keyErrorf("cache", "only idempotent tools are cached: set idempotent = true if running the tool twice is safe and gives the same result")
		}
		if t.Builtin != "" && slices.ContainsFunc(specs, func(ct core.Tool) bool { return ct.Name == "write_file" }) {
			return keyErrorf("cache", "write_file changes files: a cached call would not write; give read_file and list_files tables of their own to cache them")
		}
		p.Version = tableDigest(t)
		set.Cache, some = &p, true
	}
	if t.Rate != "" {
		if external {
			return keyErrorf("rate", "the caller runs an external tool; its rate is the caller's to keep")
		}
		r, err := shell.ParseRate(t.Rate)
		if err != nil {
			return &keyError{"rate", err}
		}
		set.Rate, some = &r, true
	}
	if some {
		for _, ct := range specs {
			s.ToolSettings[ct.Name] = set
		}
	}
	return nil
}

// tableDigest identifies a tool's table for its cross-run cache
// (shell.CachePolicy.Version): a digest of its canonical JSON without the
// cache key itself, so that changing how long results are kept keeps them.
func tableDigest(t ToolTable) string {
	t.Cache, t.Rate = "", ""  // neither changes what the tool returns
	b, err := json.Marshal(t) // struct fields in order, map keys sorted
	if err != nil {
		// A value JSON cannot hold (a NaN in parameters): its text holds
		// the addresses of the table's pointers, so no other load of the
		// file gets the same digest, and nothing kept before is reused.
		b = fmt.Appendf(nil, "%v", t)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// cachePolicy reads a cache key: "run", or a positive duration.
func cachePolicy(v string) (shell.CachePolicy, error) {
	if v == "run" {
		return shell.CachePolicy{}, nil
	}
	d, err := duration(v)
	if err != nil || d == 0 {
		return shell.CachePolicy{}, errors.New(`cache: want "run" (results reused within a run) or a positive duration like "1h" (reused across runs for that long)`)
	}
	return shell.CachePolicy{TTL: d}, nil
}

// declared is a tool whose declaration is its table's (a description or
// idempotent key overrides a built-in's own), so that the registry
// declares it as the file does.
type declared struct {
	shell.Tool
	spec core.Tool
}

func (d declared) Spec() core.Tool { return d.spec }

// registry declares the spec's tools once: each internal and MCP tool by
// its implementation, each external one by its declaration, in the order
// of the config. A declaration without an implementation, or an
// implementation without one, is an error.
func (s *Spec) registry() (*shell.Registry, error) {
	impls := map[string]shell.Tool{}
	for _, impl := range slices.Concat(s.impls, s.mcpImpls) {
		impls[impl.Spec().Name] = impl
	}
	reg := shell.NewRegistry()
	agents := map[string]bool{}
	for _, t := range s.agentTools {
		agents[t.Name] = true
	}
	for _, decl := range s.Config.Tools {
		if agents[decl.Name] {
			continue // a sub-agent: build adds it (subagents.go)
		}
		if decl.Mode == core.ModeExternal {
			if err := reg.External(decl); err != nil {
				return nil, err
			}
			continue
		}
		impl := impls[decl.Name]
		if impl == nil {
			return nil, fmt.Errorf("%w: tool %q is declared but has no implementation", shell.ErrToolDeclaration, decl.Name)
		}
		delete(impls, decl.Name)
		var set *shell.ToolSettings
		if v, ok := s.ToolSettings[decl.Name]; ok {
			set = &v
		}
		if err := reg.Internal(declared{impl, decl}, set); err != nil {
			return nil, err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(impls)) {
		return nil, fmt.Errorf("%w: tool %q is implemented but not declared", shell.ErrToolDeclaration, name)
	}
	return reg, nil
}
