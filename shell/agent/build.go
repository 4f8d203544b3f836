package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models"
	"github.com/stepwise-agent/stepwise/shell/models/provider"
	"github.com/stepwise-agent/stepwise/shell/models/script"
)

// BuildOptions change how an agent is built for one command.
type BuildOptions struct {
	// Script, when set, answers the primary model from this JSONL file. A
	// relative path is relative to the current directory (not the agent
	// file's); the run records it absolute.
	Script string
	// ScriptOffset is the number of model calls made before the script
	// starts answering (a fork continues a run on a new script).
	ScriptOffset int
	// Render builds the model providers to render requests only
	// (provider.Build.Render): no API key or script file is read, and
	// they call no model. Models takes it; Build refuses it.
	Render bool
	// AgentDepth is how deep this agent is built as a sub-agent of
	// another (0: a root); its [[agents]] are built one deeper.
	AgentDepth int
}

// Build creates the live agent: model providers and tool implementations.
// An agent with MCP servers connects to them here (the tool list is needed
// before the run starts); the agent's Close shuts them down. Connecting
// takes as long as ctx allows: Build sets no deadline of its own (the CLI
// gives it two minutes). When ctx ends first, Build stops the servers it
// started and returns an error that wraps ctx's.
func (s *Spec) Build(ctx context.Context, opts BuildOptions) (*shell.Agent, error) {
	if opts.Render {
		return nil, fmt.Errorf("build: an agent built to render requests cannot run (use Models)")
	}
	m, warnings, err := s.connectMCP(ctx)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		fmt.Fprintf(os.Stderr, "stepwise: mcp: %s\n", w)
	}
	ag, err := s.build(opts)
	if err != nil {
		if m != nil {
			m.Close()
		}
		return nil, err
	}
	subs, closeSubs, err := s.subAgents(ctx, opts)
	if err != nil {
		if m != nil {
			m.Close()
		}
		return nil, err
	}
	ag.SubAgents = subs
	hands, closeHands := s.handoffs(opts)
	ag.Handoffs = hands
	if m != nil {
		ag.Close = m.Close
		ag.Live = s.live(m, opts, ag)
	}
	for _, c := range []func() error{closeSubs, closeHands} {
		if c == nil {
			continue
		}
		own := ag.Close
		ag.Close = func() error {
			err := c()
			if own != nil {
				err = errors.Join(err, own())
			}
			return err
		}
	}
	return ag, nil
}

func (s *Spec) build(opts BuildOptions) (*shell.Agent, error) {
	if opts.Script != "" {
		abs, err := filepath.Abs(opts.Script)
		if err != nil {
			return nil, fmt.Errorf("script: %w", err)
		}
		opts.Script = abs
	}
	// One declaration: the registry makes both the core's tool list and
	// the implementations, from the tables.
	reg, err := s.registry()
	if err != nil {
		return nil, err
	}
	cfg := s.Config
	cfg.Tools = nil
	ag, err := reg.Agent(cfg)
	if err != nil {
		return nil, err
	}
	ag.Config.Tools = append(ag.Config.Tools, s.agentTools...)
	ag.ToolTimeouts, ag.ToolRetry = s.ToolTimeouts, s.ToolRetry
	ag.Secrets, ag.InDoubt = s.secrets(), s.InDoubt
	models, err := s.Models(opts)
	if err != nil {
		return nil, err
	}
	maps.Copy(ag.Models, models)
	ag.Source = s.sourceWith(opts)
	return ag, nil
}

// Models builds the agent's model providers, one per role, as Build does
// (opts.Script answers the primary role), and nothing else: no tool is
// made and no MCP server started. With opts.Render the providers only
// render requests (shell.RequestRenderer) and read no API key.
func (s *Spec) Models(opts BuildOptions) (map[core.ModelRole]shell.ModelProvider, error) {
	out := map[core.ModelRole]shell.ModelProvider{}
	for _, role := range slices.Sorted(maps.Keys(s.File.Models)) {
		m, r := s.File.Models[role], core.ModelRole(role)
		if r == core.Primary && opts.Script != "" {
			m = scriptModel(opts.Script)
		}
		p, err := s.provider(role, m, opts)
		if err != nil {
			return nil, fmt.Errorf("models.%s: %w", role, err)
		}
		out[r] = p
	}
	if opts.Script != "" && out[core.Primary] == nil {
		p, err := s.provider(string(core.Primary), scriptModel(opts.Script), opts)
		if err != nil {
			return nil, err
		}
		out[core.Primary] = p
	}
	return out, nil
}

// Secrets reads the agent's secret variables (shell.Agent.Secrets): the
// values to redact from what is shown of its runs.
func (s *Spec) Secrets() []shell.Secret { return s.secrets() }

// scriptModel is the model a --script override answers with.
func scriptModel(path string) Model {
	return Model{Settings: provider.Settings{Provider: script.Name, Script: path}}
}

// provider builds one model role through its entry in the provider table.
func (s *Spec) provider(role string, m Model, opts BuildOptions) (shell.ModelProvider, error) {
	e, ok := models.Providers().Lookup(m.Provider)
	if !ok {
		return nil, fmt.Errorf("unknown provider %q", m.Provider)
	}
	b := provider.Build{Settings: m.Settings, Retry: s.modelRetry[role], ScriptOffset: opts.ScriptOffset, Render: opts.Render}
	b.Script = s.Resolve(m.Script)
	b.Timeout, _ = duration(m.Timeout)
	if m.MaxRetries != 0 && b.Retry.Attempts == 0 {
		b.Retry.Attempts = max(m.MaxRetries, 0) + 1
	}
	b.NoStream = m.Stream != nil && !*m.Stream
	return e.New(b)
}

// Source is what a run built with opts records of its agent, before MCP
// servers are listed (Build adds their tools): a key for built agents.
func (s *Spec) Source(opts BuildOptions) []byte { return s.sourceWith(opts) }

// sourceWith records the agent file and the script override (an absolute
// path), so resuming the run later rebuilds the same agent.
func (s *Spec) sourceWith(opts BuildOptions) []byte {
	src := source{Path: s.Path, Dir: s.Dir, TOML: string(s.Text)}
	if rec := s.mcpRecord; rec != nil {
		src.MCPTools, src.MCPOutputSchemas, src.MCPUnavailable = rec.Tools, rec.OutputSchemas, rec.Unavailable
	}
	if opts.Script != "" {
		src.Script = opts.Script
		src.ScriptOffset = opts.ScriptOffset
	}
	b, _ := json.Marshal(src)
	return b
}
