package shell

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
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
	// ToolSettings holds, per tool name, what an internal tool asks of the
	// shell beyond its declaration: a view of the run, an output schema, a
	// cache (see ToolSettings; a Registry fills it).
	ToolSettings map[string]ToolSettings
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
	// Live, when set, returns the agent as it is now: the same pointer
	// until the agent changes while runs go on (an MCP server's tool list
	// changed, or a server became unavailable), then the changed agent,
	// whose own Live follows later changes. A run picks a change up
	// between a request and the folding in of its result, and records it
	// (store.ChangeAgent, as resume --agent does), so replay follows it.
	Live func() *Agent
	// SubAgents are the agents this one calls as tools, by tool name: a
	// call starts a child run (subagents.go). Each is declared in
	// Config.Tools as an internal, idempotent tool.
	SubAgents map[string]*SubAgent
	// Handoffs are the agents this one can hand the run's conversation to,
	// by tool name (subagents.go): the run goes on with that agent.
	Handoffs map[string]*Handoff
}

// Options tune a Runner. The zero value means the defaults.
type Options struct {
	// ToolTimeout bounds one tool call (default 30s).
	ToolTimeout time.Duration
	// RunTimeout bounds a whole run; when it passes the run is cancelled
	// (0: none).
	RunTimeout time.Duration
	// MaxToolOutput caps a tool's output in bytes before it reaches the core
	// (default 1 MiB); the core then truncates further for the model.
	MaxToolOutput int
	// NewID makes run ids (default: time-ordered random ids).
	NewID func() string
	// Observer, when set, is told about every step as it happens.
	Observer Observer
	// Owner names this runner as the holder of the runs it drives
	// (default NewOwner(): host, pid and a random nonce).
	Owner string
	// LeaseTTL is how long a run's lease lasts unless renewed (default
	// DefaultLeaseTTL); the runner renews it every third of that, each
	// renewal given a third of it to answer. When the store has not
	// renewed it by its expiry (it hangs, or is unreachable), the drive
	// stops with ErrLeaseLost, as when another driver took the run over.
	LeaseTTL time.Duration
	// Wait is how long Resume, Submit and Cancel (and the Pool's Answer
	// and Requeue) wait for a run that another live driver holds; 0
	// refuses at once with ErrBusy (Cancel: ErrCancelRequested, and it
	// waits for a holder in this process anyway; see Runner.Cancel).
	Wait time.Duration
	// StoreRetry is how a drive retries a store write that failed because
	// the store is unavailable (store.Unavailable: a lost connection, a
	// restart, a full disk, SQLite busy); zero fields take
	// DefaultStoreRetry's. Past it the run stalls. The lease bounds it too:
	// a store unreachable for the lease's lifetime ends the drive.
	StoreRetry RetryPolicy
	// StallBackoff is how long a stalled run waits before it is retried,
	// by its stall count in a row (store.RunInfo.StallAttempts); zero
	// fields take DefaultStallBackoff's.
	StallBackoff RetryPolicy
	// TakeOver, when set, makes Resume, Submit and Cancel (and the Pool's
	// Answer and Requeue) take the run's lease whatever its holder, alive
	// or not: an operator's forced take-over. The former holder is fenced
	// out (it writes nothing more and starts no call), the take-over is
	// recorded with the run (store.RunInfo.TakeOvers) with this text as
	// its reason, and the Observer gets a "takeover" event naming the
	// holder.
	TakeOver string
}

// Observer receives progress events; it must not block for long.
type Observer interface {
	Event(Event)
}

// Event is one thing that happened in a run, for progress output.
type Event struct {
	RunID string
	Seq   int
	// Kind is "model", "tools", "tool", "external", "results", "memory",
	// "complete", "fail", "interrupted", "stalled", "retry", "in_doubt",
	// "takeover" (Options.TakeOver took the run from the holder Text
	// names), "cache" (the tool cache could not be read or written), "progress" (a
	// running call's report: Progress is set) or "agent" (the agent
	// changed while the run went on, as when an MCP server's tool list
	// changed: the change is recorded with the run); while a model call is
	// in flight, "calling" when it starts, then "delta" for each piece of
	// its reply as it streams and "retry" for each retry of the call (see
	// Index). Seq is then the step whose request the call answers.
	Kind     string
	Text     string
	Duration time.Duration
	Usage    core.Usage

	// The fields below describe the call a "model", "tool", "memory" or
	// "results" event reports, for tracing (see shell/telemetry). They are
	// set only on those events, and hold redacted data, as stored.

	// Start is when the call began ("calling", "model", "tool", "memory").
	Start time.Time
	// Request is the request performed: the core.RequestModelCall of a
	// "model" event, the memory request of a "memory" event.
	Request core.Action
	// Call is the tool call of a "tool" event.
	Call core.ToolCall
	// Result is the outcome: the core.ModelReply of a "model" event, a
	// core.ToolResults holding the one result of a "tool" event, the
	// memory result of a "memory" event, and for a "results" event (a
	// paused run answered) the core.ToolResults the caller gave.
	Result core.Result
	// Progress is a running call's report, for Kind "progress".
	Progress *ToolProgress
	// Index numbers the "delta" and "retry" events of one model call,
	// from 1; with Seq it identifies them ("SEQ.N" in the service's
	// event stream). 0 for the other events.
	Index int
	// Part says what a delta is a piece of: "text", "reasoning", or
	// "call:NAME" for the arguments of a call to the tool NAME.
	Part string
}

// Runner drives runs of agents and owns their goroutines, contexts and
// timeouts. It is safe for concurrent use by several runs.
//
// A program that embeds stepwise calls these methods, each of which
// drives the run until it completes, fails, pauses for external tools,
// stalls, or ctx ends, and returns its Outcome:
//
//   - Start starts a run of an agent on an input.
//   - Submit answers a paused run: the results of the external calls in
//     Outcome.Pending (or the outcomes of in-doubt calls), then drives on.
//   - Resume continues an interrupted, stalled or crashed run.
//   - Fork starts a new run from a step of another, optionally with a
//     different result for that step's request.
//   - Cancel ends a run that has not ended.
//   - Continue drives the counterfactual continuation of a replay's
//     divergence (see Replay).
//   - InDoubt lists the calls that were in flight when a run stopped.
//
// Servers and worker pools, which leave runs runnable for workers to
// claim instead of driving them in the caller's goroutine, use the
// runner's Pool. The Runner's methods of that kind (Create, Drive,
// Answer, Requeue, ForkRunnable, Latest, InDoubtAt) are deprecated
// forwarders to it.
//
// The processes that tools start (command and run_code tools, stdio MCP
// servers) cannot read this process's environment or memory: the first
// one started calls tools.HideEnvironment, once, for the whole process.
// A program that wants them to (it keeps no secret in its environment,
// or reads its own /proc/self files, which hiding makes unreadable) calls
// tools.ExposeEnvironment.
type Runner struct {
	store Store
	opts  Options
	// states are the last states this runner checkpointed (see
	// stateCache).
	states stateCache
	// pool is the runner's worker-pool operations (see Pool).
	pool Pool
	// unwritten holds outcomes of calls this process knows but could not
	// write while the store was unavailable (see unwrittenOutcomes).
	unwritten unwrittenOutcomes
	// beats renews the leases this runner holds (beats.go).
	beats beats
}

// NewRunner returns a runner that checkpoints to st.
func NewRunner(st Store, opts *Options) *Runner {
	r := &Runner{store: st}
	r.pool.r = r
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
	if r.opts.Owner == "" {
		r.opts.Owner = NewOwner()
	}
	if r.opts.LeaseTTL <= 0 {
		r.opts.LeaseTTL = DefaultLeaseTTL
	}
	r.opts.StoreRetry = r.opts.StoreRetry.WithDefaults(DefaultStoreRetry)
	r.opts.StallBackoff = r.opts.StallBackoff.WithDefaults(DefaultStallBackoff)
	return r
}

// Outcome is where a run stands when the runner returns.
type Outcome struct {
	RunID  string
	Status store.Status
	Answer string
	// Output is the answer as a JSON value, for an agent with an output
	// schema ([output]; see OutputAs).
	Output    json.RawMessage
	Failure   *core.Failure
	ToolsUsed []string
	Sources   []string
	// Pending lists the external calls a paused run waits for.
	Pending []core.ToolCall
	// Steps is the number of checkpointed steps.
	Steps int
	// Reason says why an interrupted or stalled run stopped.
	Reason string
	// RetryAt is when a stalled run may be tried again (zero: at once).
	RetryAt time.Time
	// StallAttempts is, for a stalled run, its stall count in a row.
	StallAttempts int
	// InDoubt lists the non-idempotent calls this drive found in flight
	// from an earlier one (an intent without an outcome), and what became
	// of them.
	InDoubt []InDoubtCall
}

// InDoubtCall is a non-idempotent call that was in flight when its run
// stopped: it may or may not have taken effect.
type InDoubtCall struct {
	Call    core.ToolCall
	Step    int
	Started time.Time
	// Resolution is what became of it: "answered" (an operator gave its
	// outcome), "not_run" (an operator said it did not run, so it ran),
	// "unknown" (the model was told the outcome is unknown), "rerun" (the
	// agent's policy ran it again) or "waiting" (the run stalled until an
	// operator answers it).
	Resolution string
}

// Errors the runner returns for requests that do not fit the run.
var (
	ErrNotPaused  = errors.New("the run is not awaiting tool results")
	ErrRunEnded   = errors.New("the run has ended")
	ErrNoProvider = errors.New("no model provider for role")
)

// Start creates a run of ag on input and drives it until it completes, fails,
// pauses for external tools, stalls, or ctx ends (then it is marked
// interrupted). The run is created with its lease held by this runner. An
// input over InputLimit is refused (ErrInputTooLarge), nothing stored.
func (r *Runner) Start(ctx context.Context, ag *Agent, input string) (Outcome, error) {
	return r.StartFrom(ctx, ag, core.Request{Input: input})
}

// Resume continues a run that was interrupted, stalled or crashed from its
// last checkpoint, once it holds the run's lease (ErrBusy while another
// live driver holds it; see Options.Wait). A paused run stays paused (use
// Submit); an ended run is reported as it ended. When ag.Source differs
// from the agent the run is driven by, the change is recorded with the run
// (resume --agent).
func (r *Runner) Resume(ctx context.Context, ag *Agent, runID string) (Outcome, error) {
	return r.resume(ctx, ag, runID, nil)
}

// Submit answers a run: the results of the external calls it is paused
// for, which must answer every pending call exactly once (otherwise
// nothing changes and the error says why); or the outcome of in-doubt
// calls (a result, an error, or NotRun: it did not run, so it runs now).
// Results for a pause another caller already answered are
// ErrAlreadyAnswered.
func (r *Runner) Submit(ctx context.Context, ag *Agent, runID string, ans Answers) (Outcome, error) {
	return r.resume(ctx, ag, runID, &ans)
}

func (r *Runner) resume(ctx context.Context, ag *Agent, runID string, ans *Answers) (Outcome, error) {
	ag = ag.current()
	if err := r.check(ag); err != nil {
		return Outcome{}, err
	}
	acquired := time.Now()
	l, err := r.acquire(ctx, runID)
	if err != nil {
		return Outcome{}, err
	}
	h, hctx := r.hold(ctx, l, acquired)
	defer h.release()
	cur, err := r.load(hctx, h, ag, runID)
	if err == nil && ans != nil {
		err = r.answer(hctx, h, ag, cur, *ans)
	}
	if err != nil {
		return Outcome{}, r.lostOr(h, err)
	}
	return r.drive(ctx, hctx, ag, cur, h)
}

// Fork starts a new run from the state of runID at step seq. With res, that
// step's request gets res as its result (a different tool output or model
// reply); without, the request is performed again, live. The fork records
// ag.Source as its agent (fork --agent).
func (r *Runner) Fork(ctx context.Context, ag *Agent, runID string, seq int, res core.Result) (Outcome, error) {
	return r.fork(ctx, ag, runID, seq, res, false)
}

// fork is Fork; with handOff, the new run is left runnable after its first
// checkpoint instead of being driven.
func (r *Runner) fork(ctx context.Context, ag *Agent, runID string, seq int, res core.Result, handOff bool) (Outcome, error) {
	ag = ag.current()
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
	if _, msg := res.(core.UserMessage); rec.State.Done() && !(msg && rec.State.Phase == core.PhaseDone) {
		return Outcome{}, fmt.Errorf("fork %s at step %d: %w there; fork at an earlier step, or with another user message where a turn was answered", runID, seq, ErrRunEnded)
	}
	cur := &cursor{id: r.opts.NewID(), st: rec.State, handOff: handOff}
	if res != nil {
		res = NewRedactor(ag.Secrets).Result(core.Sanitize(res))
		next, err := core.Resume(ag.Config, rec.State, res)
		if err != nil {
			return Outcome{}, fmt.Errorf("fork %s at step %d: %w", runID, seq, err)
		}
		cur.st, cur.result = next, res
	}
	return r.branch(ctx, ag, info, seq, rec.State, cur, "create fork")
}

// branch creates the run cur names, of ag, from state from: a fork of the
// run info at step parentStep, which records ag.Source as its agent (the
// parent's when ag has none). It then drives it from cur, which may have
// moved past from (a result folded in). what words a failure to create it.
func (r *Runner) branch(ctx context.Context, ag *Agent, info store.RunInfo, parentStep int, from core.State, cur *cursor, what string) (Outcome, error) {
	source := ag.Source
	if source == nil {
		source = info.Config
	}
	acquired := time.Now()
	l, err := r.store.CreateRun(ctx, store.NewRun{
		ID: cur.id, Agent: ag.Config.Name, ConfigHash: core.ConfigHash(ag.Config), Config: source,
		Input: info.Input, Initial: from, ParentID: info.ID, ParentStep: parentStep, Owner: r.opts.Owner, LeaseTTL: r.opts.LeaseTTL,
	})
	if err != nil {
		return Outcome{}, fmt.Errorf("%s: %w", what, err)
	}
	return r.driveHeld(ctx, ag, cur, l, acquired)
}

// driveHeld drives a run whose lease l this runner just took.
func (r *Runner) driveHeld(ctx context.Context, ag *Agent, cur *cursor, l store.Lease, acquired time.Time) (Outcome, error) {
	h, hctx := r.hold(ctx, l, acquired)
	defer h.release()
	return r.drive(ctx, hctx, ag, cur, h)
}

// lostOr returns ErrLeaseLost, wrapped, when the lease was lost; else err.
func (r *Runner) lostOr(h *holding, err error) error {
	if lost := h.lost(); lost != nil && !errors.Is(err, store.ErrLeaseLost) {
		return fmt.Errorf("%w (then: %v)", lost, err)
	}
	return err
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
		if t.Mode != core.ModeExternal && ag.Tools[t.Name] == nil && ag.SubAgents[t.Name] == nil && ag.Handoffs[t.Name] == nil {
			return fmt.Errorf("tool %q has no implementation", t.Name)
		}
	}
	if err := r.checkTools(ag); err != nil {
		return err
	}
	switch ag.InDoubt {
	case "", InDoubtUnknown, InDoubtRerun, InDoubtWait:
	default:
		return fmt.Errorf("in-doubt policy %q is not one of unknown, rerun, wait", ag.InDoubt)
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
	// delivered is the inbox message result is (store.Checkpoint.Delivered).
	delivered int
	// inboxDue makes the drive read the inbox at its next model call (a
	// loaded run to which messages were posted, which may be waiting
	// with no note to tell of them; none can wait in a run whose Posted
	// count, read under the lease, is 0).
	inboxDue bool
	// inDoubt collects what became of in-doubt calls, for the Outcome.
	inDoubt []InDoubtCall
	// handOff stops the drive before it performs a request: the run is
	// left runnable, its request durable, for a worker (see Pool).
	handOff bool
	// stop, once closed, sets handOff (see Drive).
	stop <-chan struct{}
	// handoff is the agent a handoff call of the batch just run hands the
	// run to (subagents.go).
	handoff   *Agent
	handoffMu sync.Mutex
	// stallAttempts is the run's stall count in a row, as loaded (see
	// store.RunInfo.StallAttempts); 0 once the run made progress.
	stallAttempts int
	// cache holds the run's results of cacheable tools (see runCache),
	// once read.
	cache   runCache
	cacheMu sync.Mutex
}

// load reads the run's last checkpoint once this runner holds its lease,
// records a changed agent, and marks an interrupted or stalled run running.
func (r *Runner) load(ctx context.Context, h *holding, ag *Agent, runID string) (*cursor, error) {
	info, err := r.store.Run(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("load run %s: %w", runID, err)
	}
	return r.loadFrom(ctx, h, ag, info)
}

// loadFrom is load of the run as info describes it, read while h was held.
func (r *Runner) loadFrom(ctx context.Context, h *holding, ag *Agent, info store.RunInfo) (*cursor, error) {
	runID := info.ID
	rec := store.StepRecord{Seq: info.LastSeq}
	var err error
	if st, ok := r.states.get(runID, info.LastSeq); ok {
		rec.State = st
	} else if rec, err = r.store.LoadLatest(ctx, runID); err != nil {
		return nil, fmt.Errorf("load run %s: %w", runID, err)
	}
	h.posted.Store(int64(info.Posted))
	if info.Status.Ended() {
		return &cursor{id: runID, seq: rec.Seq, st: rec.State, inboxDue: info.Posted > 0}, nil
	}
	if info.CancelReason != "" {
		// Acted on before the next request; after the writes below, which
		// the cut context would refuse.
		defer h.requestCancel(info.CancelReason)
	}
	if ag.Source != nil && !bytes.Equal(ag.Source, info.Config) {
		if err := r.store.ChangeAgent(ctx, h.lease(), ag.Source); err != nil {
			return nil, fmt.Errorf("run %s: record the changed agent: %w", runID, err)
		}
	}
	switch info.Status {
	case store.StatusInterrupted, store.StatusStalled:
		if err := r.store.SetStatus(ctx, h.lease(), store.StatusChange{Status: store.StatusRunning, StallAttempts: info.StallAttempts}); err != nil {
			return nil, fmt.Errorf("run %s: mark running: %w", runID, err)
		}
	}
	return &cursor{id: runID, seq: rec.Seq, st: rec.State, stallAttempts: info.StallAttempts, inboxDue: info.Posted > 0}, nil
}

// newRunID makes a run id: its creation time (so ids sort by it), then 128
// random bits, so that an id cannot be guessed (a server's API hands a run
// to whoever knows its id).
func newRunID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	ts := time.Now().UTC().Format("20060102-150405")
	return "r" + ts + "-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}
