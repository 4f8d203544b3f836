package telemetry

import (
	"net/url"
	"strconv"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell/agent"
	"github.com/stepwise-agent/stepwise/shell/models"
)

// agentInfo is what the spans say of the agent a run follows: its name,
// its models and its tools, read from the agent recorded with the run.
type agentInfo struct {
	name   string
	models map[core.ModelRole]modelInfo
	tools  map[string]core.Tool
}

// modelInfo describes one model role in the GenAI conventions' terms, as
// the provider table (shell/models) names its provider.
type modelInfo struct {
	provider string // gen_ai.provider.name
	model    string // gen_ai.request.model
	address  string // server.address ("" when not known)
	port     int
}

// unknownProvider names the provider of a run whose agent cannot be read
// (a library user's agent with no agent file).
const unknownProvider = "unknown"

// agentOf reads the agent recorded with a run (shell.Agent.Source, as the
// agent package writes it). An agent it cannot read still has its name.
func agentOf(name string, source []byte) agentInfo {
	a := agentInfo{name: name, models: map[core.ModelRole]modelInfo{}, tools: map[string]core.Tool{}}
	spec, _, err := agent.FromSource(source)
	if err != nil {
		return a
	}
	table := models.Providers()
	for role, m := range spec.File.Models {
		r := core.ModelRole(role)
		mi := modelInfo{provider: unknownProvider, model: spec.Config.Models.Primary}
		if r == core.Helper {
			mi.model = spec.Config.Models.Helper
		}
		if e, ok := table.Lookup(m.Provider); ok {
			mi.provider = e.GenAIName
			if e.HTTP {
				mi.address, mi.port = server(m.BaseURL, e.DefaultBaseURL)
			}
		}
		a.models[r] = mi
	}
	for _, t := range spec.Config.ToolList() {
		a.tools[t.Name] = t
	}
	return a
}

// model is the description of role (the provider unknown when the agent
// could not be read).
func (a agentInfo) model(role core.ModelRole) modelInfo {
	if m, ok := a.models[role]; ok {
		return m
	}
	return modelInfo{provider: unknownProvider}
}

// server is the host and port of a base URL (def when empty); none when
// it does not parse.
func server(base, def string) (string, int) {
	if base == "" {
		base = def
	}
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" {
		return "", 0
	}
	port, _ := strconv.Atoi(u.Port())
	if port == 0 {
		port = 443
		if u.Scheme == "http" {
			port = 80
		}
	}
	return u.Hostname(), port
}
