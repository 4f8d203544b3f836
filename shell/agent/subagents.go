package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// AgentTable is one [[agents]] entry: another agent file this agent calls
// as a tool (a sub-agent; shell/subagents.go, ADR 0034).
type AgentTable struct {
	// Name is the tool's name; Description what the model reads of it.
	Name        string `toml:"name"`
	File        string `toml:"file"`
	Description string `toml:"description"`
	// Mode is "tool" (the default): a call starts a child run.
	Mode string `toml:"mode"`
	// Parameters, when set, is the call's JSON Schema: the child's input is
	// the arguments' JSON. Without, the call takes a task (a string), the
	// child's input.
	Parameters any `toml:"parameters"`
}

// taskSchema is a sub-agent's parameters when its table declares none.
var taskSchema = json.RawMessage(`{"type":"object","properties":{"task":{"type":"string","description":"what the agent is to do, with everything it needs to know"}},"required":["task"],"additionalProperties":false}`)

// handoffSchema is a handoff tool's parameters.
var handoffSchema = json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string","description":"why the conversation is handed over"}}}`)

// agentSpecs are the tools the [[agents]] tables declare to the core.
func agentSpecs(f File, resolve func(string) string, checkFiles bool, at func(path, format string, args ...any) error) ([]core.Tool, error) {
	var out []core.Tool
	for i, a := range f.Agents {
		path := fmt.Sprintf("agents.%d", i)
		switch a.Mode {
		case "", "tool", "handoff":
		default:
			return nil, at(path+".mode", "agents[%d]: mode %q is not one of tool, handoff", i, a.Mode)
		}
		if a.Name == "" || a.File == "" {
			return nil, at(path, "agents[%d] needs a name and a file", i)
		}
		if checkFiles {
			if _, err := os.Stat(resolve(a.File)); err != nil {
				return nil, at(path+".file", "agents[%d]: %v", i, err)
			}
		}
		if a.Mode == "handoff" {
			if a.Parameters != nil {
				return nil, at(path+".parameters", "agents[%d]: a handoff takes no parameters", i)
			}
			desc := a.Description
			if desc == "" {
				desc = "Hand the conversation to the " + a.Name + " agent, which goes on with it."
			}
			out = append(out, core.Tool{Name: a.Name, Description: desc, Parameters: handoffSchema, Mode: core.ModeInternal, Idempotent: true})
			continue
		}
		params := taskSchema
		if a.Parameters != nil {
			p, err := parameters(a.Parameters)
			if err != nil {
				return nil, at(path+".parameters", "agents[%d].parameters: %v", i, err)
			}
			params = p
		}
		desc := a.Description
		if desc == "" {
			desc = "Ask the " + a.Name + " agent to do a task; it answers when done."
		}
		out = append(out, core.Tool{Name: a.Name, Description: desc, Parameters: params, Mode: core.ModeInternal, Idempotent: true})
	}
	return out, nil
}

// subAgents builds the agents the [[agents]] tables name, each from its
// own file, at most shell.MaxAgentDepth deep (a file that names itself,
// directly or not, is refused there).
func (s *Spec) subAgents(ctx context.Context, opts BuildOptions) (map[string]*shell.SubAgent, func() error, error) {
	tools := 0
	for _, a := range s.File.Agents {
		if a.Mode != "handoff" {
			tools++
		}
	}
	if tools == 0 {
		return nil, nil, nil
	}
	if opts.AgentDepth >= shell.MaxAgentDepth {
		return nil, nil, fmt.Errorf("%w: sub-agents nest more than %d deep (does an agent file name itself?)", ErrInvalid, shell.MaxAgentDepth)
	}
	out := map[string]*shell.SubAgent{}
	var closers []func() error
	closeAll := func() error {
		var errs []error
		for _, c := range closers {
			errs = append(errs, c())
		}
		return errors.Join(errs...)
	}
	for _, a := range s.File.Agents {
		if a.Mode == "handoff" {
			continue // built on use: see handoffs
		}
		spec, err := Load(s.Resolve(a.File))
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("agent %s: %w", a.Name, err)
		}
		ag, err := spec.Build(ctx, BuildOptions{AgentDepth: opts.AgentDepth + 1})
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("agent %s: %w", a.Name, err)
		}
		if ag.Close != nil {
			closers = append(closers, ag.Close)
		}
		out[a.Name] = &shell.SubAgent{Agent: ag, Task: a.Parameters == nil}
	}
	return out, closeAll, nil
}

// handoffs are the agents the [[agents]] tables with mode = "handoff"
// name, each built from its file on the first handoff to it (and kept);
// close releases what the built ones hold.
func (s *Spec) handoffs(opts BuildOptions) (map[string]*shell.Handoff, func() error) {
	out := map[string]*shell.Handoff{}
	var mu sync.Mutex
	var built []*shell.Agent
	for _, a := range s.File.Agents {
		if a.Mode != "handoff" {
			continue
		}
		path := s.Resolve(a.File)
		var once sync.Once
		var ag *shell.Agent
		var err error
		out[a.Name] = &shell.Handoff{Name: a.Name, Load: func(ctx context.Context) (*shell.Agent, error) {
			once.Do(func() {
				var spec *Spec
				if spec, err = Load(path); err != nil {
					return
				}
				if ag, err = spec.Build(ctx, BuildOptions{AgentDepth: opts.AgentDepth}); err == nil {
					mu.Lock()
					built = append(built, ag)
					mu.Unlock()
				}
			})
			return ag, err
		}}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, func() error {
		mu.Lock()
		defer mu.Unlock()
		var errs []error
		for _, b := range built {
			if b.Close != nil {
				errs = append(errs, b.Close())
			}
		}
		return errors.Join(errs...)
	}
}
