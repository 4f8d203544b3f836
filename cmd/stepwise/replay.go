package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
)

func init() {
	c := &command{name: "replay", args: "RUN_ID [--deep] | --all | --runs DIR  [--agent AGENT.toml] [--filter K=V,...] [--continue] [--json] [--junit FILE]",
		summary: "re-drive recorded runs offline and check they decide the same",
		help: `Re-drives the core with a run's recorded results, calling no model and no tool,
and checks that every action matches the recording byte for byte. With --agent
(a changed prompt, a new limit), reports the first step where the decisions
diverge, the recorded and the new action side by side. Without --agent, each run
is replayed against the agent it recorded (and the changes made to it).

replay --all replays every run in the database that --filter selects;
replay --runs DIR replays the export files (DIR/*.json, as stepwise export wrote
them) with no database. Runs are replayed --parallel at a time, and each is
reported: identical; diverged at step N (recorded and replayed side by side);
or could not be replayed, and why. Then a summary. --junit FILE also writes
JUnit XML (a testcase per run: a failure for a divergence, an error for a run
that could not be replayed) for CI systems.

--filter selects runs by status=S (repeatable: any of them), agent=NAME and
since=D (a duration back from now, like 24h, or a date, 2026-11-01, or an RFC
3339 time), comma-separated. With --agent, only the runs of that agent's name
are replayed unless --filter agent=NAME names another.

--continue forks each diverged run at its divergence and runs it on, live, with
the changed agent (its real models and tools, or --script's replies): new runs,
linked to the originals (forked from RUN at step N-1), whose ids the report
names; read them side by side with stepwise show. They go to --db (with --runs,
created when missing, and the diverged originals are imported into it first).

Exit 0 when every run is identical, 1 when any diverged, 8 when none diverged
but some could not be replayed, 4 when interrupted (SIGINT, SIGTERM).`}
	c.run = func(e *env, args []string) int {
		fs := e.flags(c)
		db := e.dbFlag(fs)
		agentFile := fs.String("agent", "", "replay with this agent file instead of the recorded one")
		asJSON := fs.Bool("json", false, "print the report as JSON")
		deep := fs.Bool("deep", false, "also replay every child run of the run's sub-agent calls, each against its own recorded agent")
		var co corpusFlags
		co.all = fs.Bool("all", false, "replay every run in the database that --filter selects")
		co.runs = fs.String("runs", "", "replay the export files (*.json) in this directory, with no database")
		fs.Var(&co.filters, "filter", "select runs: status=S,agent=NAME,since=24h|2026-11-01 (repeatable)")
		co.parallel = fs.Int("parallel", 0, "replay this many runs at once (default: one per CPU)")
		co.junit = fs.String("junit", "", "also write the report as JUnit XML to this file")
		co.cont = fs.Bool("continue", false, "run each diverged run on, live, from its divergence (new linked runs)")
		co.script = fs.String("script", "", "with --continue: answer the new runs' model calls from this JSONL script")
		pos, code := e.parse(c, fs, args, 0, 1)
		if code >= 0 {
			return code
		}
		if *co.all || *co.runs != "" {
			if len(pos) > 0 {
				fmt.Fprintf(e.stderr, "stepwise replay: give a RUN_ID, or --all, or --runs DIR, not both\n")
				return exitUsage
			}
			return e.replayCorpus(c, *db, *agentFile, *asJSON, co)
		}
		if len(pos) != 1 {
			fmt.Fprintf(e.stderr, "stepwise replay: give a RUN_ID, or --all, or --runs DIR\nusage: stepwise replay %s\n", c.args)
			return exitUsage
		}
		if name, ok := corpusOnly(fs); ok {
			fmt.Fprintf(e.stderr, "stepwise replay: --%s needs --all or --runs DIR\n", name)
			return exitUsage
		}
		code = e.replayOne(c, *db, pos[0], *agentFile, *asJSON)
		if *deep && code == 0 {
			code = e.replayChildren(c, *db, pos[0], *asJSON)
		}
		return code
	}
	register(c)
}

// replayOne replays one run of the database (stepwise replay RUN_ID).
func (e *env) replayOne(c *command, db, runID, agentFile string, asJSON bool) int {
	ctx, st, done, code := e.readSession(c.name, db)
	if code >= 0 {
		return code
	}
	defer done()
	var spec *agent.Spec
	var changes []shell.ConfigFrom
	if agentFile != "" {
		if spec, code = e.loadAgent(c.name, agentFile); code >= 0 {
			return code
		}
	} else {
		// The recorded agent, and every change made to it while the
		// run went on (resume --agent), each from its step on.
		info, err := st.Run(ctx, runID)
		if err != nil {
			return e.storeErr(c.name, err)
		}
		if spec, _, err = agent.FromSource(info.StartConfig); err != nil {
			return e.runErr(c.name, err)
		}
		recorded, err := st.AgentChanges(ctx, runID)
		if err != nil {
			return e.storeErr(c.name, err)
		}
		for _, ch := range recorded {
			s, _, err := agent.FromSource(ch.Config)
			if err != nil {
				return e.runErr(c.name, fmt.Errorf("the agent change after step %d: %w", ch.Seq, err))
			}
			changes = append(changes, shell.ConfigFrom{Seq: ch.Seq, Config: s.Config})
		}
	}
	rep, err := shell.ReplayChanges(ctx, st, runID, spec.Config, changes)
	if err != nil {
		return e.storeErr(c.name, err)
	}
	if asJSON {
		out := map[string]any{"run_id": rep.RunID, "steps": rep.Steps, "identical": rep.Diverged == nil}
		if d := rep.Diverged; d != nil {
			out["divergence"] = map[string]any{"step": d.Seq, "recorded": d.Recorded, "replayed": d.Replayed, "detail": d.Detail}
		}
		b, _ := json.Marshal(out)
		fmt.Fprintln(e.stdout, string(b))
	} else if d := rep.Diverged; d != nil {
		fmt.Fprintf(e.stdout, "run %s diverges at step %d:\n  recorded: %s\n  replayed: %s\n", rep.RunID, d.Seq, d.Recorded, d.Replayed)
		if d.Detail != "" {
			fmt.Fprintf(e.stdout, "  %s\n", d.Detail)
		}
	} else {
		fmt.Fprintf(e.stdout, "run %s: %d steps replayed, identical\n", rep.RunID, rep.Steps)
	}
	if rep.Diverged != nil {
		return exitFailed
	}
	return 0
}

// replayChildren replays the child runs of runID's sub-agent calls, and
// theirs, each against its recorded agent (replay --deep).
func (e *env) replayChildren(c *command, db, runID string, asJSON bool) int {
	ctx, st, done, code := e.readSession(c.name, db)
	if code >= 0 {
		return code
	}
	children, err := shell.Children(ctx, st, runID)
	done()
	if err != nil {
		return e.storeErr(c.name, err)
	}
	for _, ch := range children {
		if code := e.replayOne(c, db, ch.Info.ID, "", asJSON); code != 0 {
			return code
		}
		if code := e.replayChildren(c, db, ch.Info.ID, asJSON); code != 0 {
			return code
		}
	}
	return 0
}

// corpusFlags are replay's flags for many runs.
type corpusFlags struct {
	all      *bool
	runs     *string
	filters  listFlag
	parallel *int
	junit    *string
	cont     *bool
	script   *string
}

// corpusOnly names a flag given that only --all and --runs take.
func corpusOnly(fs *flag.FlagSet) (string, bool) {
	var set string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "filter", "parallel", "junit", "continue", "script":
			if set == "" {
				set = f.Name
			}
		}
	})
	return set, set != ""
}

// listFlag is a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }
