package shell

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// Agent is an agent ready to run: the core config plus the live parts the
// core cannot hold (model providers and tool implementations).
type Agent struct {
	Config core.Config
	// Models maps each model role to its provider; Primary is required.
	Models map[core.ModelRole]ModelProvider
	// Tools holds the implementation of every internal and MCP tool named in
	// Config.Tools.
	Tools map[string]Tool
	// ToolTimeouts overrides Options.ToolTimeout per tool name.
	ToolTimeouts map[string]time.Duration
	// ToolRetry overrides DefaultToolRetry per tool name. Only idempotent
	// tools are retried.
	ToolRetry map[string]RetryPolicy
	// Secrets are the values the agent names as secret: they never reach
	// the store, an export, a log or the model (see Secret).
	Secrets []Secret
	// InDoubt is the policy for in-doubt calls (empty: InDoubtUnknown).
	InDoubt InDoubtPolicy
	// Source is what the run records to rebuild the agent later (for
	// example the agent file's text); stored with the run as is.
	Source []byte
	// Close, when set, releases what the agent holds (MCP servers). The
	// caller calls it when done with the agent.
	Close func() error
}

// Options tune a Runner. The zero value means the defaults.
type Options struct {
	// ToolTimeout bounds one tool call (default 30s).
	ToolTimeout time.Duration
	// RunTimeout bounds a whole run; when it passes the run fails (0: none).
	RunTimeout time.Duration
	// MaxToolOutput caps a tool's output in bytes before it reaches the core
	// (default 1 MiB); the core then truncates further for the model.
	MaxToolOutput int
	// NewID makes run ids (default: time-ordered random ids).
	NewID func() string
	// Observer, when set, is told about every step as it happens.
	Observer Observer
}

// Observer receives progress events; it must not block for long.
type Observer interface {
	Event(Event)
}

// Event is one thing that happened in a run, for progress output.
type Event struct {
	RunID    string
	Seq      int
	Kind     string // "model", "tools", "tool", "external", "memory", "complete", "fail", "interrupted"
	Text     string
	Duration time.Duration
	Usage    core.Usage
}

// Runner drives runs of agents and owns their goroutines, contexts and
// timeouts. It is safe for concurrent use by several runs.
type Runner struct {
	store Store
	opts  Options
}

// NewRunner returns a runner that checkpoints to st.
func NewRunner(st Store, opts *Options) *Runner {
	r := &Runner{store: st}
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.ToolTimeout <= 0 {
		r.opts.ToolTimeout = 30 * time.Second
	}
	if r.opts.MaxToolOutput <= 0 {
		r.opts.MaxToolOutput = 1 << 20
	}
	if r.opts.NewID == nil {
		r.opts.NewID = newRunID
	}
	return r
}

// Outcome is where a run stands when the runner returns.
type Outcome struct {
	RunID     string
	Status    store.Status
	Answer    string
	Failure   *core.Failure
	ToolsUsed []string
	Sources   []string
	// Pending lists the external calls a paused run waits for.
	Pending []core.ToolCall
	// Steps is the number of checkpointed steps.
	Steps int
}

// Errors the runner returns for requests that do not fit the run.
var (
	ErrNotPaused  = errors.New("the run is not awaiting tool results")
	ErrRunEnded   = errors.New("the run has ended")
	ErrNoProvider = errors.New("no model provider for role")
)

// Start creates a run of ag on input and drives it until it completes, fails,
// pauses for external tools, or ctx ends (then it is marked interrupted).
func (r *Runner) Start(ctx context.Context, ag *Agent, input string) (Outcome, error) {
	if err := r.check(ag); err != nil {
		return Outcome{}, err
	}
	st, err := core.Start(ag.Config, core.Request{Input: input})
	if err != nil {
		return Outcome{}, err
	}
	id := r.opts.NewID()
	if err := r.store.CreateRun(ctx, store.NewRun{
		ID: id, Agent: ag.Config.Name, ConfigHash: core.ConfigHash(ag.Config),
		Config: ag.Source, Input: input, Initial: st,
	}); err != nil {
		return Outcome{}, fmt.Errorf("create run: %w", err)
	}
	return r.drive(ctx, ag, &cursor{id: id, st: st})
}

// Resume continues a run that was interrupted or crashed from its last
// checkpoint. A paused run stays paused (use Submit); an ended run is
// reported as it ended.
func (r *Runner) Resume(ctx context.Context, ag *Agent, runID string) (Outcome, error) {
	if err := r.check(ag); err != nil {
		return Outcome{}, err
	}
	cur, err := r.load(ctx, runID)
	if err != nil {
		return Outcome{}, err
	}
	return r.drive(ctx, ag, cur)
}

// Submit resumes a run awaiting tool results with the caller's results. They
// must answer every pending call exactly once; otherwise nothing changes and
// the error says why.
func (r *Runner) Submit(ctx context.Context, ag *Agent, runID string, results []core.ToolResult) (Outcome, error) {
	if err := r.check(ag); err != nil {
		return Outcome{}, err
	}
	cur, err := r.load(ctx, runID)
	if err != nil {
		return Outcome{}, err
	}
	if cur.st.Pending == nil || cur.st.Pending.Kind != core.PendingExternal {
		return Outcome{}, fmt.Errorf("%w (run %s is in phase %s)", ErrNotPaused, runID, cur.st.Phase)
	}
	next, err := core.Resume(ag.Config, cur.st, core.ToolResults{Results: results})
	if err != nil {
		return Outcome{}, fmt.Errorf("results for run %s: %w", runID, err)
	}
	cur.st, cur.result = next, core.ToolResults{Results: results}
	return r.drive(ctx, ag, cur)
}

// Fork starts a new run from the state of runID at step seq. With res, that
// step's request gets res as its result (a different tool output or model
// reply); without, the request is performed again, live.
func (r *Runner) Fork(ctx context.Context, ag *Agent, runID string, seq int, res core.Result) (Outcome, error) {
	if err := r.check(ag); err != nil {
		return Outcome{}, err
	}
	info, err := r.store.Run(ctx, runID)
	if err != nil {
		return Outcome{}, fmt.Errorf("fork %s: %w", runID, err)
	}
	rec, err := r.store.LoadStep(ctx, runID, seq)
	if err != nil {
		return Outcome{}, fmt.Errorf("fork %s at step %d: %w", runID, seq, err)
	}
	if rec.State.Done() {
		return Outcome{}, fmt.Errorf("fork %s at step %d: %w there; fork at an earlier step", runID, seq, ErrRunEnded)
	}
	cur := &cursor{id: r.opts.NewID(), st: rec.State}
	if res != nil {
		next, err := core.Resume(ag.Config, rec.State, res)
		if err != nil {
			return Outcome{}, fmt.Errorf("fork %s at step %d: %w", runID, seq, err)
		}
		cur.st, cur.result = next, res
	}
	source := ag.Source
	if source == nil {
		source = info.Config
	}
	if err := r.store.CreateRun(ctx, store.NewRun{
		ID: cur.id, Agent: ag.Config.Name, ConfigHash: core.ConfigHash(ag.Config), Config: source,
		Input: info.Input, Initial: rec.State, ParentID: runID, ParentStep: seq,
	}); err != nil {
		return Outcome{}, fmt.Errorf("create fork: %w", err)
	}
	return r.drive(ctx, ag, cur)
}

func (r *Runner) check(ag *Agent) error {
	if ag == nil {
		return errors.New("no agent")
	}
	if err := ag.Config.Validate(); err != nil {
		return err
	}
	if ag.Models[core.Primary] == nil {
		return fmt.Errorf("%w %s", ErrNoProvider, core.Primary)
	}
	if ag.Config.Models.Helper != "" && ag.Models[core.Helper] == nil {
		return fmt.Errorf("%w %s", ErrNoProvider, core.Helper)
	}
	for _, t := range ag.Config.Tools {
		if t.Mode != core.ModeExternal && ag.Tools[t.Name] == nil {
			return fmt.Errorf("tool %q has no implementation", t.Name)
		}
	}
	return nil
}

// cursor is a run being driven: its last checkpointed seq and the state to
// step next, with the result that led to it (stored with the next step).
type cursor struct {
	id     string
	seq    int
	st     core.State
	result core.Result
}

func (r *Runner) load(ctx context.Context, runID string) (*cursor, error) {
	info, err := r.store.Run(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("load run %s: %w", runID, err)
	}
	rec, err := r.store.LoadLatest(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("load run %s: %w", runID, err)
	}
	if info.Status == store.StatusInterrupted {
		if err := r.store.SetStatus(ctx, runID, store.StatusRunning, ""); err != nil {
			return nil, fmt.Errorf("run %s: mark running: %w", runID, err)
		}
	}
	return &cursor{id: runID, seq: rec.Seq, st: rec.State}, nil
}

func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	ts := time.Now().UTC().Format("20060102-150405")
	return "r" + ts + "-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))[:10]
}

// ParseResults reads external tool results as the CLI and API accept them:
// a JSON array of {"tool_call_id": ..., "result": ...} or
// {"tool_call_id": ..., "error": "..."}. A result that is not a string is
// kept as its JSON text.
func ParseResults(data []byte) ([]core.ToolResult, error) {
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("results: want a JSON array of {\"tool_call_id\", \"result\" | \"error\"}: %w", err)
	}
	out := make([]core.ToolResult, 0, len(raw))
	for i, m := range raw {
		var r core.ToolResult
		for k, v := range m {
			switch k {
			case "tool_call_id":
				if err := json.Unmarshal(v, &r.CallID); err != nil || r.CallID == "" {
					return nil, fmt.Errorf("results[%d]: tool_call_id must be a non-empty string", i)
				}
			case "result":
				var s string
				if err := json.Unmarshal(v, &s); err == nil {
					r.Output = s
				} else {
					r.Output = string(v)
				}
			case "error":
				if err := json.Unmarshal(v, &r.Error); err != nil || r.Error == "" {
					return nil, fmt.Errorf("results[%d]: error must be a non-empty string", i)
				}
			default:
				return nil, fmt.Errorf("results[%d]: unknown key %q (want tool_call_id, result, error)", i, k)
			}
		}
		if r.CallID == "" {
			return nil, fmt.Errorf("results[%d]: tool_call_id is missing", i)
		}
		if _, ok := m["result"]; ok && r.Error != "" {
			return nil, fmt.Errorf("results[%d]: give result or error, not both", i)
		}
		out = append(out, r)
	}
	return out, nil
}
