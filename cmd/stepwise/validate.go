package main

import (
	"fmt"

	"github.com/stepwise-agent/stepwise/core"
)

func init() {
	v := &command{name: "validate", args: "AGENT.toml", summary: "check an agent file",
		help: "Checks an agent file: TOML syntax, unknown keys, tool schemas, models and limits. Exit 0 when valid, 2 otherwise.\n" +
			"Warnings go to stderr and leave the exit code alone: a tool schema's default that does not fit its own\n" +
			"schema (\"false\" for a boolean, null for a string) is ignored, never injected into a call."}
	v.run = func(e *env, args []string) int {
		fs := e.flags(v)
		pos, code := e.parse(v, fs, args, 1, 1)
		if code >= 0 {
			return code
		}
		spec, code := e.loadAgent(v.name, pos[0])
		if code >= 0 {
			return code
		}
		cfg := spec.Config
		printWarnings(e, pos[0], cfg)
		fmt.Fprintf(e.stdout, "%s: ok (agent %q, format %s, %d tools, primary model %s)\n", pos[0], cfg.Name, formatName(cfg.Format), len(cfg.ToolList()), cfg.Models.Primary)
		return 0
	}
	register(v)

	t := &command{name: "tools", args: "AGENT.toml", summary: "show the tools and the tool docs the model will see",
		help: "Lists the agent's tools with their JSON Schemas, then the tool documentation its format puts in the system prompt."}
	t.run = func(e *env, args []string) int {
		fs := e.flags(t)
		pos, code := e.parse(t, fs, args, 1, 1)
		if code >= 0 {
			return code
		}
		spec, code := e.loadAgent(t.name, pos[0])
		if code >= 0 {
			return code
		}
		cfg := spec.Config
		if len(spec.File.MCP) > 0 {
			ctx, stop := signalContext()
			defer stop()
			mcpTools, warnings, err := spec.MCPTools(ctx)
			if err != nil {
				fmt.Fprintf(e.stderr, "stepwise tools: %v\n", err)
				return exitUsage
			}
			for _, w := range warnings {
				fmt.Fprintf(e.stderr, "stepwise tools: mcp: %s\n", w)
			}
			cfg.Tools = append(append([]core.Tool(nil), cfg.Tools...), mcpTools...)
		}
		printWarnings(e, pos[0], cfg)
		for _, tool := range cfg.ToolList() {
			mode := tool.Mode
			if mode == "" {
				mode = core.ModeInternal
			}
			fmt.Fprintf(e.stdout, "%s (%s", tool.Name, mode)
			if tool.Idempotent {
				fmt.Fprint(e.stdout, ", idempotent")
			}
			fmt.Fprintf(e.stdout, ")\n  %s\n  parameters: %s\n\n", tool.Description, string(tool.Parameters))
		}
		if docs := core.ToolDocs(cfg); docs != "" {
			fmt.Fprintf(e.stdout, "--- tool docs in the system prompt (format %s) ---\n%s\n", formatName(cfg.Format), docs)
		} else {
			fmt.Fprintf(e.stdout, "--- format %s: the tools are sent natively with each model call ---\n", formatName(cfg.Format))
		}
		return 0
	}
	register(t)
}

func formatName(f core.Format) string {
	if f == "" {
		return string(core.FormatNative)
	}
	return string(f)
}

// printWarnings writes what the agent's config accepts but its author should
// fix (core.Config.Warnings) to stderr, one line each, led by the file.
func printWarnings(e *env, file string, cfg core.Config) {
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(e.stderr, "%s: warning: %s\n", file, w)
	}
}
