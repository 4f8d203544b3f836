package store

import (
	"time"

	"github.com/stepwise-agent/stepwise/core"
)

// Status is where a run stands.
type Status string

// Run statuses. Completed, failed and cancelled are final: an ended run
// takes no more checkpoints. Interrupted and stalled runs are resumable.
const (
	// StatusRunning: a driver holds the run, or held it and died (see
	// RunInfo.Orphaned).
	StatusRunning Status = "running"
	// StatusAwaitingToolResults: paused for the caller's tool results.
	StatusAwaitingToolResults Status = "awaiting_tool_results"
	// StatusInterrupted: stopped by a signal or its context; resumable.
	StatusInterrupted Status = "interrupted"
	// StatusStalled: a transient failure (a model or tool outage)
	// outlasted its retry policy, or an in-doubt call waits for an
	// operator; resumable, from RunInfo.RetryAt on.
	StatusStalled   Status = "stalled"
	StatusCompleted Status = "completed"
	// StatusFailed: ended without an answer (a permanent error, a limit).
	StatusFailed Status = "failed"
	// StatusCancelled: ended by a cancellation (or its deadline).
	StatusCancelled Status = "cancelled"
)

// Statuses lists every status, in the order of a run's life.
var Statuses = []Status{StatusRunning, StatusAwaitingToolResults, StatusInterrupted, StatusStalled, StatusCompleted, StatusFailed, StatusCancelled}

// Valid reports whether s is one of the run statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusRunning, StatusAwaitingToolResults, StatusInterrupted, StatusStalled, StatusCompleted, StatusFailed, StatusCancelled:
		return true
	}
	return false
}

// Ended reports whether s is final (completed, failed or cancelled).
func (s Status) Ended() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// StatusOf is the run status an action leads to.
func StatusOf(a core.Action) Status {
	switch a := a.(type) {
	case core.Complete:
		return StatusCompleted
	case core.Fail:
		if a.Code == core.FailCancelled {
			return StatusCancelled
		}
		return StatusFailed
	case core.RequestExternalToolCalls:
		return StatusAwaitingToolResults
	}
	return StatusRunning
}

// NewRun is a run to create. Initial is its first state, stored as step 0.
type NewRun struct {
	ID         string
	Agent      string
	ConfigHash string
	// Config is the agent's config as the caller records it (JSON), stored
	// as is.
	Config  []byte
	Input   string
	Initial core.State
	// ParentID and ParentStep record, for a fork, the run and step it was
	// forked from. The fork has its own copy of the message log.
	ParentID   string
	ParentStep int
	// Owner, when set, creates the run with its lease held by Owner for
	// LeaseTTL (CreateRun returns it); otherwise the run is created free.
	Owner    string
	LeaseTTL time.Duration
}

// RunInfo describes a stored run.
type RunInfo struct {
	ID         string
	Agent      string
	ConfigHash string
	// Config is the agent config the run is driven by now: the last
	// agent change's (see AgentChanges), else StartConfig.
	Config []byte
	// StartConfig is the agent config the run started with.
	StartConfig []byte
	Input       string
	Status      Status
	Created     time.Time // UTC
	Updated     time.Time // UTC
	// Answer is the answer of a completed run: its last turn's.
	Answer string
	// FailCode is why a failed run failed.
	FailCode core.FailCode
	// Reason is the failure reason of a failed run, or the reason given to
	// SetStatus (for example why a run was interrupted).
	Reason     string
	ParentID   string
	ParentStep int
	// LastSeq is the sequence number of the last step; Steps counts the
	// steps, step 0 included (LastSeq+1).
	LastSeq int
	Steps   int
	// Lease is the run's lease as stored: Owner is empty when no driver
	// holds it, and an expired one is not held (Lease.Live).
	Lease Lease
	// RetryAt is, for a stalled run, when the next attempt may start.
	RetryAt time.Time
	// StallAttempts counts the run's stalls in a row: set with each stall
	// (StatusChange.StallAttempts), kept while the run is retried, reset
	// to 0 when the run makes progress (a checkpoint that changes its
	// status, or SetStatus running with 0). The shell's stall backoff
	// grows with it.
	StallAttempts int
	// CancelReason, when not empty, is a cancellation someone requested
	// (Runs.RequestCancel) for the run's driver to act on at its next step.
	CancelReason string
	// Turns counts the user messages the run has taken: its input (or the
	// user messages of the history it started from) and every step whose
	// result is a core.UserMessage.
	Turns int
	// Posted counts the messages ever posted to the run (Runs.PostMessage;
	// the number of the last): a driver that saw it grow since it last
	// looked reads the inbox.
	Posted int
	// TakeOvers are the operators' forced take-overs of the run's lease,
	// oldest first, one line each: when, the new holder, the holder taken
	// over, and why (see LeaseRequest.Forced).
	TakeOvers []string
}

// Orphaned reports whether the run is marked running while no live lease
// holds it: its driver died (a process on another host may still be alive
// past its lease; the shell also checks processes on this host).
func (ri RunInfo) Orphaned(now time.Time) bool {
	return ri.Status == StatusRunning && !ri.Lease.Live(now)
}

// Filter selects runs for ListRuns. Zero fields select everything.
type Filter struct {
	Status Status
	// Statuses selects runs with any of these statuses (with Status, any
	// of them or Status).
	Statuses []Status
	Agent    string
	// Parent, when set, selects the forks of that run.
	Parent string
	// Limit caps the number of runs returned (0: no cap).
	Limit int
	// Before, when set, selects only the runs that come after this one in
	// the listing order (newest first): the cursor of the next page.
	Before *Cursor
	// WithConfig reads each run's Config and StartConfig (whole agent
	// sources); a listing leaves them empty otherwise, so that listing runs
	// costs what it shows, not what their agent files weigh (Run reads
	// them for one run).
	WithConfig bool
}

// Cursor is a position in the listing order of runs (ListRuns): the run
// that ended the previous page.
type Cursor struct {
	Created time.Time
	ID      string
}

// CursorOf is the cursor just after r.
func CursorOf(r RunInfo) *Cursor { return &Cursor{Created: r.Created, ID: r.ID} }

// StatusChange is a status set outside a checkpoint (SetStatus).
type StatusChange struct {
	Status Status
	// Reason says why (why a run was interrupted, why it stalled).
	Reason string
	// RetryAt is, for a stalled run, when the next attempt may start
	// (zero: at once).
	RetryAt time.Time
	// StallAttempts is the run's stall count to record (RunInfo.StallAttempts).
	// For StatusStalled it is this stall's number in a row, 0 meaning one
	// more than the count stored; for StatusRunning and
	// StatusAwaitingToolResults it is the count to keep (0 resets it: the
	// run made progress); StatusInterrupted keeps the stored count.
	StallAttempts int
}

// Checkpoint is one step to append to a run.
type Checkpoint struct {
	// Seq must be the run's last sequence number plus one.
	Seq int
	// Result is the outcome of the previous step's action that led to this
	// step; nil after step 0, or when the same state was stepped again.
	Result core.Result
	// Action is this step's decision; Action.Next() is the state stored.
	Action core.Action
	// Delivered is the number of the inbox message (Runs.PostMessage)
	// this step folds in, whose result is then that core.UserMessage; 0
	// for none. The checkpoint removes it from the inbox.
	Delivered int
	// Release gives the lease up with the step when the step ends the
	// run (completed, failed or cancelled), in the same transaction, as
	// Runs.Release would after it: one write where there were two. A
	// completion that a waiting message keeps running keeps its lease
	// (Runs.CheckpointStatus says which); any other step ignores it.
	Release bool
}

// InboxMessage is a user message posted to a run (Runs.PostMessage) and
// not folded into it yet.
type InboxMessage struct {
	// N numbers the run's posted messages from 1, in the order posted.
	N       int
	Content string
	Posted  time.Time // UTC
}

// StepRecord is one stored step.
type StepRecord struct {
	Seq int
	// Action is the step's decision; nil for step 0. Its Next() is State.
	Action core.Action
	// Result is the outcome of the previous step's action that led here;
	// nil when there is none.
	Result core.Result
	// State is the state at this step, exactly as it was checkpointed: its
	// core.EncodeState bytes equal those of the state saved. Its Messages
	// may share their array with the states of other loads and of Steps
	// (capped at their length, so appending copies them): read-only.
	State   core.State
	Created time.Time // UTC
}

// IntentState is how far a recorded tool call got.
type IntentState string

// Intent states. A call of a step's request with no intent never started; a
// started one without an outcome was in flight when the process stopped.
const (
	IntentStarted   IntentState = "started"
	IntentCompleted IntentState = "completed"
)

// Intent is a tool call recorded before it ran, with its outcome once known.
type Intent struct {
	CallID string
	Tool   string
	Args   []byte
	State  IntentState
	// Result is the outcome; nil while the call is started.
	Result    *core.ToolResult
	Started   time.Time // UTC
	Completed time.Time // UTC; zero while started
}

// AgentChange is a change of the agent a run is driven by (resume --agent):
// from the step after Seq on, the run follows Config.
type AgentChange struct {
	// Seq is the run's last step when the change was made.
	Seq     int
	Created time.Time // UTC
	Config  []byte
}
