package main

import (
	"fmt"
	"strings"

	"github.com/stepwise-agent/stepwise/core"
)

func init() {
	c := &command{name: "say", args: "RUN_ID [MESSAGE] [--wait DURATION]", summary: "send the user's next message to a run (stdin when absent)",
		help: `Sends the user's next message to a run, which goes on with the same conversation:
its messages, memory, tools used and budgets carry over (ADR 0032). A completed run
(one that answered) begins a new turn with the message and runs it, as run does,
until it answers again, fails, pauses for external tools or stalls; the answer goes
to stdout. A run paused for external tools keeps the message for its next model
call (or, when the agent's [conversation] on_message is "interrupt", ends the turn
in flight and answers the message). A run another process drives keeps the message
in its inbox for that driver, which delivers it before its next model call: say
exits 6 saying so (--wait DURATION waits for the run instead).

Without MESSAGE the message is read from stdin. An empty message, one over the
agent's [conversation] max_message_bytes (256 KiB by default) or one the
conversation has no room for, and a message to a run that failed, was cancelled
(or closed) or does not exist are refused with exit 2, nothing stored. Close a
conversation with stepwise cancel RUN_ID. Exit codes are run's.

` + jsonStatusHelp}
	c.run = func(e *env, args []string) int {
		fs := e.flags(c)
		db := e.dbFlag(fs)
		asJSON := fs.Bool("json", false, "print one JSON object (see stepwise help run)")
		script := fs.String("script", "", "answer the primary model from this JSONL script (relative to the current directory); its lines number the conversation's model calls from its start")
		quiet := fs.Bool("quiet", false, "no progress on stderr")
		rf := e.driveFlags(fs)
		pos, code := e.parse(c, fs, args, 1, 2)
		if code >= 0 {
			return code
		}
		var message string
		if len(pos) == 2 {
			message = pos[1]
		} else {
			if isTerminal(e.stdin) {
				fmt.Fprintln(e.stderr, "stepwise say: reading the message from stdin; end it with Ctrl-D (or pass it as an argument)")
			}
			// A message is bounded by its agent's limit; reading stops
			// well past any such limit, so a huge stdin is not held.
			b, err := e.readBounded("-", "the message", maxSayBytes)
			if err != nil {
				fmt.Fprintf(e.stderr, "stepwise say: read the message: %v\n", err)
				return exitUsage
			}
			message = string(b)
		}
		if strings.TrimSpace(message) == "" {
			fmt.Fprintf(e.stderr, "stepwise say: %v; give it as an argument or on stdin\n", core.ErrEmptyMessage)
			return exitUsage
		}
		scriptPath, code := e.scriptPath(c.name, *script)
		if code >= 0 {
			return code
		}
		ctx, st, done, code := e.session(c.name, *db)
		if code >= 0 {
			return code
		}
		defer done()
		spec, ag, code := e.storedAgent(ctx, c.name, st, pos[0], scriptPath)
		if code >= 0 {
			return code
		}
		defer closeAgent(ag)
		r, code := e.runner(spec, ag, st, *quiet || *asJSON, rf)
		if code >= 0 {
			return code
		}
		out, err := r.Say(ctx, ag, pos[0], message)
		if err != nil {
			return e.runErr(c.name, err)
		}
		return e.report(out, *asJSON)
	}
	register(c)
}

// maxSayBytes bounds what say reads from stdin: the largest message an
// agent may allow is smaller than the largest state (limits.max_state_bytes).
const maxSayBytes = 64 << 20
