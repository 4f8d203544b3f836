package main

import (
	"github.com/stepwise-agent/stepwise/shell"
)

func init() {
	c := &command{name: "resume", args: "RUN_ID [--results FILE|-]", summary: "continue an interrupted, crashed or paused run",
		help: `Continues a run from its last checkpoint. Calls that completed before a crash are
not run again; calls that were in flight run again only if their tool is idempotent.
With --results, answers a run awaiting tool results: a JSON array of
  {"tool_call_id": "...", "result": ...}  or  {"tool_call_id": "...", "error": "..."}
answering every pending call once. Unknown, duplicate or missing ids are refused
(exit 2) and nothing changes.`}
	c.run = func(e *env, args []string) int {
		fs := e.flags(c)
		db := e.dbFlag(fs)
		results := fs.String("results", "", "tool results file (JSON array), - for stdin")
		asJSON := fs.Bool("json", false, "print one JSON object (see stepwise help run)")
		script := fs.String("script", "", "answer the primary model from this JSONL script")
		quiet := fs.Bool("quiet", false, "no progress on stderr")
		pos, code := e.parse(c, fs, args, 1, 1)
		if code >= 0 {
			return code
		}
		ctx, st, done, code := e.session(c.name, *db)
		if code >= 0 {
			return code
		}
		defer done()
		spec, ag, code := e.storedAgent(ctx, c.name, st, pos[0], *script)
		if code >= 0 {
			return code
		}
		defer closeAgent(ag)
		r := e.runner(spec, st, *quiet || *asJSON)
		var out shell.Outcome
		var err error
		if *results != "" {
			data, rerr := e.readInput(*results)
			if rerr != nil {
				return e.runErr(c.name, rerr)
			}
			res, perr := shell.ParseResults(data)
			if perr != nil {
				e.stderr.Write([]byte("stepwise resume: " + perr.Error() + "\n"))
				return exitUsage
			}
			out, err = r.Submit(ctx, ag, pos[0], res)
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
