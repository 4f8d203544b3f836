package agent

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/mcp"
)

// mcpServers maps the [[mcp]] tables onto server configs. Header and env
// values may name environment variables as ${VAR}, so secrets stay out of
// the file.
func (s *Spec) mcpServers() ([]mcp.ServerConfig, error) {
	out := make([]mcp.ServerConfig, 0, len(s.File.MCP))
	for i, m := range s.File.MCP {
		if !enabled(s.File.ToolsEnabled) || !enabled(m.Enabled) {
			continue // off: not started, its tools not declared
		}
		timeout, err := duration(m.Timeout)
		if err != nil {
			return nil, fmt.Errorf("mcp[%d]: timeout: %v", i, err)
		}
		grace, err := duration(m.CancelGrace)
		if err != nil {
			return nil, fmt.Errorf("mcp[%d]: cancel_grace: %v", i, err)
		}
		cfg := mcp.ServerConfig{
			Name: m.Name, Command: m.Command, Args: m.Args, Env: expandAll(m.Env), URL: m.URL,
			Headers: expandAll(m.Headers), Allow: m.Allow, Deny: m.Deny, Timeout: timeout, Idempotent: m.Idempotent,
			CancelGrace: grace, Optional: m.Required != nil && !*m.Required, MaxAttachmentBytes: m.MaxAttachmentBytes,
		}
		for _, r := range m.Roots {
			cfg.Roots = append(cfg.Roots, s.rootURI(r))
		}
		if isPathLike(cfg.Command) {
			// A bare name is looked up in PATH; a path is relative to the agent file.
			cfg.Command = s.Resolve(cfg.Command)
		}
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("mcp[%d] %q: %v", i, m.Name, err)
		}
		out = append(out, cfg)
	}
	return out, nil
}

// rootURI turns a roots entry into a file:// URI: a URI stays as it is, a
// path is made absolute (relative to the agent file).
func (s *Spec) rootURI(r string) string {
	if strings.Contains(r, "://") {
		return r
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Clean(s.Resolve(r)))}).String()
}

func isPathLike(s string) bool {
	for _, r := range s {
		if r == '/' {
			return true
		}
	}
	return false
}

func expandAll(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = os.Expand(v, os.Getenv)
	}
	return out
}

// connectMCP starts the agent's MCP servers, lists their tools and adds them
// to the config and the implementations. A run resumed or replayed from its
// record binds the tools it recorded instead of listing them again, so the
// run sees the same tool list whatever the server offers now.
func (s *Spec) connectMCP(ctx context.Context) (*mcp.Manager, []string, error) {
	if len(s.File.MCP) == 0 {
		return nil, nil, nil
	}
	servers, err := s.mcpServers()
	if err != nil || len(servers) == 0 {
		return nil, nil, err
	}
	m, err := mcp.NewManager(servers, &mcp.Options{Stderr: os.Stderr, Warn: warnMCP})
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	if s.mcpRecord != nil {
		_, err = m.Bind(*s.mcpRecord)
	} else {
		_, warnings, err = m.Tools(ctx)
	}
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("mcp: %w", err)
	}
	if s.mcpRecord == nil {
		rec := m.Record()
		cfg, err := s.withMCP(rec)
		if err != nil {
			m.Close()
			return nil, nil, fmt.Errorf("mcp tools: %w", err)
		}
		s.Config, s.mcpRecord = cfg, &rec
	}
	s.mcpImpls = m.Current()
	for name, d := range mcpTimeouts(servers, s.mcpImpls) {
		s.ToolTimeouts[name] = d
	}
	return m, warnings, nil
}

func warnMCP(msg string) { fmt.Fprintf(os.Stderr, "stepwise: mcp: %s\n", msg) }

// mcpTimeouts bounds each MCP tool's calls in the runner: the server's
// timeout and cancellation grace, then the runner's usual grace.
func mcpTimeouts(servers []mcp.ServerConfig, impls []shell.Tool) map[string]time.Duration {
	bound := map[string]time.Duration{}
	for _, sc := range servers {
		bound[sc.Name] = sc.CallBound()
	}
	out := map[string]time.Duration{}
	for _, impl := range impls {
		name := impl.Spec().Name
		if server, _, ok := mcp.SplitToolName(name); ok {
			out[name] = bound[server] + toolGrace
		}
	}
	return out
}

// withMCP is the agent's config with the MCP tools of rec after the file's
// own, and, when servers are unavailable, a note after the system prompt
// that tells the model their tools are missing.
func (s *Spec) withMCP(rec mcp.Record) (core.Config, error) {
	cfg := s.base
	cfg.Tools = append(slices.Clip(s.base.Tools), rec.Tools...)
	if len(rec.Unavailable) > 0 {
		var notes []string
		for _, name := range slices.Sorted(maps.Keys(rec.Unavailable)) {
			notes = append(notes, fmt.Sprintf("The tools of the MCP server %q are unavailable in this run: %s.", name, rec.Unavailable[name]))
		}
		cfg.SystemPrompt = strings.TrimSpace(cfg.SystemPrompt + "\n\n" + strings.Join(notes, "\n"))
	}
	if err := cfg.Validate(); err != nil {
		return core.Config{}, err
	}
	return cfg, nil
}

// live returns the Live of an agent built with MCP servers: when the
// servers' tool list changes (a server said so, or an optional server was
// given up), the agent is built again with the new list, its source
// recording it, so that a run records the change.
func (s *Spec) live(m *mcp.Manager, opts BuildOptions, built *shell.Agent) func() *shell.Agent {
	l := &liveAgent{m: m, version: m.Version(), cur: built}
	// What does not change: a copy of the spec's static parts.
	spec := *s
	spec.ToolTimeouts = maps.Clone(s.ToolTimeouts)
	servers, _ := s.mcpServers()
	l.rebuild = func(rec mcp.Record, impls []shell.Tool) (*shell.Agent, error) {
		cfg, err := spec.withMCP(rec)
		if err != nil {
			return nil, err
		}
		// The same declaration as at the start: the registry makes both
		// the core's tool list and the implementations.
		c := spec
		c.Config, c.mcpImpls, c.mcpRecord = cfg, impls, &rec
		reg, err := c.registry()
		if err != nil {
			return nil, err
		}
		cfg.Tools = nil
		fresh, err := reg.Agent(cfg)
		if err != nil {
			return nil, err
		}
		next := *built
		next.Config, next.Tools, next.ToolSettings = fresh.Config, fresh.Tools, fresh.ToolSettings
		next.ToolTimeouts = maps.Clone(spec.ToolTimeouts)
		maps.Copy(next.ToolTimeouts, mcpTimeouts(servers, impls))
		next.Source = c.sourceWith(opts)
		return &next, nil
	}
	return l.current
}

// liveAgent follows an MCP manager's tool list.
type liveAgent struct {
	m       *mcp.Manager
	rebuild func(mcp.Record, []shell.Tool) (*shell.Agent, error)

	mu      sync.Mutex
	version uint64
	cur     *shell.Agent
}

func (l *liveAgent) current() *shell.Agent {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := l.m.Version()
	if v == l.version {
		return l.cur
	}
	l.version = v
	next, err := l.rebuild(l.m.Record(), l.m.Current())
	if err != nil {
		// The run goes on with the tools it has.
		warnMCP(fmt.Sprintf("the MCP tool list changed into one the agent cannot use (%v); the run keeps the list it has", err))
		return l.cur
	}
	if bytes.Equal(next.Source, l.cur.Source) {
		return l.cur // listed again, alike
	}
	next.Live = l.current
	l.cur = next
	return next
}

// MCPTools lists the tools of the agent's MCP servers (starting them, then
// shutting them down), for `stepwise tools`.
func (s *Spec) MCPTools(ctx context.Context) ([]core.Tool, []string, error) {
	c := *s
	c.impls = append([]shell.Tool(nil), s.impls...)
	c.ToolTimeouts = map[string]time.Duration{}
	m, warnings, err := c.connectMCP(ctx)
	if m != nil {
		defer m.Close()
	}
	var tools []core.Tool
	if c.mcpRecord != nil {
		tools = c.mcpRecord.Tools
	}
	return tools, warnings, err
}
