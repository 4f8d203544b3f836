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

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
	"github.com/stepwise-agent/stepwise/store"
)

// dbFlag adds --db with its documented default.
func (e *env) dbFlag(fs *flag.FlagSet) *string {
	return fs.String("db", "", "database file (default $STEPWISE_DB, else ./stepwise.db)")
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

// openStore opens the database; on failure it prints why and returns the
// exit code to use.
func (e *env) openStore(cmd, flagValue string) (*store.SQLite, int) {
	path := e.dbPath(flagValue)
	db, err := store.Open(path, nil)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepwise %s: open %s: %v\n", cmd, path, err)
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

// build creates the live agent; the caller defers closeAgent.
func (e *env) build(cmd string, spec *agent.Spec, opts agent.BuildOptions) (*shell.Agent, int) {
	ag, err := spec.Build(opts)
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
func (e *env) storedAgent(ctx context.Context, cmd string, db *store.SQLite, runID, script string) (*agent.Spec, *shell.Agent, int) {
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

func (e *env) runner(spec *agent.Spec, db *store.SQLite, quiet bool) *shell.Runner {
	opts := &shell.Options{ToolTimeout: spec.ToolTimeout, RunTimeout: spec.RunTimeout, MaxToolOutput: spec.MaxToolOutput}
	if !quiet {
		opts.Observer = newProgress(e.stderr, e.getenv("NO_COLOR") == "")
	}
	return shell.NewRunner(db, opts)
}

// session opens the database and a context cancelled by SIGINT or SIGTERM;
// done releases both. On failure it prints why and returns the exit code.
func (e *env) session(cmd, dbFlag string) (context.Context, *store.SQLite, func(), int) {
	st, code := e.openStore(cmd, dbFlag)
	if code >= 0 {
		return nil, nil, nil, code
	}
	ctx, stop := signalContext()
	return ctx, st, func() { stop(); st.Close() }, -1
}

// signalContext is cancelled by SIGINT or SIGTERM; the runner then marks the
// run interrupted after checkpointing.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// jsonOutcome is the --json shape of run, resume and fork.
type jsonOutcome struct {
	RunID     string       `json:"run_id"`
	Status    string       `json:"status"`
	Answer    string       `json:"answer"`
	ToolsUsed []string     `json:"tools_used"`
	Pending   []jsonCall   `json:"pending_tool_calls"`
	Steps     int          `json:"steps"`
	Error     string       `json:"error"`
	Failure   *jsonFailure `json:"failure,omitempty"`
}

type jsonCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type jsonFailure struct {
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// report prints an outcome (answer on stdout, the rest on stderr, or one JSON
// object) and returns the exit code for its status.
func (e *env) report(out shell.Outcome, asJSON bool) int {
	code := exitCode(out.Status)
	if asJSON {
		j := jsonOutcome{RunID: out.RunID, Status: string(out.Status), Answer: out.Answer, ToolsUsed: nonNil(out.ToolsUsed), Pending: []jsonCall{}, Steps: out.Steps}
		for _, c := range out.Pending {
			j.Pending = append(j.Pending, jsonCall{ID: c.ID, Name: c.Name, Arguments: c.Args})
		}
		if out.Failure != nil {
			j.Error = out.Failure.Reason
			j.Failure = &jsonFailure{Code: string(out.Failure.Code), Reason: out.Failure.Reason}
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(j)
		return code
	}
	switch out.Status {
	case store.StatusCompleted:
		fmt.Fprintln(e.stdout, out.Answer)
	case store.StatusFailed:
		fmt.Fprintf(e.stderr, "run %s failed (%s): %s\n", out.RunID, out.Failure.Code, out.Failure.Reason)
	case store.StatusAwaitingToolResults:
		fmt.Fprintf(e.stderr, "run %s is paused awaiting results for %d tool call(s):\n", out.RunID, len(out.Pending))
		for _, c := range out.Pending {
			fmt.Fprintf(e.stdout, "%s\t%s\t%s\n", c.ID, c.Name, c.Args)
		}
		fmt.Fprintf(e.stderr, "resume with: stepwise resume %s --results FILE   (FILE: [{\"tool_call_id\": ID, \"result\": ...}])\n", out.RunID)
	case store.StatusInterrupted:
		fmt.Fprintf(e.stderr, "run %s was interrupted; continue it with: stepwise resume %s\n", out.RunID, out.RunID)
	}
	return code
}

func (e *env) runErr(cmd string, err error) int {
	fmt.Fprintf(e.stderr, "stepwise %s: %v\n", cmd, err)
	switch {
	case errors.Is(err, core.ErrUnknownCall), errors.Is(err, core.ErrDuplicateResult), errors.Is(err, core.ErrMissingResults),
		errors.Is(err, core.ErrWrongResult), errors.Is(err, core.ErrNothingPending), errors.Is(err, shell.ErrNotPaused),
		errors.Is(err, shell.ErrRunEnded), errors.Is(err, store.ErrNotFound), errors.Is(err, core.ErrInvalidConfig):
		return exitUsage
	}
	return exitInternal
}

func exitCode(s store.Status) int {
	switch s {
	case store.StatusCompleted:
		return exitCompleted
	case store.StatusFailed:
		return exitFailed
	case store.StatusAwaitingToolResults:
		return exitPaused
	case store.StatusInterrupted:
		return exitInterrupted
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
