package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
	"github.com/stepwise-agent/stepwise/store"
)

// dbFlag adds --db with its documented default.
func (e *env) dbFlag(fs *flag.FlagSet) *string {
	e.durability = fs.String("durability", "", "full: every commit survives a power loss; normal: a process crash only, faster (default $STEPWISE_DURABILITY, else full)")
	return fs.String("db", "", "database: a SQLite file or a postgres:// URL (default $STEPWISE_DB, else ./stepwise.db)")
}

// durabilityOf is the --durability flag's value, else $STEPWISE_DURABILITY,
// else full.
func (e *env) durabilityOf() (store.Durability, error) {
	v := ""
	if e.durability != nil {
		v = *e.durability
	}
	if v == "" {
		v = e.getenv("STEPWISE_DURABILITY")
	}
	d, err := store.ParseDurability(v)
	if err != nil {
		return "", fmt.Errorf("--durability or STEPWISE_DURABILITY: %w", err)
	}
	return d, nil
}

func (e *env) dbPath(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if v := e.getenv("STEPWISE_DB"); v != "" {
		return v
	}
	return "stepwise.db"
}

// openStore opens the database: a postgres:// (or postgresql://) URL, else
// the path of a SQLite file. On failure it prints why and returns the exit
// code to use. A read-only command never creates a SQLite database: a
// missing file (or directory) is a usage error.
func (e *env) openStore(cmd, flagValue string, readOnly bool) (store.Store, int) {
	path := e.dbPath(flagValue)
	d, err := e.durabilityOf()
	if err != nil {
		fmt.Fprintf(e.stderr, "stepwise %s: %v\n", cmd, err)
		return nil, exitUsage
	}
	db, err := openDB(path, readOnly, d)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepwise %s: %v\n", cmd, err)
		if errors.Is(err, store.ErrNotFound) {
			return nil, exitUsage
		}
		return nil, exitInternal
	}
	return db, -1
}

// loadAgent reads and validates an agent file (exit 2 on any problem).
func (e *env) loadAgent(cmd, path string) (*agent.Spec, int) {
	spec, err := agent.Load(path)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepwise %s: %v\n", cmd, err)
		return nil, exitUsage
	}
	return spec, -1
}

// buildTimeout bounds how long the CLI waits for an agent's MCP servers
// to start and list their tools.
const buildTimeout = 2 * time.Minute

// build creates the live agent; the caller defers closeAgent.
func (e *env) build(cmd string, spec *agent.Spec, opts agent.BuildOptions) (*shell.Agent, int) {
	// Some commands build before they have a session's context: the
	// build's own deadline is the CLI's limit.
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	ag, err := spec.Build(ctx, opts)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepwise %s: %v\n", cmd, err)
		return nil, exitUsage
	}
	return ag, -1
}

// closeAgent shuts down what the agent started (MCP servers).
func closeAgent(ag *shell.Agent) {
	if ag != nil && ag.Close != nil {
		_ = ag.Close()
	}
}

// storedAgent rebuilds the agent a run was started with.
func (e *env) storedAgent(ctx context.Context, cmd string, db store.Store, runID, script string) (*agent.Spec, *shell.Agent, int) {
	info, err := db.Run(ctx, runID)
	if err != nil {
		return nil, nil, e.storeErr(cmd, err)
	}
	spec, opts, err := agent.FromSource(info.Config)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepwise %s: run %s: %v\n", cmd, runID, err)
		return nil, nil, exitUsage
	}
	if script != "" {
		opts.Script = script
	}
	ag, code := e.build(cmd, spec, opts)
	return spec, ag, code
}

func (e *env) storeErr(cmd string, err error) int {
	fmt.Fprintf(e.stderr, "stepwise %s: %v\n", cmd, err)
	if errors.Is(err, store.ErrNotFound) {
		return exitUsage
	}
	return exitInternal
}

// runFlags are the flags of the commands that drive a run.
type runFlags struct {
	wait *time.Duration
	// takeOver, when set, is the command that forces a take-over
	// (--take-over): the runner takes the lease whatever its holder.
	takeOver string
}

func (e *env) driveFlags(fs *flag.FlagSet) runFlags {
	return runFlags{wait: fs.Duration("wait", 0, "when another process drives the run, wait up to this long for it (e.g. 30s) instead of exiting 6")}
}

// runner makes the runner for ag: progress on stderr unless quiet, with
// ag's secrets redacted from everything the command prints from now on.
func (e *env) runner(spec *agent.Spec, ag *shell.Agent, db store.Store, quiet bool, rf runFlags) (*shell.Runner, int) {
	e.redact(ag.Secrets)
	opts := &shell.Options{ToolTimeout: spec.ToolTimeout, RunTimeout: spec.RunTimeout, MaxToolOutput: spec.MaxToolOutput}
	if rf.wait != nil {
		opts.Wait = *rf.wait
	}
	if v := e.getenv("STEPWISE_LEASE_TTL"); v != "" {
		ttl, err := time.ParseDuration(v)
		if err != nil || ttl < 100*time.Millisecond {
			fmt.Fprintf(e.stderr, "stepwise: STEPWISE_LEASE_TTL=%q: want a duration of at least 100ms, like 15s\n", v)
			return nil, exitUsage
		}
		opts.LeaseTTL = ttl
	}
	if !quiet {
		opts.Observer = newProgress(e.stderr, e.getenv("NO_COLOR") == "")
	}
	tracer, code := e.tracer(db)
	if code >= 0 {
		return nil, code
	}
	opts.Observer = shell.Join(opts.Observer, tracer)
	if rf.takeOver != "" {
		opts.TakeOver = rf.takeOver
		opts.Observer = takeOverWarning{w: e.stderr, cmd: rf.takeOver, next: opts.Observer}
	}
	return shell.NewRunner(db, opts), -1
}

// takeOverWarning warns on stderr of a forced take-over, naming the holder
// taken over, and passes every other event on.
type takeOverWarning struct {
	w    io.Writer
	cmd  string
	next shell.Observer
}

func (o takeOverWarning) Event(ev shell.Event) {
	if ev.Kind == "takeover" {
		fmt.Fprintf(o.w, "%s: warning: run %s: %s; it can no longer write to the run\n", o.cmd, ev.RunID, ev.Text)
		return
	}
	if o.next != nil {
		o.next.Event(ev)
	}
}

// redact makes stdout and stderr replace the secrets' values by markers.
func (e *env) redact(secrets []shell.Secret) {
	x := shell.NewRedactor(secrets)
	e.stdout = newRedactingWriter(e.stdout, x)
	e.stderr = newRedactingWriter(e.stderr, x)
}

// session opens the database and a context cancelled by SIGINT or SIGTERM;
// done releases both. On failure it prints why and returns the exit code.
func (e *env) session(cmd, dbFlag string) (context.Context, store.Store, func(), int) {
	return e.openSession(cmd, dbFlag, false)
}

// readSession is session for commands that only read: the database must
// exist.
func (e *env) readSession(cmd, dbFlag string) (context.Context, store.Store, func(), int) {
	return e.openSession(cmd, dbFlag, true)
}

func (e *env) openSession(cmd, dbFlag string, readOnly bool) (context.Context, store.Store, func(), int) {
	st, code := e.openStore(cmd, dbFlag, readOnly)
	if code >= 0 {
		return nil, nil, nil, code
	}
	ctx, stop := signalContext()
	return ctx, st, func() { stop(); st.Close() }, -1
}

// signalContext is cancelled by SIGINT or SIGTERM, with a cause naming
// the signal; the runner then marks the run interrupted after
// checkpointing, with that cause as the reason.
func signalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-ch:
			name := "SIGTERM"
			if sig == os.Interrupt {
				name = "SIGINT"
			}
			cancel(fmt.Errorf("interrupted by %s", name))
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(ch); cancel(nil) }
}

// jsonOutcome is the --json shape of run, resume and fork.
type jsonOutcome struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`
	Answer string `json:"answer"`
	// Output is the answer as a JSON value, for an agent with [output].
	Output    json.RawMessage `json:"output,omitempty"`
	ToolsUsed []string        `json:"tools_used"`
	Sources   []string        `json:"sources"`
	Pending   []jsonCall      `json:"pending_tool_calls"`
	Steps     int             `json:"steps"`
	Error     string          `json:"error"`
	Failure   *jsonFailure    `json:"failure,omitempty"`
	// Reason says why an interrupted or stalled run stopped.
	Reason string `json:"reason,omitempty"`
	// RetryAt is when a stalled run may be tried again (RFC 3339).
	RetryAt string        `json:"retry_at,omitempty"`
	InDoubt []jsonInDoubt `json:"in_doubt_calls,omitempty"`
}

// jsonCall is a call in --json output: its id, name and arguments, and raw,
// the text the model wrote it as ("" for a native call: see ADR 0016).
type jsonCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Raw       string          `json:"raw"`
}

func callJSON(c core.ToolCall) jsonCall {
	return jsonCall{ID: c.ID, Name: c.Name, Arguments: rawArgs(c.Args), Raw: c.Raw}
}

type jsonFailure struct {
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// jsonInDoubt is an in-doubt call: a non-idempotent call that was in flight
// when its run stopped.
type jsonInDoubt struct {
	jsonCall
	Step       int    `json:"step"`
	Started    string `json:"started"`
	Resolution string `json:"resolution,omitempty"`
}

func inDoubtJSON(list []shell.InDoubtCall) []jsonInDoubt {
	var out []jsonInDoubt
	for _, d := range list {
		out = append(out, jsonInDoubt{jsonCall: callJSON(d.Call),
			Step: d.Step, Started: d.Started.UTC().Format(time.RFC3339Nano), Resolution: d.Resolution})
	}
	return out
}

// rawArgs is call arguments as JSON ({} when empty or not JSON).
func rawArgs(b []byte) json.RawMessage {
	if !json.Valid(b) {
		return json.RawMessage("{}")
	}
	return b
}

// report prints an outcome (answer on stdout, the rest on stderr, or one JSON
// object) and returns the exit code for its status.
func (e *env) report(out shell.Outcome, asJSON bool) int {
	code := exitCode(out.Status)
	if asJSON {
		j := jsonOutcome{RunID: out.RunID, Status: string(out.Status), Answer: out.Answer, Output: out.Output, ToolsUsed: nonNil(out.ToolsUsed), Sources: nonNil(out.Sources), Pending: []jsonCall{}, Steps: out.Steps,
			Reason: out.Reason, InDoubt: inDoubtJSON(out.InDoubt)}
		for _, c := range out.Pending {
			j.Pending = append(j.Pending, callJSON(c))
		}
		if out.Failure != nil {
			j.Error = out.Failure.Reason
			j.Failure = &jsonFailure{Code: string(out.Failure.Code), Reason: out.Failure.Reason}
		}
		if !out.RetryAt.IsZero() {
			j.RetryAt = out.RetryAt.UTC().Format(time.RFC3339)
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(j)
		return code
	}
	for _, d := range out.InDoubt {
		fmt.Fprintf(e.stderr, "in doubt: %s %s %s was in flight when the run stopped (started %s): %s\n",
			d.Call.ID, d.Call.Name, d.Call.Args, d.Started.Local().Format(time.DateTime), resolutionText(d.Resolution))
	}
	switch out.Status {
	case store.StatusCompleted:
		fmt.Fprintln(e.stdout, out.Answer)
	case store.StatusFailed, store.StatusCancelled:
		fmt.Fprintf(e.stderr, "run %s %s (%s): %s\n", out.RunID, out.Status, out.Failure.Code, out.Failure.Reason)
	case store.StatusAwaitingToolResults:
		fmt.Fprintf(e.stderr, "run %s is paused awaiting results for %d tool call(s):\n", out.RunID, len(out.Pending))
		for _, c := range out.Pending {
			fmt.Fprintf(e.stdout, "%s\t%s\t%s\n", c.ID, c.Name, c.Args)
		}
		fmt.Fprintf(e.stderr, "resume with: stepwise resume %s --results FILE   (FILE: [{\"tool_call_id\": ID, \"result\": ...}])\n", out.RunID)
	case store.StatusInterrupted:
		fmt.Fprintf(e.stderr, "run %s was %s; continue it with: stepwise resume %s\n", out.RunID, out.Reason, out.RunID)
	case store.StatusStalled:
		when := "now"
		if !out.RetryAt.IsZero() {
			when = "after " + out.RetryAt.Local().Format(time.DateTime)
		}
		fmt.Fprintf(e.stderr, "run %s stalled: %s\ntry it again (%s) with: stepwise resume %s   (--agent FILE to change its agent)\n", out.RunID, out.Reason, when, out.RunID)
	}
	return code
}

func resolutionText(r string) string {
	switch r {
	case "answered":
		return "its outcome was given by --results"
	case "not_run":
		return "--results said it did not run, so it ran"
	case "unknown":
		return "the model was told its outcome is unknown"
	case "rerun":
		return "the agent's in_doubt policy ran it again"
	case "waiting":
		return "the run waits for you: answer it with --results FILE ({\"tool_call_id\", \"result\" | \"error\" | \"not_run\": true})"
	}
	return r
}

func (e *env) runErr(cmd string, err error) int {
	fmt.Fprintf(e.stderr, "stepwise %s: %v\n", cmd, err)
	if store.Unavailable(err) {
		// A blip outlasted the retries, and the run could not even be
		// marked stalled: it stalled all the same (exit 7), not failed.
		fmt.Fprintf(e.stderr, "the store is unavailable, so the run stalled (not failed): its last checkpoint stands; once the store answers again, continue it with stepwise resume RUN_ID\n")
		return exitStalled
	}
	switch {
	case errors.Is(err, shell.ErrBusy), errors.Is(err, shell.ErrLeaseLost), errors.Is(err, shell.ErrAlreadyAnswered):
		return exitBusy
	case errors.Is(err, core.ErrUnknownCall), errors.Is(err, core.ErrDuplicateResult), errors.Is(err, core.ErrMissingResults),
		errors.Is(err, core.ErrWrongResult), errors.Is(err, core.ErrNothingPending), errors.Is(err, shell.ErrNotPaused),
		errors.Is(err, shell.ErrRunEnded), errors.Is(err, store.ErrNotFound), errors.Is(err, core.ErrInvalidConfig),
		errors.Is(err, shell.ErrBadResults), errors.Is(err, agent.ErrInvalid), errors.Is(err, shell.ErrInputTooLarge),
		errors.Is(err, core.ErrEmptyMessage), errors.Is(err, core.ErrMessageTooLarge), errors.Is(err, core.ErrConversationEnded),
		errors.Is(err, core.ErrBadHistory):
		return exitUsage
	}
	return exitInternal
}

func exitCode(s store.Status) int {
	switch s {
	case store.StatusCompleted:
		return exitCompleted
	case store.StatusFailed, store.StatusCancelled:
		return exitFailed
	case store.StatusAwaitingToolResults:
		return exitPaused
	case store.StatusInterrupted:
		return exitInterrupted
	case store.StatusStalled:
		return exitStalled
	}
	return exitInternal
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// readInput reads a file argument, "-" meaning stdin.
func (e *env) readInput(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(e.stdin)
	}
	return os.ReadFile(path)
}
