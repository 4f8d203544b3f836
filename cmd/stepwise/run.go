package main

import (
	"fmt"
	"strings"

	"github.com/stepwise-agent/stepwise/shell/agent"
)

func init() {
	c := &command{name: "run", args: "AGENT.toml [INPUT]", summary: "run an agent on an input (stdin when absent)",
		help: `Runs the agent to completion, failure, or a pause for external tools.
Progress goes to stderr, one line per step; the answer goes to stdout.
A paused run prints its pending calls (id, name, arguments) and exits 3.`}
	c.run = func(e *env, args []string) int {
		fs := e.flags(c)
		db := e.dbFlag(fs)
		asJSON := fs.Bool("json", false, "print one JSON object: run_id, status, answer, tools_used, pending_tool_calls, steps, error")
		script := fs.String("script", "", "answer the primary model from this JSONL script instead of the agent's model")
		quiet := fs.Bool("quiet", false, "no progress on stderr")
		pos, code := e.parse(c, fs, args, 1, 2)
		if code >= 0 {
			return code
		}
		spec, code := e.loadAgent(c.name, pos[0])
		if code >= 0 {
			return code
		}
		var input string
		if len(pos) == 2 {
			input = pos[1]
		} else {
			b, err := e.readInput("-")
			if err != nil {
				fmt.Fprintf(e.stderr, "stepwise run: read input: %v\n", err)
				return exitUsage
			}
			input = strings.TrimSpace(string(b))
		}
		ag, code := e.build(c.name, spec, agent.BuildOptions{Script: *script})
		if code >= 0 {
			return code
		}
		defer closeAgent(ag)
		ctx, st, done, code := e.session(c.name, *db)
		if code >= 0 {
			return code
		}
		defer done()
		out, err := e.runner(spec, st, *quiet || *asJSON).Start(ctx, ag, input)
		if err != nil {
			return e.runErr(c.name, err)
		}
		return e.report(out, *asJSON)
	}
	register(c)
}
