package shell

import (
	"context"
	"io"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// Store is what the runner needs from persistence. store.SQLite implements
// it; a second backend only has to implement this interface. Every write
// that belongs to driving a run takes the run's lease and is refused with
// store.ErrLeaseLost, writing nothing, once another driver took the run
// over (see store.Lease).
type Store interface {
	CreateRun(ctx context.Context, r store.NewRun) (store.Lease, error)
	Acquire(ctx context.Context, runID string, req store.LeaseRequest) (store.Lease, error)
	Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error)
	Release(ctx context.Context, l store.Lease) error

	Checkpoint(ctx context.Context, l store.Lease, cp store.Checkpoint) error
	SetStatus(ctx context.Context, l store.Lease, ch store.StatusChange) error
	ChangeAgent(ctx context.Context, l store.Lease, config []byte) error

	RecordIntent(ctx context.Context, l store.Lease, seq int, call core.ToolCall) error
	RecordOutcome(ctx context.Context, l store.Lease, seq int, res core.ToolResult) error
	RetractIntent(ctx context.Context, l store.Lease, seq int, callID string) error
	Intents(ctx context.Context, runID string, seq int) ([]store.Intent, error)

	Run(ctx context.Context, runID string) (store.RunInfo, error)
	AgentChanges(ctx context.Context, runID string) ([]store.AgentChange, error)
	LoadLatest(ctx context.Context, runID string) (store.StepRecord, error)
	LoadStep(ctx context.Context, runID string, seq int) (store.StepRecord, error)
	Steps(ctx context.Context, runID string, fn func(store.StepRecord) error) error
	ListRuns(ctx context.Context, f store.Filter) ([]store.RunInfo, error)

	Export(ctx context.Context, runID string, w io.Writer) error
	Import(ctx context.Context, r io.Reader) (string, error)

	MemorySearch(ctx context.Context, ns, query string, limit int) ([]core.MemoryHit, error)
	MemoryCreate(ctx context.Context, ns string, entities []core.Entity, relations []core.Relation) (core.MemoryCreated, error)
	MemoryTraverse(ctx context.Context, ns, from, relation string, depth int) (core.MemoryTraversed, error)

	Close() error
}

var _ Store = (*store.SQLite)(nil)
