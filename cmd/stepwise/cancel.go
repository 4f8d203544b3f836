package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/stepwise-agent/stepwise/shell"
)

func init() {
	c := &command{name: "cancel", args: "RUN_ID [--reason TEXT] [--wait 30s] [--take-over] [--json]", summary: "end a paused, running, stalled or interrupted run as cancelled",
		help: `Ends a run that has not ended: whatever it waits for (a model, a tool, external
results) gets "cancelled", and the run ends with status cancelled (failure code
cancelled, with --reason), never interrupted. A run no process drives (paused,
stalled, interrupted) is cancelled at once. A run another process drives (stepwise
run, resume, or a serve worker) is asked to end: its driver sees the request within a
third of its lease (5 s by default), cuts the model or tool call in flight short, and
ends the run before its next request; that process exits 1 (cancelled). Cancel waits
up to --wait for that, and ends the run itself if its driver lets it go unended
(interrupted by a signal, stalled) or dies. With
--take-over, cancel takes the run from whatever process holds it, alive or not (a
warning on stderr names it; it can no longer write to the run), and cancels it at
once; the take-over is recorded with the run (stepwise show lists it).

Exit codes: 0 the run is cancelled; 1 it had already ended (nothing to cancel);
6 the request is recorded but the run's driver has not ended it within --wait (it
will); 2 no such run or bad flags.`}
	c.run = func(e *env, args []string) int {
		fs := e.flags(c)
		db := e.dbFlag(fs)
		reason := fs.String("reason", "cancelled by stepwise cancel", "why, recorded as the failure reason")
		wait := fs.Duration("wait", 30*time.Second, "how long to wait for another process's driver to end the run")
		asJSON := fs.Bool("json", false, "print the run's outcome as one JSON object (see stepwise help run)")
		takeOver := fs.Bool("take-over", false, "take the run whatever process holds it and cancel it at once (that holder can no longer write to it); recorded with the run")
		pos, code := e.parse(c, fs, args, 1, 1)
		if code >= 0 {
			return code
		}
		if *wait < 0 {
			fmt.Fprintf(e.stderr, "stepwise cancel: --wait must not be negative\n")
			return exitUsage
		}
		ctx, st, done, code := e.session(c.name, *db)
		if code >= 0 {
			return code
		}
		defer done()
		spec, ag, code := e.storedAgent(ctx, c.name, st, pos[0], "")
		if code >= 0 {
			return code
		}
		defer closeAgent(ag)
		rf := runFlags{wait: wait}
		if *takeOver {
			rf.takeOver = "stepwise cancel --take-over"
		}
		r, code := e.runner(spec, ag, st, true, rf)
		if code >= 0 {
			return code
		}
		out, err := r.Cancel(ctx, ag, pos[0], *reason)
		switch {
		case errors.Is(err, shell.ErrNotCancellable):
			fmt.Fprintf(e.stderr, "stepwise cancel: %v\n", err)
			return exitFailed
		case errors.Is(err, shell.ErrCancelRequested):
			fmt.Fprintf(e.stderr, "stepwise cancel: %v\n", err)
			return exitBusy
		case err != nil:
			return e.runErr(c.name, err)
		}
		if *asJSON {
			e.report(out, true)
		} else {
			fmt.Fprintf(e.stderr, "run %s %s after step %d\n", out.RunID, out.Status, out.Steps)
		}
		if out.Status != "cancelled" {
			return exitFailed // it ended otherwise before the request was acted on
		}
		return 0
	}
	register(c)
}
