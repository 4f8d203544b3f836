package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/anthropic"
	"github.com/stepwise-agent/stepwise/shell/models/openai"
	"github.com/stepwise-agent/stepwise/shell/models/responses"
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
}

// Build creates the live agent: model providers and tool implementations.
// An agent with MCP servers connects to them here (the tool list is needed
// before the run starts); the agent's Close shuts them down.
func (s *Spec) Build(opts BuildOptions) (*shell.Agent, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
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
	if m != nil {
		ag.Close = m.Close
		ag.Live = s.live(m, opts, ag)
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
	ag.ToolTimeouts, ag.ToolRetry = s.ToolTimeouts, s.ToolRetry
	ag.Secrets, ag.InDoubt = s.secrets(), s.InDoubt
	for _, role := range slices.Sorted(maps.Keys(s.File.Models)) {
		m, r := s.File.Models[role], core.ModelRole(role)
		if r == core.Primary && opts.Script != "" {
			m = Model{Provider: "script", Script: opts.Script}
		}
		p, err := s.provider(role, m, opts.ScriptOffset)
		if err != nil {
			return nil, fmt.Errorf("models.%s: %w", role, err)
		}
		ag.Models[r] = p
	}
	if opts.Script != "" && ag.Models[core.Primary] == nil {
		p, err := s.provider(string(core.Primary), Model{Provider: "script", Script: opts.Script}, opts.ScriptOffset)
		if err != nil {
			return nil, err
		}
		ag.Models[core.Primary] = p
	}
	ag.Source = s.sourceWith(opts)
	return ag, nil
}

func (s *Spec) provider(role string, m Model, offset int) (shell.ModelProvider, error) {
	switch m.Provider {
	case "script":
		p, err := script.Load(s.Resolve(m.Script))
		if err != nil {
			return nil, err
		}
		return p.WithOffset(offset), nil
	}
	timeout, _ := duration(m.Timeout)
	retry := s.modelRetry[role]
	if m.MaxRetries != 0 && retry.Attempts == 0 {
		retry.Attempts = max(m.MaxRetries, 0) + 1
	}
	noStream := m.Stream != nil && !*m.Stream
	switch m.Provider {
	case "openai":
		return openai.New(openai.Options{
			BaseURL: m.BaseURL, Model: m.Model, APIKeyEnv: m.APIKeyEnv, Timeout: timeout,
			Retry: s.modelRetry[role], MaxRetries: m.MaxRetries, Temperature: m.Temperature, MaxTokens: m.MaxTokens,
			Accepts:  m.Accepts,
			NoStream: noStream,
		})
	case responses.Name:
		return responses.New(responses.Options{
			BaseURL: m.BaseURL, Model: m.Model, APIKeyEnv: m.APIKeyEnv, Timeout: timeout, Retry: retry,
			Temperature: m.Temperature, MaxTokens: m.MaxTokens, NoStream: noStream,
			ReasoningEffort: m.ReasoningEffort, ReasoningSummary: m.ReasoningSummary,
		})
	case anthropic.Name:
		return anthropic.New(anthropic.Options{
			BaseURL: m.BaseURL, Model: m.Model, APIKeyEnv: m.APIKeyEnv, Timeout: timeout, Retry: retry,
			Temperature: m.Temperature, MaxTokens: m.MaxTokens, NoStream: noStream, ThinkingBudget: m.ThinkingBudget,
		})
	}
	return nil, fmt.Errorf("unknown provider %q", m.Provider)
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
