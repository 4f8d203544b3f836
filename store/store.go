package store

import (
	"context"
	"io"
	"time"

	"github.com/stepwise-agent/stepwise/core"
)

// Store is what the shell and the CLI need from persistence: runs, their
// steps, leases, side-effect intents, agent changes, export and import, and
// the agents' memory. store/sqlite and store/postgres implement it; a third
// backend passes store/storetest. Every method is safe for concurrent use.
type Store interface {
	Runs
	Memory
	// Close releases the store. Records already returned stay valid.
	Close() error
}

// Runs stores runs. Every write that belongs to driving a run takes the
// run's lease and is refused with ErrLeaseLost, writing nothing, once
// another driver took the run over.
type Runs interface {
	// CreateRun stores a new run (status running) and its step 0, the
	// initial state, and returns its lease when r.Owner is set (else a
	// zero Lease). An id already stored is ErrExists; a fork's parent run
	// and step must exist (ErrNotFound).
	CreateRun(ctx context.Context, r NewRun) (Lease, error)

	// Acquire takes the run's lease for req.Owner, for req.TTL: a live
	// lease of another holder is refused with a *BusyError (ErrBusy) unless
	// req.TakeOver names exactly that holder; a lease is not re-entrant.
	// Each acquisition increments the run's fencing token.
	Acquire(ctx context.Context, runID string, req LeaseRequest) (Lease, error)
	// Renew extends a held lease to ttl from now (ErrLeaseLost when it is
	// no longer the run's; an expired one no one took is renewed).
	Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// Release gives the lease up (ErrLeaseLost, changing nothing, when it
	// is no longer the run's).
	Release(ctx context.Context, l Lease) error
	// Claim takes the lease of one runnable run for a worker: a run marked
	// running that no live lease holds (new, or its driver died), or a
	// stalled run whose retry time has come; the oldest first. Several
	// workers, in one process or many, claim different runs. ErrNotFound
	// when none is runnable.
	Claim(ctx context.Context, req LeaseRequest) (Lease, error)

	// Checkpoint appends a step in one transaction: the action, the result
	// that led to it and the state (Action.Next()), and sets the run's
	// status from the action (StatusOf), except that a run whose inbox
	// holds messages is left running rather than completed. It writes
	// nothing when cp.Seq is not the next sequence number (ErrSeq), when
	// the state's messages do not extend the stored log (ErrNotAppend),
	// when the run has ended (ErrEnded: failed, cancelled, or completed
	// unless cp.Result is a core.UserMessage, which goes on with the
	// conversation, or a core.Cancelled, which closes it), when
	// cp.Delivered is not the oldest message of the inbox (ErrConflict),
	// or when l is not the run's lease (ErrLeaseLost). A step whose result
	// is a core.UserMessage counts a turn (RunInfo.Turns). What it writes
	// is proportional to what the step added.
	Checkpoint(ctx context.Context, l Lease, cp Checkpoint) error
	// CheckpointStatus is Checkpoint, returning the status the step left
	// the run in: StatusOf(cp.Action), or StatusRunning for a completion
	// that a message waiting in the inbox kept running. A driver reads
	// the inbox after a completion only then: a message posted after the
	// step made the run running for a worker to claim (PostMessage).
	CheckpointStatus(ctx context.Context, l Lease, cp Checkpoint) (Status, error)
	// RequestCancel records that the run should end cancelled, with reason
	// (not empty): for a run another process drives, whose driver sees the
	// request (RunInfo.CancelReason) and ends the run at its next step. It
	// needs no lease. ErrEnded when the run has ended, ErrNotFound when
	// there is no such run.
	RequestCancel(ctx context.Context, runID, reason string) error
	// PostMessage durably queues a user message for the run, in its inbox,
	// and returns the message's number (1, 2, ... in the order posted; two
	// racing posts get different numbers). It needs no lease. A completed
	// run (one that answered and waits for the user) becomes running, for
	// a driver to claim and fold the message in; a run at work keeps its
	// status, and its driver folds the message in at a step boundary
	// (Checkpoint.Delivered). ErrNotFound when there is no such run;
	// ErrEnded, storing nothing, when the run failed or was cancelled.
	PostMessage(ctx context.Context, runID, content string) (int, error)
	// Inbox returns the run's posted messages not folded in yet, oldest
	// first (none for an unknown run).
	Inbox(ctx context.Context, runID string) ([]InboxMessage, error)
	// SetStatus sets a status outside a checkpoint (interrupted, stalled,
	// awaiting_tool_results for a re-issued pause, running). An ended run's
	// status cannot change (ErrEnded).
	SetStatus(ctx context.Context, l Lease, ch StatusChange) error
	// ChangeAgent records that the run is driven by config from its next
	// step on; RunInfo.Config becomes config.
	ChangeAgent(ctx context.Context, l Lease, config []byte) error

	// RecordIntent durably records that call is about to run for step seq
	// (the step whose action requested it). The same call again is a
	// no-op; another tool or arguments for its id is ErrConflict.
	RecordIntent(ctx context.Context, l Lease, seq int, call core.ToolCall) error
	// RecordOutcome records the outcome of a call whose intent was
	// recorded (ErrNotFound otherwise). The same outcome again is a no-op;
	// another is ErrConflict.
	RecordOutcome(ctx context.Context, l Lease, seq int, res core.ToolResult) error
	// RetractIntent removes the intent of a call that has no outcome (an
	// operator established it did not run); one with an outcome is
	// ErrConflict.
	RetractIntent(ctx context.Context, l Lease, seq int, callID string) error
	// Intents returns the intents recorded for step seq, in the order they
	// were recorded.
	Intents(ctx context.Context, runID string, seq int) ([]Intent, error)

	// Run describes the run (ErrNotFound).
	Run(ctx context.Context, runID string) (RunInfo, error)
	// AgentChanges returns the run's agent changes in the order made.
	AgentChanges(ctx context.Context, runID string) ([]AgentChange, error)
	// LoadLatest returns the run's last step.
	LoadLatest(ctx context.Context, runID string) (StepRecord, error)
	// LoadStep returns step seq of the run (ErrNotFound).
	LoadStep(ctx context.Context, runID string, seq int) (StepRecord, error)
	// Steps calls fn with every step of the run in order, from one
	// snapshot; it stops at the first error fn returns and returns it.
	Steps(ctx context.Context, runID string, fn func(StepRecord) error) error
	// StepsFrom is Steps from step from on (none when from is past the
	// last step), reading only what those steps need.
	StepsFrom(ctx context.Context, runID string, from int, fn func(StepRecord) error) error
	// ListRuns returns the runs f selects, newest first (by creation time,
	// then by id). Their Config and StartConfig are empty unless
	// f.WithConfig.
	ListRuns(ctx context.Context, f Filter) ([]RunInfo, error)

	// Export writes the run as one portable file (see doc.go). The same
	// run exports to the same bytes from every store.
	Export(ctx context.Context, runID string, w io.Writer) error
	// Import reads a file written by Export, checking every record before
	// it writes anything, and stores the run under the id it carries
	// (ErrExists when taken); it returns the id.
	Import(ctx context.Context, r io.Reader) (string, error)
}

// Memory is the agents' long-term memory: a graph per namespace of
// entities (unique by name, with ordered observations) and typed relations.
type Memory interface {
	// MemorySearch is a full-text search of the namespace's entities, best
	// first: a free-text query whose words are searched for (quotes,
	// operators and wildcards are never syntax).
	// ns core.AllNamespaces ("*") searches every namespace (memory_search
	// with global: true).
	MemorySearch(ctx context.Context, ns, query string, limit int) ([]core.MemoryHit, error)
	// MemoryCreate upserts entities (new observations appended) and
	// relations; a relation to an entity not stored yet creates it bare.
	MemoryCreate(ctx context.Context, ns string, entities []core.Entity, relations []core.Relation) (core.MemoryCreated, error)
	// MemoryTraverse returns the entities reachable from from by relations
	// of type relation (any when empty), up to depth hops, breadth first.
	MemoryTraverse(ctx context.Context, ns, from, relation string, depth int) (core.MemoryTraversed, error)
}
