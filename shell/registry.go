package shell

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/core/schema"
	"github.com/stepwise-agent/stepwise/store"
)

// ToolSettings are what the shell knows of an internal tool beyond its
// declaration (core.Tool). The zero value asks for nothing.
type ToolSettings struct {
	// View lists the fields of the run the tool receives with each call
	// (see View); empty: none.
	View View
	// OutputSchema, when set, is a JSON Schema the tool's output (a JSON
	// text) must fit. The shell checks every successful result against it
	// before the core folds it in; one that does not fit becomes the
	// tool's error, naming the mismatch, which the model reads.
	OutputSchema json.RawMessage
	// Cache, when set, answers repeated calls from earlier results (see
	// CachePolicy). Only idempotent tools may be cached.
	Cache *CachePolicy
	// Rate, when set, bounds how often the tool runs in this process; a
	// call past it waits (see Rate).
	Rate *Rate
}

// Registry declares an agent's tools once: each internal tool by its
// implementation (whose Spec is its declaration) and each external tool
// by its declaration alone (the caller runs it, and the run pauses for
// it). It also holds the tool-call formats a program adds (Format). Agent
// builds the shell.Agent whose Config.Tools and Tools both come from it,
// so the two cannot drift, with its Config compiled (core.Compile) once.
// The order of registration is the order the model sees the tools in. A
// Registry is not safe for concurrent use while tools or formats are being
// registered.
type Registry struct {
	decls    []core.Tool
	impls    map[string]Tool
	settings map[string]ToolSettings
	formats  *core.Formats
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{impls: map[string]Tool{}, settings: map[string]ToolSettings{}}
}

// ErrToolDeclaration wraps every error about how a tool is declared: by
// Registry, and by Runner at the start of a run (a tool implemented but
// not declared, declared but not implemented, or declared differently
// from its implementation).
var ErrToolDeclaration = errors.New("tool declaration")

func declErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrToolDeclaration, fmt.Sprintf(format, args...))
}

// Internal registers a tool the shell runs, declared by its Spec (whose
// Mode must be internal, mcp or empty), with its settings (nil: none). A
// name registered before, a GoTool whose schema could not be derived, and
// settings that do not fit the tool are errors, and register nothing.
func (r *Registry) Internal(t Tool, s *ToolSettings) error {
	if t == nil {
		return declErrorf("no tool")
	}
	if g, ok := t.(*GoTool); ok && g.err != nil {
		return fmt.Errorf("%w: %w", ErrToolDeclaration, g.err)
	}
	spec := t.Spec()
	if err := r.free(spec.Name); err != nil {
		return err
	}
	switch spec.Mode {
	case "", core.ModeInternal, core.ModeMCP:
	default:
		return declErrorf("tool %q: mode %q: register an external tool with External", spec.Name, spec.Mode)
	}
	var set ToolSettings
	if s != nil {
		set = *s
		if err := set.check(spec); err != nil {
			return err
		}
	}
	r.decls = append(r.decls, spec)
	r.impls[spec.Name] = t
	if s != nil {
		r.settings[spec.Name] = set
	}
	return nil
}

// External registers a tool the caller runs: the run pauses with its
// calls (awaiting_tool_results) until they are answered (Runner.Submit).
// Its Mode is set to external; another mode is an error.
func (r *Registry) External(spec core.Tool) error {
	if err := r.free(spec.Name); err != nil {
		return err
	}
	if spec.Mode != "" && spec.Mode != core.ModeExternal {
		return declErrorf("tool %q: mode %q: register a tool the shell runs with Internal", spec.Name, spec.Mode)
	}
	spec.Mode = core.ModeExternal
	r.decls = append(r.decls, spec)
	return nil
}

func (r *Registry) free(name string) error {
	if !core.ValidToolName(name) {
		return declErrorf("tool name %q: must be 1-64 letters, digits, '_', '-' or '.'", name)
	}
	if slices.ContainsFunc(r.decls, func(t core.Tool) bool { return t.Name == name }) {
		return declErrorf("tool %q is registered twice", name)
	}
	return nil
}

// Format adds a tool-call format under name, for the agents the registry
// builds to select with Config.Format. The name may not be a built-in
// format's or one added before (core.Formats.With says what else is
// refused); the error wraps core.ErrFormatRegistration.
func (r *Registry) Format(name core.Format, f core.FormatSpec) error {
	fs, err := r.formats.With(name, f)
	if err != nil {
		return err
	}
	r.formats = fs
	return nil
}

// Formats is the table of the registry's formats: the built-in ones and
// those added with Format.
func (r *Registry) Formats() *core.Formats { return r.formats }

// IsExternal reports whether name is registered as an external tool.
func (r *Registry) IsExternal(name string) bool {
	i := slices.IndexFunc(r.decls, func(t core.Tool) bool { return t.Name == name })
	return i >= 0 && r.decls[i].Mode == core.ModeExternal
}

// ExternalTools lists the declarations of the external tools, in the
// order registered.
func (r *Registry) ExternalTools() []core.Tool {
	var out []core.Tool
	for _, t := range r.decls {
		if t.Mode == core.ModeExternal {
			out = append(out, t)
		}
	}
	return out
}

// Tools lists every declaration, in the order registered.
func (r *Registry) Tools() []core.Tool { return slices.Clone(r.decls) }

// Tool returns the implementation of an internal tool.
func (r *Registry) Tool(name string) (Tool, bool) {
	t, ok := r.impls[name]
	return t, ok
}

// Agent returns an agent of cfg whose tools are the registry's: its
// Config.Tools are their declarations, Tools their implementations and
// ToolSettings their settings. cfg must declare no tools itself (the
// registry is the one declaration). Its Config is compiled with the
// registry's formats (core.Compile): validated, its format resolved and
// its schemas compiled, once for every run of the agent. The caller sets
// Models (and the other fields it needs) before running it.
func (r *Registry) Agent(cfg core.Config) (*Agent, error) {
	if len(cfg.Tools) > 0 {
		return nil, declErrorf("the config already declares %d tool(s); declare every tool once, in the registry", len(cfg.Tools))
	}
	cfg.Tools = slices.Clone(r.decls)
	cfg, err := core.Compile(cfg, r.formats)
	if err != nil {
		return nil, err
	}
	ag := &Agent{Config: cfg, Models: map[core.ModelRole]ModelProvider{}, Tools: maps.Clone(r.impls)}
	if len(r.settings) > 0 {
		ag.ToolSettings = maps.Clone(r.settings)
	}
	return ag, nil
}

// compiledConfig is cfg compiled (core.Compile) with the formats it was
// compiled with before, if any: a config Registry.Agent compiled costs
// little to compile again (its unchanged schemas are reused), and one
// built without a Registry is compiled once per drive rather than on
// every step; cfg itself when it does not compile (Runner.check reports
// why).
func compiledConfig(cfg core.Config) core.Config {
	if c, err := core.Compile(cfg, cfg.Formats()); err == nil {
		return c
	}
	return cfg
}

// check reports whether s fits the tool declared as spec.
func (s ToolSettings) check(spec core.Tool) error {
	if err := s.View.Validate(); err != nil {
		return declErrorf("tool %q: %v", spec.Name, err)
	}
	if len(s.OutputSchema) > 0 {
		if _, err := schema.CompileOutput(s.OutputSchema); err != nil {
			return declErrorf("tool %q: output schema: %v", spec.Name, err)
		}
	}
	if s.Cache != nil {
		if err := s.Cache.validate(); err != nil {
			return declErrorf("tool %q: %v", spec.Name, err)
		}
		if !spec.Idempotent {
			return declErrorf("tool %q: only idempotent tools are cached: declare it idempotent if running it twice is safe and gives the same result", spec.Name)
		}
	}
	return nil
}

// checkTools reports, at the start of a run, every way ag's tools are not
// declared once: an implementation whose name is not declared (the model
// would not see it), declared external (the caller runs it), or declared
// with another schema than its own; settings of a tool that is not an
// implemented one, or that do not fit it; a cache across runs on a store
// without a ToolCache. (A declared tool without an implementation is
// reported by check.)
func (r *Runner) checkTools(ag *Agent) error {
	decls := ag.Config.ToolList()
	find := func(name string) (core.Tool, bool) {
		i := slices.IndexFunc(decls, func(t core.Tool) bool { return t.Name == name })
		if i < 0 {
			return core.Tool{}, false
		}
		return decls[i], true
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(ag.Tools)) {
		impl := ag.Tools[name]
		if g, ok := impl.(*GoTool); ok && g.err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", ErrToolDeclaration, g.err))
			continue
		}
		decl, ok := find(name)
		switch {
		case !ok:
			errs = append(errs, declErrorf("tool %q is implemented (Agent.Tools) but not declared (Config.Tools), so the model would not see it; declare each tool once, with a shell.Registry", name))
			continue
		case decl.Mode == core.ModeExternal:
			errs = append(errs, declErrorf("tool %q is declared external (the caller runs it) but has an implementation in Agent.Tools", name))
			continue
		}
		spec := impl.Spec()
		if spec.Name != name {
			errs = append(errs, declErrorf("Agent.Tools[%q] is a tool named %q", name, spec.Name))
		} else if !sameSchema(spec.Parameters, decl.Parameters) {
			errs = append(errs, declErrorf("tool %q: its declaration (Config.Tools) has another parameter schema than its implementation; declare each tool once, with a shell.Registry", name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ag.ToolSettings)) {
		decl, ok := find(name)
		if !ok || ag.Tools[name] == nil {
			errs = append(errs, declErrorf("ToolSettings[%q] names no tool the shell runs", name))
			continue
		}
		s := ag.ToolSettings[name]
		decl.Idempotent = decl.Idempotent || ag.Tools[name].Spec().Idempotent
		if err := s.check(decl); err != nil {
			errs = append(errs, err)
			continue
		}
		if s.Cache != nil && s.Cache.TTL > 0 {
			if _, ok := r.store.(store.ToolCache); !ok {
				errs = append(errs, declErrorf("tool %q is cached across runs (ttl %s), but the store (%T) keeps no tool cache", name, s.Cache.TTL, r.store))
			}
		}
	}
	return errors.Join(errs...)
}

// sameSchema reports whether two parameter schemas are the same JSON value
// (key order and spaces aside); empty and null are the same.
func sameSchema(a, b json.RawMessage) bool {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if bytes.Equal(a, b) {
		return true
	}
	empty := func(s json.RawMessage) bool { return len(s) == 0 || string(s) == "null" }
	if empty(a) || empty(b) {
		return empty(a) && empty(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
