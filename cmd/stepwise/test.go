package main

import (
	"context"
	"fmt"
	"time"

	"github.com/stepwise-agent/stepwise/shell/agenttest"
)

func init() {
	c := &command{name: "test", args: "DIR [--json] [--junit FILE] [--parallel N]", summary: "check golden runs: replay recorded runs and their expectations",
		help: `Replays the golden runs in DIR, with no database: every export file NAME.json
(as stepwise export wrote it) against the agent its NAME.expect.toml names (else
the agent it recorded), and checks what the expectation file asserts:

  agent = "../agents/analyst.toml"  # replay against this file (relative to this one)
  diverges_at = 6                   # must diverge at this step (else: be identical)
  status = "completed"              # the run's final status
  no_failure = true                 # neither failed nor cancelled
  answer = "42"                     # the final answer, exactly
  answer_contains = ["107 EUR"]     # texts the answer contains
  tools_used = ["read_file", "add"] # the tools used, exactly and in order
  max_steps = 8                     # at most this many steps

Every key is optional; a run without an expectation file must replay
identically. Each run is reported passed, failed (each unmet assertion named) or
error (it could not be replayed), then a summary. --junit FILE also writes JUnit
XML. The same checks run from go test with the package shell/agenttest.

Exit 0 when every run passed, 1 when any failed, 8 when none failed but some
could not be replayed, 2 for a bad expectation or agent file, 4 when interrupted.`}
	c.run = func(e *env, args []string) int {
		fs := e.flags(c)
		asJSON := fs.Bool("json", false, "print the report as JSON")
		junit := fs.String("junit", "", "also write the report as JUnit XML to this file")
		parallel := fs.Int("parallel", 0, "replay this many runs at once (default: one per CPU)")
		pos, code := e.parse(c, fs, args, 1, 1)
		if code >= 0 {
			return code
		}
		if *parallel < 0 {
			fmt.Fprintf(e.stderr, "stepwise test: --parallel must not be negative\n")
			return exitUsage
		}
		cases, err := agenttest.LoadDir(pos[0])
		if err != nil {
			fmt.Fprintf(e.stderr, "stepwise test: %v\n", err)
			return exitUsage
		}
		if len(cases) == 0 {
			fmt.Fprintf(e.stderr, "stepwise test: no recorded runs (*.json) in %s\n", pos[0])
			return exitUsage
		}
		ctx, stop := signalContext()
		defer stop()
		began := time.Now()
		outcomes := agenttest.Check(ctx, cases, agenttest.Options{Parallel: *parallel})
		total := time.Since(began)
		rep := &corpusReport{suite: "stepwise test " + pos[0]}
		for _, o := range outcomes {
			r := replayRun(o.Result)
			r.Steps = o.Run.LastSeq // the run's steps, not how many were compared
			switch {
			case o.Verdict == agenttest.Unreplayable:
				r.Verdict = "error"
			case o.Passed():
				r.Verdict = "passed"
			default:
				r.Verdict = "failed"
				r.Failures = o.Failures
			}
			// An expected divergence is part of a passing run, not a failure.
			r.Divergence = nil
			rep.add(r)
		}
		rep.write(e.stdout, *asJSON)
		if *junit != "" {
			if err := rep.writeJUnit(*junit, total); err != nil {
				fmt.Fprintf(e.stderr, "stepwise test: --junit: %v\n", err)
				return exitInternal
			}
		}
		if err := context.Cause(ctx); err != nil {
			fmt.Fprintf(e.stderr, "stepwise test: %v; the runs not reached are reported as not replayed\n", err)
			return exitInterrupted
		}
		return rep.exitCode()
	}
	register(c)
}
