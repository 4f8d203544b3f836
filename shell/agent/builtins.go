package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/tools"
)

// toolGrace is how much longer the runner waits than a tool's own timeout,
// so the tool reports its timeout itself (with its output so far).
const toolGrace = 2 * time.Second

// implsFor builds the implementations of a [[tools]] table: a built-in, a
// command tool, or nothing for an external tool (the caller runs it).
// params is the table's schema. A tool's secrets join its env.
func (s *Spec) implsFor(t ToolTable, params json.RawMessage) ([]shell.Tool, error) {
	timeout, err := duration(t.Timeout)
	if err != nil {
		return nil, fmt.Errorf("timeout: %v", err)
	}
	env := append(slices.Clone(t.Env), t.Secrets...)
	switch {
	case t.Builtin != "":
		if t.Mode != "" || t.Command != nil || t.Name != "" || t.Parameters != nil {
			return nil, errors.New("a builtin takes none of name, mode, command, parameters (its schema is built in)")
		}
		return tools.Builtin(t.Builtin, tools.Options{
			RunCode:   tools.RunCodeOptions{Languages: t.Languages, Timeout: timeout, MaxOutput: t.MaxOutput, Env: env},
			Files:     tools.FilesOptions{Root: s.Resolve(t.Root), MaxReadBytes: t.MaxBytes},
			HTTPGet:   tools.HTTPGetOptions{AllowHosts: t.AllowHosts, MaxBytes: t.MaxBytes, Timeout: timeout},
			WebSearch: tools.WebSearchOptions{Backend: t.Backend, BaseURL: t.BaseURL, APIKeyEnv: t.APIKeyEnv, MaxResults: t.MaxResults, Timeout: timeout},
			SQLQuery:  tools.SQLQueryOptions{Path: s.Resolve(t.Path), MaxRows: t.MaxRows, Timeout: timeout},
			Image:     tools.ImageOptions{BaseURL: t.BaseURL, APIKeyEnv: t.APIKeyEnv, Model: t.Model, Timeout: timeout},
			Stats:     tools.SystemStatsOptions{Disk: s.Resolve(t.Path)},
		})
	case t.Command != nil:
		if t.Mode != "" && t.Mode != string(core.ModeInternal) {
			return nil, errors.New("a command tool runs in the shell: leave mode out")
		}
		cmd, err := tools.Command(tools.CommandSpec{
			Name: t.Name, Description: t.Description, Parameters: params, Argv: t.Command, Stdin: t.Stdin,
			Dir: s.Resolve(t.Dir), Env: env, Timeout: timeout, MaxOutput: t.MaxOutput, PassContext: t.PassContext,
			Idempotent: t.Idempotent != nil && *t.Idempotent,
		})
		if err != nil {
			return nil, err
		}
		return []shell.Tool{cmd}, nil
	case t.Mode == string(core.ModeExternal):
		return nil, nil
	case t.Mode == "":
		return nil, errors.New("give builtin = NAME, command = [...], or mode = \"external\"")
	}
	return nil, fmt.Errorf("mode %q: a tool table is a builtin, a command, or mode = \"external\" (MCP tools come from [[mcp]])", t.Mode)
}

// specsFor is the core's view of a table's tools.
func (s *Spec) specsFor(t ToolTable, params json.RawMessage, impls []shell.Tool) ([]core.Tool, error) {
	if impls == nil { // external
		for _, k := range []struct {
			set  bool
			name string
		}{
			{t.Stdin != "", "stdin"}, {t.Dir != "", "dir"}, {t.Env != nil, "env"}, {t.PassContext, "pass_context"},
			{t.Timeout != "", "timeout"}, {t.Retry != nil, "retry"},
		} {
			if k.set {
				return nil, fmt.Errorf("%q: %s does not apply to an external tool", t.Name, k.name)
			}
		}
		return []core.Tool{{Name: t.Name, Description: t.Description, Parameters: params, Mode: core.ModeExternal,
			Idempotent: t.Idempotent != nil && *t.Idempotent, MaxResultBytes: t.MaxResultBytes, Summary: (*core.Summary)(t.Summary), EndsTurn: t.EndsTurn}}, nil
	}
	out := make([]core.Tool, len(impls))
	for i, impl := range impls {
		spec := impl.Spec()
		spec.Mode = core.ModeInternal
		if t.Idempotent != nil {
			spec.Idempotent = *t.Idempotent
		}
		if t.Description != "" && t.Builtin != "" && len(impls) == 1 {
			spec.Description = t.Description
		}
		spec.MaxResultBytes = t.MaxResultBytes
		spec.Summary = (*core.Summary)(t.Summary)
		spec.EndsTurn = t.EndsTurn
		out[i] = spec
	}
	return out, nil
}
