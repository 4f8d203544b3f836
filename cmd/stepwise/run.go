package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
)

func init() {
	c := &command{name: "run", args: "AGENT.toml [INPUT | --messages FILE]", summary: "run an agent on an input (stdin when absent) or a message history",
		help: `Runs the agent to completion, failure, a pause for external tools, or a stall.
Progress goes to stderr, one line per step; while a model call is in flight, its elapsed
time, its retries with their reason and the reply as it streams (--quiet: none of it). The
answer goes to stdout.
A paused run prints its pending calls (id, name, arguments) and exits 3; a run whose
model or tools stay unavailable past their retry policy stalls and exits 7.
Without INPUT the input is read from stdin; an empty input is refused, and so is
one over 2 MiB (a quarter of the agent's limits.max_state_bytes; exit 2, nothing
stored). The agent file may be at most 1 MiB.

With --messages FILE (- for stdin) the run starts from a message history in the
OpenAI chat format instead of an input: a JSON array of {"role", "content"}
messages (system first if at all, then user, assistant with "tool_calls", and
tool with "tool_call_id"), every call answered, ending with a user message or tool
results. A history that breaks these rules is refused with exit 2, nothing stored.
The run is a conversation: send the user's next message with stepwise say.

` + jsonStatusHelp}
	c.run = func(e *env, args []string) int {
		fs := e.flags(c)
		db := e.dbFlag(fs)
		asJSON := fs.Bool("json", false, "print one JSON object: run_id, status, answer, tools_used, sources, pending_tool_calls, steps, error, reason, retry_at, in_doubt_calls")
		script := fs.String("script", "", "answer the primary model from this JSONL script instead of the agent's model (a path relative to the current directory)")
		quiet := fs.Bool("quiet", false, "no progress on stderr")
		messages := fs.String("messages", "", "start from this message history (OpenAI chat format, a JSON array; - for stdin) instead of an input")
		pos, code := e.parse(c, fs, args, 1, 2)
		if code >= 0 {
			return code
		}
		spec, code := e.loadAgent(c.name, pos[0])
		if code >= 0 {
			return code
		}
		var input string
		var req core.Request
		maxInput := int64(shell.InputLimit(spec.Config))
		if *messages != "" {
			if len(pos) == 2 {
				fmt.Fprintf(e.stderr, "stepwise run: give an INPUT or --messages, not both\n")
				return exitUsage
			}
			b, err := e.readBounded(*messages, "the message history", maxInput)
			if err != nil {
				fmt.Fprintf(e.stderr, "stepwise run: --messages: %v\n", err)
				return exitUsage
			}
			if req.Messages, err = shell.ParseHistory(b); err != nil {
				fmt.Fprintf(e.stderr, "stepwise run: --messages: %v\n", err)
				return exitUsage
			}
		} else if len(pos) == 2 {
			input = pos[1]
			if int64(len(input)) > maxInput {
				fmt.Fprintf(e.stderr, "stepwise run: %v\n", &tooLargeError{what: "the input", size: int64(len(input)), limit: maxInput})
				return exitUsage
			}
		} else {
			if isTerminal(e.stdin) {
				fmt.Fprintln(e.stderr, "stepwise run: reading the input from stdin; end it with Ctrl-D (or pass it as an argument)")
			}
			b, err := e.readBounded("-", "the input", maxInput)
			if err != nil {
				fmt.Fprintf(e.stderr, "stepwise run: read input: %v\n", err)
				return exitUsage
			}
			input = string(b)
		}
		if input = strings.TrimSpace(input); input == "" && req.Messages == nil {
			fmt.Fprintf(e.stderr, "stepwise run: the input is empty; give it as an argument or on stdin\n")
			return exitUsage
		}
		scriptPath, code := e.scriptPath(c.name, *script)
		if code >= 0 {
			return code
		}
		ag, code := e.build(c.name, spec, agent.BuildOptions{Script: scriptPath})
		if code >= 0 {
			return code
		}
		defer closeAgent(ag)
		ctx, st, done, code := e.session(c.name, *db)
		if code >= 0 {
			return code
		}
		defer done()
		r, code := e.runner(spec, ag, st, *quiet || *asJSON, runFlags{})
		if code >= 0 {
			return code
		}
		if req.Messages == nil {
			req.Input = input
		}
		out, err := r.StartFrom(ctx, ag, req)
		if err != nil {
			return e.runErr(c.name, err)
		}
		return e.report(out, *asJSON)
	}
	register(c)
}

// scriptPath resolves a --script flag against the current directory, the
// one way it is resolved, at run, resume and fork alike; a missing file is
// a usage error.
func (e *env) scriptPath(cmd, flagValue string) (string, int) {
	if flagValue == "" {
		return "", -1
	}
	abs, err := filepath.Abs(flagValue)
	if err == nil {
		_, err = os.Stat(abs)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "stepwise %s: --script: %v\n", cmd, err)
		return "", exitUsage
	}
	return abs, -1
}

// isTerminal reports whether r is a terminal (someone may be typing).
func isTerminal(r any) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
