package agenttest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/runfile"
)

// Recording is one recorded run to replay: a run in a store, or an export
// file.
type Recording struct {
	// Name names it in reports: the file's path, else the run's id.
	Name string
	// File is the run's export file; when empty, RunID is read from
	// Options.Store.
	File  string
	RunID string
	// Agent, when set, replays the run against this agent instead of the
	// one it recorded (and the changes made to it while it ran).
	Agent *agent.Spec
}

// Verdict is what a replay found.
type Verdict string

// Verdicts.
const (
	// Identical: every decision matched the recording, byte for byte.
	Identical Verdict = "identical"
	// Diverged: the agent decides differently at Result.Divergence.Seq.
	Diverged Verdict = "diverged"
	// Unreplayable: the run could not be replayed (Result.Err says why:
	// an unreadable file, a corrupt record, an agent that does not load).
	Unreplayable Verdict = "error"
	// Skipped: Options.Select left the run out.
	Skipped Verdict = "skipped"
)

// Result is the replay of one recording.
type Result struct {
	Recording
	// Run describes the run as recorded (zero when it could not be read).
	Run     store.RunInfo
	Verdict Verdict
	// Steps is the number of steps compared.
	Steps int
	// Divergence is the first divergent step, for Diverged.
	Divergence *shell.Divergence
	// Err says why the run could not be replayed, for Unreplayable.
	Err error
	// ToolsUsed are the tools the run used as its last recorded state
	// lists them, for a run read from a file (nil otherwise).
	ToolsUsed []string
	// Elapsed is how long reading and replaying the run took.
	Elapsed time.Duration
	// Continued is set by an Options.Then that continued the run (the
	// CLI's --continue).
	Continued *Continuation
}

// Continuation is a run started from a divergence (shell.Runner.Continue).
type Continuation struct {
	RunID  string
	Status store.Status
	Answer string
	// Err says why the run could not be continued.
	Err error
}

// Options tune Replay. The zero value reads files only, with one worker
// per CPU.
type Options struct {
	// Store holds the recordings that name no file.
	Store store.Store
	// Parallel bounds how many runs are replayed at once (default
	// GOMAXPROCS).
	Parallel int
	// Select, when set, is asked about each run once it is read; a run it
	// refuses is Skipped.
	Select func(store.RunInfo) bool
	// Then, when set, is called with each result in its worker once the
	// run is replayed (the CLI continues diverged runs there). Calls run
	// in parallel.
	Then func(ctx context.Context, r *Result)
}

// Replay replays every recording, Options.Parallel at a time, and returns
// their results in the order given. A run that cannot be read or whose
// agent does not load is Unreplayable, never an error of the whole: only
// ctx ending stops the corpus (the runs not reached are Unreplayable with
// ctx's error).
func Replay(ctx context.Context, recs []Recording, opts Options) []Result {
	n := opts.Parallel
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	n = min(n, len(recs))
	out := make([]Result, len(recs))
	agents := &recordedAgents{parsed: map[string]parsedAgent{}}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(recs) {
					return
				}
				out[i] = replayOne(ctx, recs[i], &opts, agents)
				if opts.Then != nil && out[i].Verdict != Skipped {
					opts.Then(ctx, &out[i])
				}
			}
		})
	}
	wg.Wait()
	return out
}

// replayOne reads and replays one recording.
func replayOne(ctx context.Context, rec Recording, opts *Options, agents *recordedAgents) Result {
	start := time.Now()
	res := Result{Recording: rec, Verdict: Unreplayable}
	if res.Name == "" {
		res.Name = rec.RunID
	}
	defer func() { res.Elapsed = time.Since(start) }()
	if err := ctx.Err(); err != nil {
		res.Err = err
		return res
	}
	var src shell.RunReader
	var changesOf func() ([]store.AgentChange, error)
	id := rec.RunID
	switch {
	case rec.File != "":
		f, err := runfile.ReadFile(rec.File)
		if err != nil {
			res.Err = err
			return res
		}
		src, id, res.Run = f, f.Info.ID, f.Info
		res.ToolsUsed = nonNil(f.Records[len(f.Records)-1].State.ToolsUsed)
		changesOf = func() ([]store.AgentChange, error) { return f.Changes, nil }
	case opts.Store != nil:
		info, err := opts.Store.Run(ctx, id)
		if err != nil {
			res.Err = err
			return res
		}
		src, res.Run = opts.Store, info
		changesOf = func() ([]store.AgentChange, error) { return opts.Store.AgentChanges(ctx, id) }
	default:
		res.Err = errors.New("no file and no store to read the run from")
		return res
	}
	if res.RunID == "" {
		res.RunID = id
	}
	if opts.Select != nil && !opts.Select(res.Run) {
		res.Verdict = Skipped
		return res
	}
	var cfg core.Config
	var changes []shell.ConfigFrom
	if rec.Agent != nil {
		cfg = rec.Agent.Config
	} else {
		var err error
		if cfg, err = agents.config(res.Run.StartConfig); err != nil {
			res.Err = fmt.Errorf("the run's recorded agent: %w", err)
			return res
		}
		recorded, err := changesOf()
		if err != nil {
			res.Err = err
			return res
		}
		for _, ch := range recorded {
			c, err := agents.config(ch.Config)
			if err != nil {
				res.Err = fmt.Errorf("the agent change after step %d: %w", ch.Seq, err)
				return res
			}
			changes = append(changes, shell.ConfigFrom{Seq: ch.Seq, Config: c})
		}
	}
	rep, err := shell.ReplayChanges(ctx, src, id, cfg, changes)
	if err != nil {
		res.Err = err
		return res
	}
	res.Steps, res.Divergence = rep.Steps, rep.Diverged
	res.Verdict = Identical
	if rep.Diverged != nil {
		res.Verdict = Diverged
	}
	return res
}

// recordedAgents parses each recorded agent config once: the runs of a
// corpus mostly share a few.
type recordedAgents struct {
	mu     sync.Mutex
	parsed map[string]parsedAgent
}

type parsedAgent struct {
	cfg core.Config
	err error
}

func (a *recordedAgents) config(source []byte) (core.Config, error) {
	a.mu.Lock()
	p, ok := a.parsed[string(source)]
	a.mu.Unlock()
	if ok {
		return p.cfg, p.err
	}
	spec, _, err := agent.FromSource(source)
	if err == nil {
		p.cfg = spec.Config
	}
	p.err = err
	a.mu.Lock()
	a.parsed[string(source)] = p
	a.mu.Unlock()
	return p.cfg, p.err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
