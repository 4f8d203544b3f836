package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
	"github.com/stepwise-agent/stepwise/shell/agenttest"
	"github.com/stepwise-agent/stepwise/store"
)

// replayCorpus replays many runs: those of the database that the filter
// selects (--all), or the export files in a directory (--runs).
func (e *env) replayCorpus(c *command, db, agentFile string, asJSON bool, co corpusFlags) int {
	if *co.all && *co.runs != "" {
		fmt.Fprintf(e.stderr, "stepwise replay: --all or --runs DIR, not both\n")
		return exitUsage
	}
	if *co.parallel < 0 {
		fmt.Fprintf(e.stderr, "stepwise replay: --parallel must not be negative\n")
		return exitUsage
	}
	if *co.script != "" && !*co.cont {
		fmt.Fprintf(e.stderr, "stepwise replay: --script needs --continue\n")
		return exitUsage
	}
	filter, err := parseFilter(co.filters, time.Now())
	if err != nil {
		fmt.Fprintf(e.stderr, "stepwise replay: --filter: %v\n", err)
		return exitUsage
	}
	var spec *agent.Spec
	if agentFile != "" {
		var code int
		if spec, code = e.loadAgent(c.name, agentFile); code >= 0 {
			return code
		}
		if filter.Agent == "" {
			filter.Agent = spec.Config.Name
		}
	}
	script, code := e.scriptPath(c.name, *co.script)
	if code >= 0 {
		return code
	}
	var recs []agenttest.Recording
	var st store.Store
	var ctx context.Context
	opts := agenttest.Options{Parallel: *co.parallel}
	if *co.all || *co.cont {
		// --all reads the database; --continue writes the new runs to it.
		var done func()
		if ctx, st, done, code = e.openSession(c.name, db, *co.all); code >= 0 {
			return code
		}
		defer done()
	} else {
		var stop context.CancelFunc
		ctx, stop = signalContext()
		defer stop()
	}
	if *co.all {
		if recs, err = agenttest.FromStore(ctx, st, filter); err != nil {
			return e.storeErr(c.name, err)
		}
		opts.Store = st
	} else {
		if recs, err = agenttest.FromDir(*co.runs); err != nil {
			fmt.Fprintf(e.stderr, "stepwise replay: --runs: %v\n", err)
			return exitUsage
		}
		now := time.Now()
		opts.Select = func(r store.RunInfo) bool { return filter.Match(r, now) }
	}
	for i := range recs {
		recs[i].Agent = spec
	}
	var cont *continuer
	if *co.cont {
		ttl, code := e.leaseTTL()
		if code >= 0 {
			return code
		}
		cont = &continuer{st: st, spec: spec, script: script, leaseTTL: ttl, fromFiles: !*co.all}
		opts.Then = cont.then
	}
	began := time.Now()
	results := agenttest.Replay(ctx, recs, opts)
	total := time.Since(began)
	rep := &corpusReport{suite: "stepwise replay"}
	for _, r := range results {
		if r.Verdict == agenttest.Skipped {
			rep.Summary.Skipped++
			continue
		}
		rep.add(replayRun(r))
	}
	if cont != nil {
		e.redact(cont.secrets)
	}
	rep.write(e.stdout, asJSON)
	if rep.Summary.Runs == 0 {
		fmt.Fprintf(e.stderr, "stepwise replay: no runs selected\n")
	}
	if *co.junit != "" {
		if err := rep.writeJUnit(*co.junit, total); err != nil {
			fmt.Fprintf(e.stderr, "stepwise replay: --junit: %v\n", err)
			return exitInternal
		}
	}
	if err := context.Cause(ctx); err != nil {
		fmt.Fprintf(e.stderr, "stepwise replay: %v; the runs not reached are reported as not replayed\n", err)
		return exitInterrupted
	}
	return rep.exitCode()
}

// parseFilter reads --filter values: comma-separated status=S (repeatable),
// agent=NAME and since=D (a duration back from now, a date or an RFC 3339
// time).
func parseFilter(values []string, now time.Time) (agenttest.Filter, error) {
	var f agenttest.Filter
	for _, v := range values {
		for _, kv := range strings.Split(v, ",") {
			if kv = strings.TrimSpace(kv); kv == "" {
				continue
			}
			k, val, ok := strings.Cut(kv, "=")
			if !ok || val == "" {
				return f, fmt.Errorf("%q: want KEY=VALUE (status, agent, since)", kv)
			}
			switch k {
			case "status":
				s := store.Status(val)
				if !s.Valid() {
					return f, fmt.Errorf("unknown status %q (want one of %s)", val, statusList())
				}
				f.Statuses = append(f.Statuses, s)
			case "agent":
				f.Agent = val
			case "since":
				t, err := parseSince(val, now)
				if err != nil {
					return f, fmt.Errorf("since=%v", err)
				}
				f.Since = t
			default:
				return f, fmt.Errorf("unknown key %q (want status, agent or since)", k)
			}
		}
	}
	return f, nil
}

// leaseTTL is $STEPWISE_LEASE_TTL (0: the default).
func (e *env) leaseTTL() (time.Duration, int) {
	v := e.getenv("STEPWISE_LEASE_TTL")
	if v == "" {
		return 0, -1
	}
	ttl, err := time.ParseDuration(v)
	if err != nil || ttl < 100*time.Millisecond {
		fmt.Fprintf(e.stderr, "stepwise: STEPWISE_LEASE_TTL=%q: want a duration of at least 100ms, like 15s\n", v)
		return 0, exitUsage
	}
	return ttl, -1
}

// continuer runs diverged runs on from their divergence (--continue).
type continuer struct {
	st store.Store
	// spec is --agent's agent; nil continues each run with its own.
	spec      *agent.Spec
	script    string
	leaseTTL  time.Duration
	fromFiles bool

	mu      sync.Mutex
	secrets []shell.Secret
}

// then continues r when it diverged (agenttest.Options.Then).
func (k *continuer) then(ctx context.Context, r *agenttest.Result) {
	if r.Verdict != agenttest.Diverged {
		return
	}
	out, err := k.continueRun(ctx, r)
	r.Continued = &agenttest.Continuation{RunID: out.RunID, Status: out.Status, Answer: out.Answer, Err: err}
}

func (k *continuer) continueRun(ctx context.Context, r *agenttest.Result) (shell.Outcome, error) {
	d := *r.Divergence
	if k.fromFiles {
		// The new run is a fork: its original must be in the store.
		if _, err := k.st.Run(ctx, r.RunID); errors.Is(err, store.ErrNotFound) {
			if err := k.importFile(ctx, r.File); err != nil && !errors.Is(err, store.ErrExists) {
				return shell.Outcome{}, fmt.Errorf("import %s: %w", r.File, err)
			}
		} else if err != nil {
			return shell.Outcome{}, err
		}
	}
	var spec *agent.Spec
	var opts agent.BuildOptions
	var err error
	if k.spec != nil {
		// A spec of its own: building one connects its MCP servers and
		// records their tools in it.
		if spec, err = agent.Parse(k.spec.Text, k.spec.Path, k.spec.Dir); err != nil {
			return shell.Outcome{}, err
		}
		spec.Path = k.spec.Path
	} else if spec, opts, err = agent.FromSource(r.Run.Config); err != nil {
		return shell.Outcome{}, err
	}
	if k.script != "" {
		opts = agent.BuildOptions{Script: k.script, ScriptOffset: modelCallsBefore(spec.Config, d)}
	}
	bctx, cancel := context.WithTimeout(ctx, buildTimeout)
	ag, err := spec.Build(bctx, opts)
	cancel()
	if err != nil {
		return shell.Outcome{}, err
	}
	defer closeAgent(ag)
	k.mu.Lock()
	k.secrets = append(k.secrets, ag.Secrets...)
	k.mu.Unlock()
	runner := shell.NewRunner(k.st, &shell.Options{ToolTimeout: spec.ToolTimeout, RunTimeout: spec.RunTimeout,
		MaxToolOutput: spec.MaxToolOutput, LeaseTTL: k.leaseTTL})
	return runner.Continue(ctx, ag, r.RunID, d)
}

func (k *continuer) importFile(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = k.st.Import(ctx, f)
	return err
}

// modelCallsBefore is the number of model calls a continuation of d has
// made before its first live one: the offset of a script that answers it.
func modelCallsBefore(cfg core.Config, d shell.Divergence) int {
	n := d.From.Counters.ModelCalls
	if p := d.From.Pending; p != nil && p.Kind == core.PendingModel {
		// The pending call is answered by the recorded reply when it still
		// fits, else asked again, live.
		if d.Result == nil {
			return n - 1
		}
		if _, err := core.Resume(cfg, d.From, d.Result); err != nil {
			return n - 1
		}
	}
	return n
}
