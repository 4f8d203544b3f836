package main

import (
	"fmt"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
)

func init() {
	c := &command{name: "resume", args: "RUN_ID [--results FILE|-] [--agent AGENT.toml] [--wait DURATION] [--take-over]", summary: "continue an interrupted, stalled, crashed or paused run",
		help: `Continues a run from its last checkpoint. Calls that completed before a crash are
not run again; calls that were in flight run again only if their tool is idempotent.
A non-idempotent call that was in flight is in doubt: it is listed, and the agent's
in_doubt policy decides (default: the model is told its outcome is unknown).

With --results, answers the run: a JSON array with one entry per call,
  {"tool_call_id": "...", "result": ...}  or  {"tool_call_id": "...", "error": "..."}
answering every call a paused run waits for (unknown, duplicate or missing ids are
refused with exit 2 and nothing changes); or, for in-doubt calls, what they did
(result or error) or {"tool_call_id": "...", "not_run": true} (so they run now).
A results file over 8 MiB is refused (exit 2) before it is read.

With --agent, the run continues with a changed agent file (a new base_url, key
variable, timeout), recorded with the run. A run another process drives is refused
with exit 6 (--wait DURATION waits for it instead). A driver on another host is
judged dead when its lease is not renewed for its TTL (15 s by default), watched
on this process's own clock (SQLite) or the database server's (PostgreSQL), so
skewed clocks neither take a live run over nor pin a dead one.

With --take-over, an operator takes the run whatever process holds it, alive or
not, with a warning on stderr naming that holder: it can no longer write to the
run (its next write fails and it stops before its next call). The take-over is
recorded with the run (stepwise show lists it).

` + jsonStatusHelp}
	c.run = func(e *env, args []string) int {
		fs := e.flags(c)
		db := e.dbFlag(fs)
		results := fs.String("results", "", "tool results file (JSON array, at most 8 MiB), - for stdin")
		asJSON := fs.Bool("json", false, "print one JSON object (see stepwise help run)")
		script := fs.String("script", "", "answer the primary model from this JSONL script (relative to the current directory)")
		agentFile := fs.String("agent", "", "continue with this agent file instead of the run's recorded agent")
		quiet := fs.Bool("quiet", false, "no progress on stderr")
		rf := e.driveFlags(fs)
		takeOver := fs.Bool("take-over", false, "take the run whatever process holds it (that holder can no longer write to it); the take-over is recorded with the run")
		pos, code := e.parse(c, fs, args, 1, 1)
		if code >= 0 {
			return code
		}
		if *takeOver {
			rf.takeOver = "stepwise resume --take-over"
		}
		var ans *shell.Answers
		if *results != "" {
			data, err := e.readBounded(*results, "a results file", maxResultsBytes)
			if err != nil {
				fmt.Fprintf(e.stderr, "stepwise resume: --results: %v\n", err)
				return exitUsage
			}
			a, err := shell.ParseResults(data)
			if err != nil {
				fmt.Fprintf(e.stderr, "stepwise resume: %v\n", err)
				return exitUsage
			}
			ans = &a
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
		var spec *agent.Spec
		var ag *shell.Agent
		if *agentFile != "" {
			if spec, code = e.loadAgent(c.name, *agentFile); code >= 0 {
				return code
			}
			if _, err := st.Run(ctx, pos[0]); err != nil {
				return e.storeErr(c.name, err)
			}
			ag, code = e.build(c.name, spec, agent.BuildOptions{Script: scriptPath})
		} else {
			spec, ag, code = e.storedAgent(ctx, c.name, st, pos[0], scriptPath)
		}
		if code >= 0 {
			return code
		}
		defer closeAgent(ag)
		r, code := e.runner(spec, ag, st, *quiet || *asJSON, rf)
		if code >= 0 {
			return code
		}
		var out shell.Outcome
		var err error
		if ans != nil {
			out, err = r.Submit(ctx, ag, pos[0], *ans)
		} else {
			out, err = r.Resume(ctx, ag, pos[0])
		}
		if err != nil {
			return e.runErr(c.name, err)
		}
		return e.report(out, *asJSON)
	}
	register(c)
}
