package agent

import (
	"context"
	"fmt"
	"os"
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
		cfg := mcp.ServerConfig{
			Name: m.Name, Command: m.Command, Args: m.Args, Env: expandAll(m.Env), URL: m.URL,
			Headers: expandAll(m.Headers), Allow: m.Allow, Deny: m.Deny, Timeout: timeout, Idempotent: m.Idempotent,
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
	m, err := mcp.NewManager(servers, &mcp.Options{Stderr: os.Stderr})
	if err != nil {
		return nil, nil, err
	}
	var impls []shell.Tool
	var warnings []string
	if s.mcpRecorded != nil {
		impls, err = m.Bind(s.mcpRecorded)
	} else {
		impls, warnings, err = m.Tools(ctx)
	}
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("mcp: %w", err)
	}
	specs := mcp.ToolSpecs(impls)
	if s.mcpRecorded == nil {
		s.Config.Tools = append(s.Config.Tools, specs...)
		if err := s.Config.Validate(); err != nil {
			m.Close()
			return nil, nil, fmt.Errorf("mcp tools: %w", err)
		}
		s.mcpRecorded = specs
	}
	byServer := map[string]time.Duration{}
	for _, sc := range servers {
		byServer[sc.Name] = sc.Timeout
	}
	for _, impl := range impls {
		name := impl.Spec().Name
		if server, _, ok := mcp.SplitToolName(name); ok {
			d := byServer[server]
			if d <= 0 {
				d = 30 * time.Second
			}
			s.ToolTimeouts[name] = d + toolGrace
		}
	}
	s.impls = append(s.impls, impls...)
	return m, warnings, nil
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
	return c.mcpRecorded, warnings, err
}
